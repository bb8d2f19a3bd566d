"""A process inside a container, driven over Docker's attach socket: stdin in, framed output out."""

from __future__ import annotations

import select
import socket
import struct
import time

from docker import APIClient

from sandbox.shell import ShellExited

_HEADER = struct.Struct(">BxxxL")  # stream (1 stdout, 2 stderr), 3 padding bytes, payload size
_STDERR = 2


class FrameDecoder:
    """Turns Docker's multiplexed stream (8-byte header, then payload) back into bytes.

    stdout comes back from `feed`; stderr is collected in `stderr` (a bash that ran
    `exec 2>&1` sends everything as stdout).
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.stderr = bytearray()

    def feed(self, data: bytes) -> bytes:
        """The stdout bytes completed by `data`; partial frames wait for the next call."""
        self._buffer += data
        stdout = bytearray()
        while len(self._buffer) >= _HEADER.size:
            stream, size = _HEADER.unpack_from(self._buffer)
            available = min(size, len(self._buffer) - _HEADER.size)
            payload = self._buffer[_HEADER.size : _HEADER.size + available]
            (self.stderr if stream == _STDERR else stdout).extend(payload)
            if available < size:
                # Hand on what there is of a long frame now; the rest keeps a shrunk header.
                del self._buffer[_HEADER.size : _HEADER.size + available]
                _HEADER.pack_into(self._buffer, 0, stream, size - available)
                break
            del self._buffer[: _HEADER.size + size]
        return bytes(stdout)


class DockerExec:
    """One `docker exec` with stdin attached and output (stderr merged by the shell) read back."""

    def __init__(self, api: APIClient, container: str, command: list[str]) -> None:
        self._api = api
        self.exec_id = api.exec_create(
            container, command, stdin=True, stdout=True, stderr=True, tty=False
        )["Id"]
        attached = api.exec_start(self.exec_id, socket=True)
        # Keep the wrapper referenced: it holds the HTTP response that owns the connection.
        self._attached = attached
        self._socket: socket.socket = getattr(attached, "_sock", attached)
        self._decoder = FrameDecoder()

    def send(self, data: bytes) -> None:
        try:
            self._socket.sendall(data)
        except OSError as error:
            raise ShellExited(f"cannot write to the shell: {error}") from None

    def read(self, timeout: float) -> bytes:
        """Output that arrived within `timeout`, or b""; ShellExited when the process is gone."""
        deadline = time.monotonic() + timeout
        while True:
            pending = getattr(self._socket, "pending", lambda: 0)()  # TLS buffers hide from select
            left = deadline - time.monotonic()
            if not pending and not select.select([self._socket], [], [], max(left, 0))[0]:
                return b""
            try:
                raw = self._socket.recv(65536)
            except OSError as error:
                raise ShellExited(f"the shell's stream broke: {error}") from None
            if not raw:
                raise ShellExited("the shell's stream ended")
            if payload := self._decoder.feed(raw):
                return payload
            if left <= 0:
                return b""

    @property
    def stderr(self) -> bytes:
        """What the process wrote to stderr so far."""
        return bytes(self._decoder.stderr)

    def read_all(self) -> bytes:
        """stdout until the process ends (for short commands that end by themselves)."""
        chunks = []
        try:
            while True:
                chunks.append(self.read(1.0))
        except ShellExited:
            return b"".join(chunks)

    def close_stdin(self) -> None:
        """Signal end of input; the process sees EOF on stdin."""
        self._socket.shutdown(socket.SHUT_WR)

    def exit_code(self) -> int | None:
        for _ in range(20):
            info = self._api.exec_inspect(self.exec_id)
            if not info["Running"]:
                return info["ExitCode"]
            time.sleep(0.05)
        return None

    def close(self) -> None:
        try:
            self._socket.close()
        finally:
            self._attached.close()
