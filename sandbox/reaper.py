"""The reaper: removes sandboxes whose job is gone, stale idle ones, and orphaned slot directories.

A worker that crashes (or is SIGKILLed) mid-job leaves its container running and its workspace
on disk. The reaper finds them by label, asks `job_alive` (which the worker backs with rq and
Redis) about each owner, and removes what belongs to no live job. It only ever touches
containers and slots of its own instance.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import docker
from docker.models.containers import Container

from sandbox import container
from sandbox.config import SandboxConfig
from sandbox.slots import REAPER, Slot, slots

log = logging.getLogger(__name__)

STARTING_GRACE_S = 120.0
"""How long a slot may go without a container (or an idle container without being marked
ready) before the reaper takes it for the remains of a crash rather than a start in progress."""


def reap(
    client: docker.DockerClient,
    config: SandboxConfig,
    job_alive: Callable[[str], bool],
    now: float | None = None,
) -> list[str]:
    """Remove this instance's dead sandboxes and return the ids of the containers removed.

    Dead are: containers whose job `job_alive` says is gone (or whose slot directory is),
    idle pool containers older than `config.pool_max_idle_s` (so a new image reaches the pool)
    or never marked ready, slot directories that no container uses, and workspace volumes
    whose container is gone (their changes were taken before it went).
    """
    now = now or time.time()
    label = f"{container.INSTANCE}={config.instance}"
    # Only containers a sandbox of this instance made: they all carry a slot label.
    found = [
        c
        for c in client.containers.list(all=True, filters={"label": label})
        if c.labels.get(container.SLOT)
    ]
    removed = []
    for candidate in found:
        slot = Slot(config.slot_root / config.instance / candidate.labels[container.SLOT])
        if _is_dead(candidate, slot, job_alive, config, now):
            container.remove(client, candidate.id)
            slot.remove()
            removed.append(candidate.id)
    in_use = {c.labels[container.SLOT] for c in found if c.id not in removed}
    for slot in slots(config.slot_root, config.instance):
        if slot.name not in in_use and slot.age_s(now) > STARTING_GRACE_S:
            slot.remove()
    container.remove_volumes(client, config.instance)
    if removed:
        log.info("reaped %d sandbox containers", len(removed))
    return removed


def _is_dead(
    candidate: Container,
    slot: Slot,
    job_alive: Callable[[str], bool],
    config: SandboxConfig,
    now: float,
) -> bool:
    """Whether a container belongs to nobody alive; idle ones are claimed so no job gets them."""
    if not slot.path.is_dir():
        return True  # its workspace is gone: nothing can use it
    owner = slot.owner()
    if owner == "":
        return False  # a claim is being written this very moment
    if owner == REAPER:
        return True  # a reaper claimed it and did not finish
    if owner is not None:
        return not _alive(job_alive, owner)
    age = now - float(candidate.labels.get(container.CREATED) or 0)
    unready = slot.ready() is None and age > STARTING_GRACE_S
    return (age > config.pool_max_idle_s or unready) and slot.claim(REAPER)


def _alive(job_alive: Callable[[str], bool], job_id: str) -> bool:
    """Ask about a job; when the answer cannot be had, keep its sandbox."""
    try:
        return job_alive(job_id)
    except Exception:
        log.exception("cannot tell whether job %s is alive: keeping its sandbox", job_id)
        return True
