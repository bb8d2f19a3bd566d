"""A persistent bash driven over a byte stream: one command at a time, ended by a random marker.

Each command travels as `eval $'<escaped bytes>' </dev/null`: the command cannot read the
protocol from stdin, an unterminated quote is only an eval syntax error, and `cd`, `export` and
`source venv/bin/activate` persist because everything runs in the one shell. After the command
the shell prints `\\x1e<token>:<status>` and snapshots its cwd and exported variables into a
state file. A command that runs past its timeout is aborted as a whole: its processes and the
shell are killed, and a fresh shell restores the snapshot taken before the command.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from sandbox.base import ExecResult
from sandbox.output import CappedOutput

log = logging.getLogger(__name__)

# Bytes that may appear unescaped inside $'...'; everything else travels as \xHH.
_PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,/:=+@%")
_STARTUP_TIMEOUT_S = 30.0
# After a kill, background jobs may hold the stream open: stop waiting for its end after this.
_DRAIN_S = 0.5

SHELL_ENV = {
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    # Nothing can answer a prompt: fail fast instead of waiting for the timeout.
    "GIT_TERMINAL_PROMPT": "0",
    "PIP_NO_INPUT": "1",
    "DEBIAN_FRONTEND": "noninteractive",
}
"""The whole environment of a shell besides PATH and HOME: never anything from the host."""


class ShellExited(Exception):
    """The shell's stream ended: the shell exited (e.g. the command ran `exit`) or was killed."""


class ShellTransport(Protocol):
    """A byte pipe to one running bash, whose stdout and stderr arrive as one stream."""

    def send(self, data: bytes) -> None:
        """Write to the shell's stdin."""
        ...

    def read(self, timeout: float) -> bytes:
        """The next bytes of output, or b"" when none came within `timeout`; ShellExited at end."""
        ...

    def exit_code(self) -> int | None:
        """The shell's exit status once it has ended, if known."""
        ...

    def close(self) -> None:
        """Let go of the shell; it exits when its stdin closes."""
        ...


class ShellHost(Protocol):
    """Where shells run: starts them and kills process trees inside the same pid namespace."""

    def open_shell(self) -> ShellTransport:
        """Start a fresh `bash --noprofile --norc` with stdin and merged output attached."""
        ...

    def kill_tree(self, pid: int, since_file: str) -> None:
        """SIGKILL the shell `pid` and its descendants started since the time in `since_file`."""
        ...


@dataclass(frozen=True)
class ShellFiles:
    """Where a shell keeps its bookkeeping: a directory it can write, outside the workspace."""

    directory: str

    @property
    def state(self) -> str:
        """The snapshot of cwd and exported variables, sourced by a replacement shell."""
        return f"{self.directory}/.wrench-shell-state"

    @property
    def started(self) -> str:
        """/proc/uptime as the current command started, so a kill spares older processes."""
        return f"{self.directory}/.wrench-command-started"


def quote(data: bytes) -> str:
    """`data` as one bash ANSI-C quoted word, immune to any quoting inside it."""
    return "$'" + "".join(chr(b) if b in _PLAIN else f"\\x{b:02x}" for b in data) + "'"


def command_line(command: str, token: str, files: ShellFiles) -> bytes:
    """The line that runs `command`, reports its status after the marker, then snapshots state."""
    body = command.replace("\x00", "").encode("utf-8", errors="surrogateescape")
    # Redirections apply left to right: stderr goes first, so a missing /tmp stays silent.
    # The line starts with a simple command: after an eval syntax error, bash 5.2 fails to
    # parse a `{` at the very start of the next line.
    stamp = f"read -r __wrench_t0 _ </proc/uptime; echo $__wrench_t0 2>/dev/null >{files.started}"
    report = f"printf '\\036%s:%d\\n' {token} $?"
    snapshot = f"{{ printf 'cd -- %q\\n' \"$PWD\"; export -p; }} 2>/dev/null >{files.state}"
    return f"{stamp}; eval {quote(body)} </dev/null; {report}; {snapshot}\n".encode()


def startup_line(pid_token: str, ready_token: str, files: ShellFiles | None) -> bytes:
    """The first line a shell gets: merge stderr, report its pid, restore a snapshot if given."""
    restore = f"[ -r {files.state} ] && source {files.state} >/dev/null 2>&1; " if files else ""
    report = "printf '\\036%s:%d\\n' {} {}"
    return (
        f"exec 2>&1; {report.format(pid_token, '$$')}; {restore}{report.format(ready_token, 0)}\n"
    ).encode()


class MarkerReader:
    """Splits a stream into output (to a CappedOutput) and the marker line that ends it."""

    def __init__(self, token: str, output: CappedOutput) -> None:
        self.marker = b"\x1e" + token.encode() + b":"
        self.output = output
        self._pending = b""
        self.leftover = b""

    def feed(self, chunk: bytes) -> int | None:
        """Consume a chunk; the number after the marker once the marker line is complete."""
        data = self._pending + chunk
        at = data.find(self.marker)
        if at < 0:
            # Hold back what could be the start of a marker split across chunks.
            keep = len(self.marker) - 1
            self.output.write(data[:-keep])
            self._pending = data[-keep:]
            return None
        self.output.write(data[:at])
        end = data.find(b"\n", at)
        if end < 0:
            self._pending = data[at:]
            return None
        self._pending = b""
        self.leftover = data[end + 1 :]
        number = data[at + len(self.marker) : end]
        return int(number) if number.lstrip(b"-").isdigit() else -1

    def flush(self) -> None:
        """Hand held-back bytes to the output: the stream ended without a marker."""
        self.output.write(self._pending)
        self._pending = b""


