"""The file editor tool: view, create, str_replace, insert and undo_edit through a sandbox."""

from __future__ import annotations

import posixpath
import shlex
from typing import Any

from sandbox.base import Sandbox

SNIPPET_LINES = 4
"""Lines shown either side of an edit."""
MAX_LISTING = 400
"""Most entries shown when viewing a directory."""


class EditError(Exception):
    """An edit that could not be made (files are left as they were); the message says why."""


def numbered(text: str, first: int = 1) -> str:
    """The text with right-aligned line numbers, like `cat -n`."""
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(text.split("\n"), first))


class FileEditor:
    """Edits files in a sandbox, keeping each file's earlier versions so edits can be undone."""

    def __init__(self, sandbox: Sandbox, max_view_chars: int = 12_000) -> None:
        self.sandbox = sandbox
        self.max_view_chars = max_view_chars
        self._history: dict[str, list[bytes | None]] = {}

    def __call__(self, args: dict[str, Any]) -> str:
        """Run one editor command; raises `EditError` with a message for the model."""
        commands = {
            "view": self.view,
            "create": self.create,
            "str_replace": self.str_replace,
            "insert": self.insert,
            "undo_edit": self.undo_edit,
        }
        command = commands.get(args.get("command", ""))
        if command is None:
            raise EditError(f"unknown command {args.get('command')!r}: use one of {list(commands)}")
        return command(self._path(args["path"]), args)

    def _path(self, path: str) -> str:
        # Relative to the workspace, not to wherever the model's shell has `cd`-ed to.
        return posixpath.normpath(posixpath.join(self.sandbox.workspace, path))

    def view(self, path: str, args: dict[str, Any]) -> str:
        try:
            data = self._read(path)
        except EditError:
            # Sandboxes report a directory differently (IsADirectoryError, or a failed `head`).
            if self.sandbox.run(shlex.join(["test", "-d", path])).exit_code == 0:
                return self._listing(path)
            raise
        lines = _text(data, path).removesuffix("\n").split("\n")
        view_range = args.get("view_range") or [1, -1]
        if len(view_range) != 2 or not all(type(n) is int for n in view_range):
            raise EditError("view_range must be two line numbers: [first, last]")
        start, end = view_range
        end = len(lines) if end == -1 else end
        if not 1 <= start <= max(end, 1) or end > len(lines):
            raise EditError(
                f"view_range must be within 1..{len(lines)} (or end -1), got {[start, end]}"
            )
        shown, size = [], 0
        for number in range(start, end + 1):
            shown.append(f"{number:6}\t{lines[number - 1]}")
            size += len(shown[-1]) + 1
            if size > self.max_view_chars:
                shown[-1] = f"[lines {number}-{end} not shown: use view_range to see them]"
                break
        return "\n".join(shown)

    def create(self, path: str, args: dict[str, Any]) -> str:
        text = _required(args, "file_text")
        old = self._read(path, missing_ok=True)
        self._write(path, text.encode(), old)
        verb = "Created" if old is None else "Overwrote"
        return f"{verb} {path} ({len(text.splitlines())} lines)."

    def str_replace(self, path: str, args: dict[str, Any]) -> str:
        old_str, new_str = _required(args, "old_str"), args.get("new_str") or ""
        if not old_str:
            raise EditError("old_str is empty: give the exact text to replace")
        data = self._read(path)
        text = _text(data, path)
        count = text.count(old_str)
        if count == 0:
            raise EditError(
                f"old_str does not occur in {path}; nothing changed. View the file and copy "
                "the exact text, whitespace and indentation included."
            )
        if count > 1:
            lines = _line_numbers(text, old_str)
            raise EditError(
                f"old_str occurs {count} times in {path} (lines {lines}); nothing changed. "
                "Include more surrounding lines to make it unique."
            )
        at = text.index(old_str)
        self._write(path, text.replace(old_str, new_str).encode(), data)
        return self._snippet(path, text.replace(old_str, new_str), at, new_str)

    def insert(self, path: str, args: dict[str, Any]) -> str:
        new_str, after = _required(args, "new_str"), args.get("insert_line")
        data = self._read(path)
        lines = _text(data, path).splitlines(keepends=True)
        if not isinstance(after, int) or not 0 <= after <= len(lines):
            raise EditError(f"insert_line must be a line number from 0 to {len(lines)}")
        if after and not lines[after - 1].endswith("\n"):
            lines[after - 1] += "\n"
        lines.insert(after, new_str if new_str.endswith("\n") else new_str + "\n")
        text = "".join(lines)
        self._write(path, text.encode(), data)
        return self._snippet(path, text, len("".join(lines[:after])), new_str)

    def undo_edit(self, path: str, args: dict[str, Any]) -> str:
        versions = self._history.get(path)
        if not versions:
            raise EditError(f"no edit of {path} to undo")
        previous = versions.pop()
        if previous is None:
            self.sandbox.run(shlex.join(["rm", "-f", "--", path]))
            return f"Undid the creation of {path}: it is gone again."
        self.sandbox.write_file(path, previous)
        return f"Undid the last edit of {path}:\n{numbered(_text(previous, path))}"

    def _read(self, path: str, missing_ok: bool = False) -> bytes | None:
        try:
            return self.sandbox.read_file(path)
        except FileNotFoundError:
            if missing_ok:
                return None
            raise EditError(f"{path} does not exist") from None
        except IsADirectoryError:
            raise EditError(f"{path} is a directory") from None
        except OSError as exc:
            raise EditError(f"cannot read {path}: {exc.strerror or exc}") from None

    def _write(self, path: str, data: bytes, previous: bytes | None) -> None:
        try:
            self.sandbox.write_file(path, data)
        except OSError as exc:
            raise EditError(f"cannot write {path}: {exc.strerror or exc}") from None
        self._history.setdefault(path, []).append(previous)

    def _listing(self, path: str) -> str:
        command = ["find", path, "-maxdepth", "2", "-not", "-path", "*/.*"]
        entries = sorted(self.sandbox.run(shlex.join(command)).output.splitlines())
        listing = "\n".join(entries[:MAX_LISTING])
        if len(entries) > MAX_LISTING:
            listing += f"\n[{len(entries) - MAX_LISTING} more entries not shown]"
        return (
            f"Files and directories up to 2 levels deep in {path}, hidden ones excluded:\n{listing}"
        )

    def _snippet(self, path: str, text: str, at: int, new_str: str) -> str:
        line = text.count("\n", 0, at)
        lines = text.split("\n")
        first = max(0, line - SNIPPET_LINES)
        last = line + new_str.count("\n") + SNIPPET_LINES + 1
        shown = numbered("\n".join(lines[first:last]), first + 1)
        return f"Edited {path}. Around the change:\n{shown}\nCheck it is as intended."


def _required(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise EditError(f"this command needs `{name}` (a string)")
    return value


def _text(data: bytes | None, path: str) -> str:
    try:
        return (data or b"").decode("utf-8")
    except UnicodeDecodeError:
        raise EditError(f"{path} is not UTF-8 text: use bash to inspect or change it") from None


def _line_numbers(text: str, needle: str) -> list[int]:
    numbers, start = [], text.find(needle)
    while start != -1:
        numbers.append(text.count("\n", 0, start) + 1)
        start = text.find(needle, start + 1)
    return numbers
