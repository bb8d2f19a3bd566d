"""The warm pool: started idle containers, claimed by jobs in milliseconds and never reused.

The pool's state lives in the engine (containers with labels) and on disk (slot directories,
see `sandbox.slots`), never in Python memory, because rq runs every job in its own forked
process: any number of processes may acquire and refill at once.
"""

from __future__ import annotations

import fcntl
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import docker
from docker.errors import APIError, NotFound

from sandbox import container
from sandbox.config import SandboxConfig
from sandbox.docker_sandbox import DockerSandbox
from sandbox.shell import ShellExited
from sandbox.slots import REAPER, Slot, slots

log = logging.getLogger(__name__)


class WarmPool:
    """A `SandboxProvider` keeping `config.pool_size` started containers ready per config.

    The worker calls `refill()` at start-up and after each `acquire()` (in the background,
    see `refill_in_background`). `acquire` never fails for want of an idle container: it
    falls back to a cold start.
    """

    def __init__(self, client: docker.DockerClient, config: SandboxConfig) -> None:
        self._client = client
        self._config = config
        self.key = container.pool_key(config)

    def acquire(self, job_id: str) -> DockerSandbox:
        """A started sandbox with an empty workspace for `job_id`: warm if one is idle, or cold."""
        if job_id in ("", REAPER):
            raise ValueError(f"not a job id: {job_id!r}")
        started = time.perf_counter()
        sandbox, how = self._claim_idle(job_id), "warm"
        if sandbox is None:
            sandbox, how = DockerSandbox.create(self._client, self._config, job_id), "cold"
        elapsed_ms = (time.perf_counter() - started) * 1000
        log.info("sandbox for job %s: %s start in %.0f ms", job_id, how, elapsed_ms)
        return sandbox

    def _claim_idle(self, job_id: str) -> DockerSandbox | None:
        """The first idle sandbox this process manages to claim and start a shell in."""
        for slot in self.idle():
            ready = slot.ready()
            if ready is None or not slot.claim(job_id):
                continue  # another process was faster
            try:
                return self._attach(slot, ready.container, job_id)
            except (APIError, OSError, ShellExited) as error:
                log.warning("idle sandbox %s is unusable (%s): removing it", slot.name, error)
                container.remove(self._client, ready.container)
                slot.remove()
        return None

    def idle(self) -> list[Slot]:
        """Slots whose started container waits for a job, oldest first, of this configuration."""
        root, instance = self._config.slot_root, self._config.instance
        return [
            slot
            for slot in slots(root, instance)
            if slot.owner() is None and (ready := slot.ready()) and ready.key == self.key
        ]

    def refill(self) -> int:
        """Start idle containers until `pool_size` wait; returns how many were started."""
        started = 0
        with self._refill_lock():
            for _ in range(self._config.pool_size - len(self.idle())):
                self._start_idle()
                started += 1
        return started

    def refill_in_background(self) -> threading.Thread:
        """`refill()` in a daemon thread, so that the job that just acquired need not wait."""
        thread = threading.Thread(
            target=self._refill_logged, name="wrench-pool-refill", daemon=True
        )
        thread.start()
        return thread

    def _attach(self, slot: Slot, container_id: str, job_id: str) -> DockerSandbox:
        # The name shows the job in `docker ps`; labels cannot change after creation.
        name = container.container_name(self._config, slot, job_id)
        self._client.api.rename(container_id, name)
        return DockerSandbox(self._client, self._config, container_id, slot)

    def _start_idle(self) -> None:
        config = self._config
        slot = Slot.create(config.slot_root, config.instance)
        try:
            started = container.start(self._client, config, slot, job_id="", key=self.key)
        except BaseException:
            slot.remove()
            raise
        slot.mark_ready(started.id, self.key)

    def _refill_logged(self) -> None:
        try:
            self.refill()
        except (APIError, NotFound, OSError):
            log.exception("refilling the sandbox pool failed")

    @contextmanager
    def _refill_lock(self) -> Iterator[None]:
        """One refill at a time per instance across processes, so the pool does not overshoot."""
        directory = self._config.slot_root / self._config.instance
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(directory.parent / f".{self._config.instance}.refill.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