class PersistentShell:
    """Runs commands in one long-lived bash, replaced (state restored) when it must be killed."""

    def __init__(
        self,
        host: ShellHost,
        files: ShellFiles,
        head: int,
        tail: int,
        restore_timeout_s: float = 10.0,
    ) -> None:
        self._host = host
        self._restore_timeout_s = restore_timeout_s
        self._files = files
        self._head, self._tail = head, tail
        self._lock = threading.Lock()
        self._transport: ShellTransport | None = None
        self._pid = 0
        self._leftover = b""

    def start(self) -> None:
        """Start (or replace) the shell, restoring the last snapshot of its state.

        The snapshot lives where commands can write; if sourcing it hangs, the shell is
        killed and started again without it rather than leaving the sandbox unusable.
        """
        if not self._start(restore=True):
            log.warning("restoring the shell's state hung: starting it without")
            self._host.kill_tree(self._pid, self._files.started)
            self._start(restore=False)

    def _start(self, restore: bool) -> bool:
        """Open a shell and learn its pid; whether it finished restoring in time."""
        if self._transport:
            self._transport.close()
        self._transport = self._host.open_shell()
        pid_token, ready_token = secrets.token_hex(8), secrets.token_hex(8)
        files = self._files if restore else None
        self._transport.send(startup_line(pid_token, ready_token, files))
        ignored = CappedOutput(0, 0)
        first = MarkerReader(pid_token, ignored)
        pid = self._read_to_marker(first, time.monotonic() + _STARTUP_TIMEOUT_S)
        if pid is None:
            raise ShellExited(f"the shell did not start within {_STARTUP_TIMEOUT_S:.0f} s")
        self._pid, self._leftover = pid, b""
        ready = MarkerReader(ready_token, ignored)
        if ready.feed(first.leftover) is not None:
            return True
        return self._read_to_marker(ready, time.monotonic() + self._restore_timeout_s) is not None

    def run(self, command: str, timeout: float) -> ExecResult:
        """Run one command; past `timeout` it is killed and the shell replaced, state restored."""
        with self._lock:
            if self._transport is None:
                self.start()
            return self._run(command, timeout)

    def close(self) -> None:
        """Let the shell go."""
        if self._transport:
            self._transport.close()
            self._transport = None

    def _run(self, command: str, timeout: float) -> ExecResult:
        assert self._transport is not None
        started = time.monotonic()
        token = secrets.token_hex(8)
        output = CappedOutput(self._head, self._tail)
        output.write(self._leftover + self._background_output())
        reader = MarkerReader(token, output)
        self._transport.send(command_line(command, token, self._files))
        try:
            status = self._read_to_marker(reader, started + timeout)
            timed_out = status is None
            if timed_out:
                self._interrupt(reader)
        except ShellExited:
            timed_out, status = False, self._transport.exit_code()
            reader.flush()
            self.start()
        self._leftover = reader.leftover
        return ExecResult(
            output=output.text(),
            exit_code=None if timed_out else status,
            timed_out=timed_out,
            truncated_bytes=output.cut,
            duration_s=time.monotonic() - started,
        )

    def _background_output(self) -> bytes:
        """What background jobs wrote since the last command; restarts a shell that died then.

        Without this check, a shell killed between commands (from outside, or by a background
        job) would be taken for one that the next command ended.
        """
        assert self._transport is not None
        try:
            return self._transport.read(0)
        except ShellExited:
            log.info("the shell (pid %s) died between commands: replacing it", self._pid)
            self.start()
            return b""

    def _interrupt(self, reader: MarkerReader) -> None:
        """Kill the shell and what the command started; a fresh shell restores the snapshot.

        Killing only the command's processes would let the rest of its list run on (after
        `sleep 99; rm -rf build` times out, `rm` would still run), and a builtin loop has no
        process to kill, so the shell goes too. Background jobs of earlier commands survive:
        only processes started within the command's lifetime are killed.
        """
        self._host.kill_tree(self._pid, self._files.started)
        self._drain(reader, time.monotonic() + _DRAIN_S)
        reader.flush()
        self.start()

    def _drain(self, reader: MarkerReader, deadline: float) -> None:
        """Collect what the killed command wrote before it died, until the stream ends."""
        assert self._transport is not None
        try:
            while (left := deadline - time.monotonic()) > 0:
                if chunk := self._transport.read(min(left, 0.1)):
                    reader.feed(chunk)
        except ShellExited:
            pass

    def _read_to_marker(self, reader: MarkerReader, deadline: float) -> int | None:
        """Feed the reader until its marker line arrives (the status) or the deadline (None)."""
        assert self._transport is not None
        while (left := deadline - time.monotonic()) > 0:
            chunk = self._transport.read(min(left, 1.0))
            if chunk and (status := reader.feed(chunk)) is not None:
                return status
        return None
