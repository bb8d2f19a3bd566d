"""Command output: keep the head and tail of a stream of any size; make any bytes safe text."""

from __future__ import annotations

import re

# Terminal escape sequences (colours, cursor moves) and control characters other than tab,
# newline and carriage return mean nothing to a model and break some JSON and database consumers.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def clean_text(data: bytes) -> str:
    """Bytes as printable text: invalid UTF-8 replaced, escape sequences and NULs removed."""
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    return _CONTROL.sub("", _ANSI.sub("", text))


def cut_notice(cut: int) -> str:
    """What a reader sees where output was cut."""
    return f"\n[... {cut} bytes of output cut ...]\n"


class CappedOutput:
    """Collects a stream, holding at most `head` bytes from its start and `tail` from its end."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0

    def write(self, data: bytes) -> None:
        """Append a chunk; memory stays bounded however much is written."""
        self._total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data or not self._tail_limit:
            return
        self._tail += data
        # Trim lazily, at twice the limit, so a stream of small chunks costs amortised O(1).
        if len(self._tail) > 2 * self._tail_limit:
            del self._tail[: -self._tail_limit]

    @property
    def cut(self) -> int:
        """How many bytes from the middle are not kept."""
        return self._total - len(self._head) - min(len(self._tail), self._tail_limit)

    def text(self) -> str:
        """The kept output as text, with a notice where the middle was cut."""
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail_limit else b""
        if not self.cut:
            return clean_text(bytes(self._head) + tail)
        return clean_text(bytes(self._head)) + cut_notice(self.cut) + clean_text(tail)
