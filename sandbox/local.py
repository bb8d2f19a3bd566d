"""A sandbox that is no sandbox: a local bash in a directory, for development without Docker."""

from __future__ import annotations

import io
import logging
import os
import select
import shutil
import signal
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import BinaryIO

from sandbox.base import ExecResult
from sandbox.boundary import OUT_DIR, ChangeLimits, ChangeSet, ChangesRefused, collect_command
from sandbox.boundary.changes import read_changes
from sandbox.boundary.collect import COLLECT_TIMEOUT_S, FAILURES
from sandbox.config import SandboxConfig
from sandbox.process_tree import kill_command
from sandbox.shell import SHELL_ENV, PersistentShell, ShellExited, ShellFiles

log = logging.getLogger(__name__)

WARNING = (
    "LocalSandbox isolates NOTHING: commands run as this user, on this machine, with its files "
    "and network. Use it only for development, never for untrusted repositories or issues."
)


class LocalTransport:
    """The pipes of a local bash process."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin and process.stdout
        self._process = process
        self._stdin = process.stdin.fileno()
        self._stdout = process.stdout.fileno()

    def send(self, data: bytes) -> None:
        try:
            while data:
                data = data[os.write(self._stdin, data) :]
        except BrokenPipeError:
            raise ShellExited("the shell's stdin is closed") from None

    def read(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self._stdout], [], [], timeout)
        if not ready:
            return b""
        chunk = os.read(self._stdout, 65536)
        if not chunk:
            raise ShellExited("the shell's output ended")
        return chunk

    def exit_code(self) -> int | None:
        try:
            status = self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None
        return 128 - status if status < 0 else status  # killed by a signal: as bash reports it

    def close(self) -> None:
        self._process.kill()
        self._process.wait()
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe:
                pipe.close()


class LocalSandbox:
    """A persistent local bash in a directory. WARNING: it isolates nothing.

    Commands run as the calling user with its network, its files and its privileges; only the
    environment is reduced to a minimal one. It exists so that the agent loop can be developed
    and tested without Docker. Shell semantics match `DockerSandbox`: the same protocol, the same
    timeouts (descendants killed, state kept) and the same output caps.
    """

    def __init__(self, workspace: Path | None = None, config: SandboxConfig | None = None) -> None:
        log.warning(WARNING)
        self._config = config or SandboxConfig()
        self._owns_workspace = workspace is None
        self.host_workspace = Path(workspace or tempfile.mkdtemp(prefix="wrench-local-")).resolve()
        self.host_workspace.mkdir(parents=True, exist_ok=True)
        self.workspace = str(self.host_workspace)
        self.owner = (os.getuid(), os.getgid())
        self._private = Path(tempfile.mkdtemp(prefix="wrench-local-state-"))
        (self._private / "home").mkdir()
        # Every shell leads its own process group, which its background jobs keep even after
        # the shell is replaced: close() kills the groups, so nothing outlives the sandbox.
        self._groups: list[int] = []
        self._shell = PersistentShell(
            self,
            files=ShellFiles(str(self._private)),
            head=self._config.output_head_bytes,
            tail=self._config.output_tail_bytes,
        )
        self._shell.start()

    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        return self._shell.run(
            command, self._config.command_timeout_s if timeout is None else timeout
        )

    def read_file(self, path: str) -> bytes:
        return self._path(path).read_bytes()

    def write_file(self, path: str, data: bytes) -> None:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def put_workspace(self, archive: BinaryIO) -> None:
        """Unpack a tar archive of the host's own making into the workspace directory."""
        with tarfile.open(fileobj=archive, mode="r:") as tar:
            tar.extractall(self.host_workspace, filter="tar")

    def take_changes(self, base: str | None, limits: ChangeLimits) -> ChangeSet:
        """The same collection as in Docker, run here after every shell is killed."""
        self._kill_groups()
        command = collect_command(base, self.workspace)
        try:
            status = subprocess.run(command, timeout=COLLECT_TIMEOUT_S + 10, check=False)
        except subprocess.TimeoutExpired:
            raise ChangesRefused(FAILURES[124]) from None
        if status.returncode != 0:
            raise ChangesRefused(FAILURES.get(status.returncode, "collecting failed"))
        packed = io.BytesIO()
        with tarfile.open(fileobj=packed, mode="w") as tar:
            tar.add(self.host_workspace / OUT_DIR, arcname="wrench-out")
        packed.seek(0)
        return read_changes(packed, limits)

    def close(self) -> None:
        self._kill_groups()
        shutil.rmtree(self._private, ignore_errors=True)
        if self._owns_workspace:
            shutil.rmtree(self.host_workspace, ignore_errors=True)

    def _kill_groups(self) -> None:
        self._shell.close()
        for group in self._groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._groups.clear()

    def open_shell(self) -> LocalTransport:
        env = {**SHELL_ENV, "PATH": os.environ.get("PATH", os.defpath)}
        env["HOME"] = str(self._private / "home")
        process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=self.host_workspace,
            env=env,
            start_new_session=True,
        )
        self._groups.append(process.pid)
        return LocalTransport(process)

    def kill_tree(self, pid: int, since_file: str) -> None:
        subprocess.run(kill_command(pid, since_file, "session"), timeout=30, check=False)

    def _path(self, path: str) -> Path:
        return self.host_workspace / path


class LocalSandboxes:
    """A `SandboxProvider` of LocalSandboxes in fresh temporary directories. Isolates nothing."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self._config = config

    def acquire(self, job_id: str) -> LocalSandbox:
        return LocalSandbox(config=self._config)
