"""Copying a checkout into a sandbox, and the agent's changes back into the checkout.

The checkout is trusted and the sandbox is not. The way in is an archive of the files the
checkout would hand to git. The way back is a checked `ChangeSet`, taken out only after every
process in the sandbox was stopped, applied through `worker.local.files` (no link ever
followed): files keep their owner, a file the user changed during the run is left alone, and a
new path the checkout ignores (a `.pth` dropped into a git-ignored virtualenv, say) is refused
and set aside for the user to look at, never written where their tools would run it.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from sandbox.boundary import Change, ChangeSet, WorkspaceArchive
from worker.local.files import (
    Entry,
    Owner,
    Refused,
    Source,
    delete,
    entry,
    install,
    opened,
    parent_of,
    parts_of,
)

log = logging.getLogger(__name__)

Snapshot = dict[str, Entry]
"""What was copied into the sandbox, by path."""
IGNORED = "new, and your checkout ignores it (saved in {saved}: copy it yourself if you want it)"
IGNORED_LINK = "a new link to `{target}`, and your checkout ignores it"


@dataclass
class Changes:
    """What copying back did to the checkout."""

    changed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(path, why) of each change of the agent's that was not applied."""

    def applied(self) -> list[str]:
        return sorted(self.changed + self.added + self.deleted)


@dataclass(frozen=True)
class Destination:
    """Where the changes go and what decides about new paths."""

    checkout: Path
    owner: Owner | None
    """Owner of new files and directories (None: this process's)."""
    ignored: Callable[[list[str]], set[str]]
    """Which of these new paths the checkout's own ignore rules ignore."""
    set_aside: Path
    """A private directory where refused new files are saved for the user to look at."""


def copy_in(checkout: Path, paths: list[str], archive: WorkspaceArchive) -> Snapshot:
    """Add those of the checkout's files that exist to the archive; returns what it added."""
    snapshot: Snapshot = {}
    for path in paths:
        try:
            with opened(checkout, parts_of(path)) as source:
                if source is None:  # deleted from the work tree, or a submodule's directory
                    continue
                snapshot[path] = _archived(archive, path, source)
        except (OSError, Refused) as error:
            log.warning("%s is not copied into the sandbox: %s", path, _why(error))
    return snapshot


def _archived(archive: WorkspaceArchive, path: str, source: Source) -> Entry:
    if source.target is not None:
        archive.link(path, source.target)
        return _entry(Change(path, os.fsencode(source.target), link=True))
    assert source.file is not None
    reader = _Hashing(source.file)
    executable = bool(source.mode & stat.S_IXUSR)
    archive.file(path, reader, os.fstat(source.file.fileno()).st_size, executable)
    return Entry(False, executable, reader.digest.hexdigest())


def copy_back(changes: ChangeSet, snapshot: Snapshot, to: Destination) -> Changes:
    """Apply the change set's differences from `snapshot` to the checkout."""
    result = Changes(skipped=list(changes.refused))
    todo = [c for c in changes.changes if _entry(c) != snapshot.get(c.path)]
    new = [c.path for c in todo if c.path not in snapshot and c.content is not None]
    ignored = to.ignored(new) if new else set()
    for change in sorted(todo, key=lambda c: c.content is not None):  # deletions first
        try:
            if change.path in ignored:
                raise Refused(_set_aside(change, to.set_aside))
            _apply(change, snapshot.get(change.path), to, result)
        except (OSError, Refused) as error:
            result.skipped.append((change.path, _why(error)))
    return result


def _apply(change: Change, before: Entry | None, to: Destination, result: Changes) -> None:
    parts = parts_of(change.path)
    if entry(to.checkout, parts) != before:
        raise Refused("it changed in the checkout during the run")
    if change.content is None:
        delete(to.checkout, parts)
        result.deleted.append(change.path)
    elif _write(change, to.checkout, parts, to.owner):
        result.added.append(change.path)
    else:
        result.changed.append(change.path)


def _write(change: Change, checkout: Path, parts: list[str], owner: Owner | None) -> bool:
    """Put the change into the checkout; True when the checkout had no file there."""
    umask = _umask()
    with parent_of(checkout, parts, make=(0o777 & ~umask, owner)) as parent:
        try:
            old = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        mode = _mode(old, change.executable, umask)
        keep = (old.st_uid, old.st_gid) if old else owner
        install(parent, parts[-1], _source(change), mode, keep, None)
    return old is None


def _set_aside(change: Change, directory: Path) -> str:
    """Save a refused new file where nothing runs it; says where, for the user."""
    if change.link:
        return IGNORED_LINK.format(target=os.fsdecode(change.content or b""))
    parts = parts_of(change.path)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    with parent_of(directory, parts, make=(0o700, None)) as parent:
        install(parent, parts[-1], _source(change), 0o600, None, None)
    return IGNORED.format(saved=directory / change.path)


def _source(change: Change) -> Source:
    assert change.content is not None
    if change.link:
        return Source(stat.S_IFLNK, target=os.fsdecode(change.content))
    mode = stat.S_IFREG | (0o755 if change.executable else 0o644)
    return Source(mode, file=io.BytesIO(change.content))


def _entry(change: Change) -> Entry | None:
    """The change as `worker.local.files` describes what a path holds."""
    if change.content is None:
        return None
    digest = hashlib.sha256(change.content).hexdigest()
    return Entry(change.link, change.executable and not change.link, digest)


def _mode(old: os.stat_result | None, executable: bool, umask: int) -> int:
    """The old file's permissions (or the umask's) with the executable bits git would set."""
    if old is None or not stat.S_ISREG(old.st_mode):
        base = 0o666 & ~umask
    else:
        base = stat.S_IMODE(old.st_mode) & 0o666
    return base | ((base & 0o444) >> 2) if executable else base


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _why(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)


class _Hashing:
    """A file read once for the archive and hashed on the way, as `Entry` describes it."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        chunk = self._file.read(size)
        self.digest.update(chunk)
        return chunk
