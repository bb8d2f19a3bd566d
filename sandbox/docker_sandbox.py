"""DockerSandbox: the persistent shell in a hardened container; files go in and out as data."""

from __future__ import annotations

import errno
import logging
import tempfile
import time
from typing import BinaryIO

import docker
from docker.errors import APIError, NotFound

from sandbox import container
from sandbox.base import WORKSPACE, ExecResult
from sandbox.boundary import OUT_DIR, ChangeLimits, ChangeSet, ChangesRefused, collect_command
from sandbox.boundary.changes import MIB, read_changes
from sandbox.boundary.collect import COLLECT_TIMEOUT_S, FAILURES
from sandbox.config import SandboxConfig
from sandbox.process_tree import kill_command
from sandbox.shell import PersistentShell, ShellFiles
from sandbox.slots import Slot
from sandbox.stream import DockerExec

log = logging.getLogger(__name__)

_SHELL = ["bash", "--noprofile", "--norc"]
READ_LIMIT = 64 * MIB
"""Largest file `read_file` returns: a sandbox must not make the worker load gigabytes."""
# File access inside the container. Arguments, never a formatted command: the path is $1.
# `timeout` because the path may be a FIFO nobody feeds.
_CAT = ["timeout", "60", "head", "-c", str(READ_LIMIT + 1), "--"]
_WRITE = ["timeout", "60", "sh", "-c", 'mkdir -p -- "${1%/*}/" && cat > "$1"', "wrench-write"]
_KILL_ATTEMPTS = 5
_ERRORS = {"No such file": FileNotFoundError, "Is a directory": IsADirectoryError}
"""What the in-container tools' messages mean, as the errors a host file access would raise."""


