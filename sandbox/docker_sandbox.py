"""DockerSandbox: the persistent shell in a hardened container, over a host workspace directory."""

from __future__ import annotations

import errno
import logging
import os
import time

import docker
from docker.errors import APIError

from sandbox import container
from sandbox.base import WORKSPACE, ExecResult
from sandbox.config import SandboxConfig
from sandbox.files import READ_LIMIT, UnsafePath, read_beneath, workspace_parts, write_beneath
from sandbox.process_tree import kill_command
from sandbox.shell import PersistentShell, ShellFiles
from sandbox.slots import Slot
from sandbox.stream import DockerExec

log = logging.getLogger(__name__)

_SHELL = ["bash", "--noprofile", "--norc"]
# In-container file access, for paths the host must not serve itself. Arguments, never a
# formatted command: the path is $1. `timeout` because the path may be a FIFO nobody feeds.
_CAT = ["timeout", "60", "head", "-c", str(READ_LIMIT + 1), "--"]
_WRITE = ["timeout", "60", "sh", "-c", 'mkdir -p -- "${1%/*}/" && cat > "$1"', "wrench-write"]
_KILL_ATTEMPTS = 5


class DockerSandbox:
    """A sandbox in its own container, which is removed with its workspace on `close()`.

    Get one from `WarmPool.acquire(job_id)` (or `DockerSandbox.create` for a cold start),
    clone the repository into `host_workspace` on the host, call `adopt_workspace()`, then
    hand it to the agent. Host-side git on that directory needs `-c safe.directory=*`
    because its files belong to the sandbox user, not to the worker.
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
        self.host_workspace = slot.workspace
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
        slot = Slot.create(config.workspace_root, config.instance, config.uid, config.gid)
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
        """A file's bytes: workspace files straight from the host, others through the container."""
        parts = workspace_parts(path, WORKSPACE)
        if parts is not None:
            try:
                return read_beneath(self.host_workspace, parts)
            except UnsafePath:
                pass
        data = self._exec_bytes([*_CAT, self._absolute(path)], stdin=None)
        if len(data) > READ_LIMIT:
            raise OSError(errno.EFBIG, f"larger than {READ_LIMIT} bytes", path)
        return data

    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a file as the sandbox user; links are followed only inside."""
        parts = workspace_parts(path, WORKSPACE)
        if parts is not None:
            try:
                return write_beneath(self.host_workspace, parts, data, self._owner)
            except UnsafePath:
                pass
        self._exec_bytes([*_WRITE, self._absolute(path)], stdin=data)

    def adopt_workspace(self) -> None:
        """Give the host workspace (cloned by root) to the sandbox user, links untouched.

        Walks with directory descriptors and changes links themselves, never their targets,
        so a link in the repository cannot make the worker chown a host file.
        """
        if os.geteuid() != 0:
            return  # files already belong to the worker's user, which should be config.uid
        os.chown(self.host_workspace, *self._owner, follow_symlinks=False)
        for _, directories, files, fd in os.fwalk(self.host_workspace, follow_symlinks=False):
            for name in directories + files:
                os.chown(name, *self._owner, dir_fd=fd, follow_symlinks=False)

    def close(self) -> None:
        """Remove the container and its slot (workspace included); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._shell.close()
        container.remove(self._client, self.container_id)
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

    @property
    def _owner(self) -> tuple[int, int]:
        return self._config.uid, self._config.gid

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
            error = FileNotFoundError if "No such file" in message else OSError
            raise error(f"{command[-1]}: {message or f'exit status {status}'}")
        return output
