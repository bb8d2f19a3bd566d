"""The hardened container a sandbox runs in: its options, its labels, starting and removing it."""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any

import docker
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from sandbox.base import WORKSPACE
from sandbox.config import SandboxConfig
from sandbox.image import PATH
from sandbox.shell import SHELL_ENV
from sandbox.slots import Slot

HOME = "/home/sandbox"
INSTANCE, JOB, CREATED, SLOT, POOL = (
    "wrench.instance",
    "wrench.job",
    "wrench.created",
    "wrench.slot",
    "wrench.pool",
)
"""Container labels: the instance namespace, the job (empty while pooled), creation time (unix
seconds), the slot directory's name, and the pool key (empty for a cold start)."""


def environment(config: SandboxConfig) -> dict[str, str]:
    """The container's entire environment: fixed, never copied from the host."""
    return {**SHELL_ENV, "PATH": PATH, "HOME": HOME, "USER": "sandbox"}


def options(config: SandboxConfig) -> dict[str, Any]:
    """Keyword arguments for `containers.create`, minus name and labels: the hardening lives here.

    The workspace is an anonymous volume that the engine creates with the container and removes
    with it: no host directory is mounted, so the engine may as well run on another machine."""
    memory = config.memory
    tmpfs = f"size={config.tmp_size},mode=1777,exec,nosuid,nodev"
    home = f"size={config.tmp_size},mode=0755,uid={config.uid},gid={config.gid},exec,nosuid,nodev"
    return {
        "image": config.image,
        "command": ["sleep", "infinity"],
        "init": True,  # docker-init reaps orphans, so killed trees leave no zombies
        "user": f"{config.uid}:{config.gid}",
        "environment": environment(config),
        "working_dir": WORKSPACE,
        "hostname": "sandbox",
        "network_mode": "bridge" if config.network else "none",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "tmpfs": {"/tmp": tmpfs, HOME: home},
        # No host path inside, ever (nor the Docker socket): files travel through the API.
        "mounts": [workspace_volume({})],
        "mem_limit": memory,
        "memswap_limit": memory,  # equal to the memory limit: no swap to escape into
        "nano_cpus": int(config.cpus * 1e9),
        "pids_limit": config.pids_limit,
        "ipc_mode": "private",
        # No core dumps: they would land in the workspace. (nofile stays the engine's: raising
        # it above dockerd's own hard limit makes the start fail.)
        "ulimits": [docker.types.Ulimit(name="core", soft=0, hard=0)],
        # The host's OOM killer should pick a runaway sandbox before anything of the host.
        "oom_score_adj": 500,
        "runtime": config.runtime,
    }


def workspace_volume(labels: dict[str, str]) -> docker.types.Mount:
    """The workspace: a volume the engine creates with the container, labelled so that it can
    be removed on its own once the container is gone."""
    return docker.types.Mount(target=WORKSPACE, source=None, type="volume", labels=labels)


def pool_key(config: SandboxConfig) -> str:
    """Hash of everything that shapes a container: idle ones only serve the same configuration."""
    shape = options(config)
    shape["ulimits"] = [dict(u) for u in shape["ulimits"]]
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:12]


def container_name(config: SandboxConfig, slot: Slot, job_id: str = "") -> str:
    """`wrench-<instance>-<slot>`, or with `-job-<job id>` once a job has it, for `docker ps`."""
    job = re.sub(r"[^a-zA-Z0-9_.-]", "_", job_id)[:64]
    return f"wrench-{config.instance}-{slot.name}" + (f"-job-{job}" if job else "")


def start(
    client: docker.DockerClient, config: SandboxConfig, slot: Slot, job_id: str, key: str
) -> Container:
    """Create and start the slot's container; pooled when `key` is set, else for `job_id`."""
    labels = {
        INSTANCE: config.instance,
        JOB: job_id,
        CREATED: str(int(time.time())),
        SLOT: slot.name,
        POOL: key,
    }
    name = container_name(config, slot, job_id)
    shaped = options(config) | {
        "mounts": [workspace_volume({INSTANCE: config.instance, SLOT: slot.name})]
    }
    created = client.containers.create(name=name, labels=labels, **shaped)
    try:
        created.start()
    except Exception:
        remove(client, created.id)
        raise
    return created


def remove(client: docker.DockerClient, container_id: str, volumes: bool = True) -> None:
    """Kill and remove a container, with its workspace volume unless told not to (deleting a
    big workspace takes the engine a while; `remove_volumes` can do it later); fine if gone."""
    _quietly(lambda: client.api.remove_container(container_id, force=True, v=volumes))


def remove_volumes(client: docker.DockerClient, instance: str, slot: str | None = None) -> int:
    """Remove the instance's workspace volumes no container uses (of one slot, if given)."""
    filters = {"label": [f"{INSTANCE}={instance}"] + ([f"{SLOT}={slot}"] if slot else [])}
    found = client.api.volumes(filters={**filters, "dangling": True})["Volumes"] or []
    for volume in found:
        _quietly(lambda name=volume["Name"]: client.api.remove_volume(name))
    return len(found)


def _quietly(action) -> None:
    """Run a removal; gone already, or being removed by another process, is fine."""
    try:
        action()
    except NotFound:
        pass
    except APIError as error:
        # Two removers racing (close and the reaper): the engine says removal is in progress.
        if error.status_code != 409:
            raise