class DockerSandbox:
    """A sandbox in its own container, which is removed with its workspace on `close()`.

    Get one from `WarmPool.acquire(job_id)` (or `DockerSandbox.create` for a cold start), put
    the workspace in with `put_workspace`, hand it to the agent, and take the changes out with
    `take_changes`, which stops every process in the container before anything is read.
    """

    workspace = WORKSPACE

    def __init__(
        self, client: docker.DockerClient, config: SandboxConfig, container_id: str, slot: Slot
    ) -> None:
        """Attach to the slot's started container and start the persistent shell in it."""
        self._client = client
        self._config = config
        self.container_id = container_id
        self.slot = slot
        self.owner = (config.uid, config.gid)
        self._closed = False
        files = ShellFiles("/tmp")
        head, tail = config.output_head_bytes, config.output_tail_bytes
        self._shell = PersistentShell(self, files, head=head, tail=tail)
        try:
            self._shell.start()
        except BaseException:
            self.close()
            raise

    @classmethod
    def create(
        cls, client: docker.DockerClient, config: SandboxConfig, job_id: str
    ) -> DockerSandbox:
        """A cold start: a new slot and container for `job_id`."""
        slot = Slot.create(config.slot_root, config.instance)
        slot.claim(job_id)
        try:
            started = container.start(client, config, slot, job_id, key="")
        except BaseException:
            slot.remove()
            raise
        return cls(client, config, started.id, slot)

    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run a command in the persistent shell (cwd and exported variables carry over)."""
        limit = self._config.command_timeout_s if timeout is None else timeout
        return self._shell.run(command, limit)

    def read_file(self, path: str) -> bytes:
        """A file's bytes, read inside the container, where any link resolves inside too."""
        data = self._exec_bytes([*_CAT, self._absolute(path)], stdin=None)
        if len(data) > READ_LIMIT:
            raise OSError(errno.EFBIG, f"larger than {READ_LIMIT} bytes", path)
        return data

    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a file as the sandbox user, inside the container."""
        self._exec_bytes([*_WRITE, self._absolute(path)], stdin=data)

    def put_workspace(self, archive: BinaryIO) -> None:
        """Unpack a tar archive into the workspace through the engine's API."""
        if not self._client.api.put_archive(self.container_id, WORKSPACE, archive):
            raise OSError(f"the engine did not unpack the workspace into {self.container_id[:12]}")

    def take_changes(self, base: str | None, limits: ChangeLimits) -> ChangeSet:
        """Collect the changes in the sandbox, stop every process in it, fetch the result as an
        archive, remove the container, and only then read what came out. (The workspace volume
        goes with `close`, after publishing: deleting a big one takes the engine a while.)"""
        status = self._collect(base)
        self._stop()
        try:
            archive = self._fetch(limits)
        finally:
            container.remove(self._client, self.container_id, volumes=False)
        with archive:
            if status != 0:
                raise ChangesRefused(FAILURES.get(status, f"collecting failed ({status})"))
            return read_changes(archive, limits)

    def _collect(self, base: str | None) -> int:
        """Run the collect script as a fresh process; its exit status (124: it ran too long).

        When it cannot run or fails (a fork bomb left behind holds every pid, say), the
        container is restarted and it runs once more: everything in the container dies with
        the restart, the workspace volume stays."""
        try:
            status = self._run_to_end(collect_command(base))
        except APIError as error:
            status, why = None, str(error)
        else:
            why = f"exit status {status}"
        if status == 0:
            return status
        log.warning("restarting %s to collect its changes (%s)", self.container_id[:12], why)
        self._client.api.restart(self.container_id, timeout=0)
        return self._run_to_end(collect_command(base))

    def _run_to_end(self, command: list[str]) -> int:
        api = self._client.api
        exec_id = api.exec_create(self.container_id, command)["Id"]
        api.exec_start(exec_id, detach=True)
        deadline = time.monotonic() + COLLECT_TIMEOUT_S + 10
        while time.monotonic() < deadline:
            info = api.exec_inspect(exec_id)
            if not info["Running"]:
                return info["ExitCode"]
            time.sleep(0.02)
        return 124

    def _stop(self) -> None:
        """Kill every process in the container (init first, so the whole pid namespace goes)."""
        api = self._client.api
        try:
            api.kill(self.container_id)
        except APIError as error:
            if error.status_code != 409:  # 409: it is not running any more
                raise
        api.wait(self.container_id, timeout=60)

    def _fetch(self, limits: ChangeLimits) -> BinaryIO:
        """The collect script's output directory as the engine archives it, spooled to an
        anonymous file, never more than the limits allow (plus room for the path lists)."""
        cap = limits.max_bytes + limits.max_paths * 3 * 4096 + 16 * MIB
        spool = tempfile.TemporaryFile()
        try:
            stream, _ = self._client.api.get_archive(self.container_id, f"{WORKSPACE}/{OUT_DIR}")
            size = 0
            for chunk in stream:
                size += len(chunk)
                if size > cap:
                    raise ChangesRefused(f"the changes are larger than {cap // MIB} MiB")
                spool.write(chunk)
        except NotFound:
            spool.close()
            raise ChangesRefused("the sandbox produced no changes archive") from None
        except BaseException:
            spool.close()
            raise
        spool.seek(0)
        return spool

    def close(self) -> None:
        """Remove the container with its workspace volume, and its slot; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._shell.close()
        container.remove(self._client, self.container_id)
        container.remove_volumes(self._client, self._config.instance, self.slot.name)
        self.slot.remove()

    def open_shell(self) -> DockerExec:
        """ShellHost: a fresh bash in the container."""
        return DockerExec(self._client.api, self.container_id, _SHELL)

    def kill_tree(self, pid: int, since_file: str) -> None:
        """ShellHost: kill the shell and its command's processes.

        The kill itself needs one process in the container. When even that cannot start
        (a fork bomb holds every pid), the container is restarted: everything in it dies,
        the workspace stays, and the new shell starts without the tmpfs snapshot.
        """
        api = self._client.api
        for attempt in range(_KILL_ATTEMPTS):
            try:
                api.exec_start(
                    api.exec_create(self.container_id, kill_command(pid, since_file, "namespace"))
                )
                return
            except APIError as error:
                log.warning("kill in %s failed: %s", self.container_id[:12], error)
                time.sleep(0.1 * (attempt + 1))
        log.warning("restarting container %s to stop its processes", self.container_id[:12])
        api.restart(self.container_id, timeout=0)

    def _absolute(self, path: str) -> str:
        return path if path.startswith("/") else f"{WORKSPACE}/{path}"

    def _exec_bytes(self, command: list[str], stdin: bytes | None) -> bytes:
        """Run a short command with `stdin`, returning its output; OSError when it fails."""
        process = DockerExec(self._client.api, self.container_id, command)
        try:
            if stdin:
                process.send(stdin)
            process.close_stdin()
            output = process.read_all()
            status = process.exit_code()
        finally:
            process.close()
        if status != 0:
            message = process.stderr.decode(errors="replace").strip()
            error = next((e for key, e in _ERRORS.items() if key in message), OSError)
            raise error(f"{command[-1]}: {message or f'exit status {status}'}")
        return output
