"""Copying a checkout into a sandbox's workspace, and the agent's changes back into the checkout.

The checkout is trusted and the workspace is not: when the run ends, it holds whatever the agent,
and any process it left running, wrote there. So the way back goes through `worker.tree_files`
(no link ever followed, only regular files and links), takes nothing under a `.git` directory,
gives files back their owner, and leaves alone any file the user changed during the run.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from worker.tree_files import (
    Entry,
    Owner,
    Refused,
    delete,
    entry,
    install,
    opened,
    parent_of,
    parts_of,
)

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256 * 1024 * 1024
"""Largest file taken back from the workspace: a runaway process must not fill the user's disk."""

Snapshot = dict[str, Entry]
"""What was copied into the workspace, by path."""


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


def copy_in(checkout: Path, paths: list[str], workspace: Path) -> Snapshot:
    """Copy those of the checkout's files that exist into the workspace; returns what it copied."""
    snapshot: Snapshot = {}
    for path in paths:
        try:
            parts = parts_of(path)
            with opened(checkout, parts) as source:
                if source is None:  # deleted from the work tree, or a submodule's directory
                    continue
                with parent_of(workspace, parts, make=(0o755, None)) as parent:
                    mode = stat.S_IMODE(source.mode)
                    snapshot[path] = install(parent, parts[-1], source, mode, None, None)
        except (OSError, Refused) as error:
            log.warning("%s is not copied into the sandbox: %s", path, _why(error))
    return snapshot


def copy_back(
    workspace: Path, checkout: Path, snapshot: Snapshot, new: list[str], owner: Owner | None
) -> Changes:
    """Apply the workspace's differences from `snapshot` (and its `new` files) to the checkout.

    Files keep their owner; new files and directories get `owner` (None: this process's).
    """
    if not workspace.is_dir():
        # Read as "every file deleted", a vanished workspace would empty the checkout.
        raise FileNotFoundError(f"the sandbox's workspace {workspace} is gone")
    changes = Changes()
    todo = _differences(workspace, checkout, snapshot, sorted(set(snapshot) | set(new)), changes)
    for path, after in sorted(todo, key=lambda item: item[1] is not None):  # deletions first
        try:
            if after is None:
                delete(checkout, parts_of(path))
                changes.deleted.append(path)
            elif _write_back(workspace, checkout, parts_of(path), owner):
                changes.added.append(path)
            else:
                changes.changed.append(path)
        except (OSError, Refused) as error:
            changes.skipped.append((path, _why(error)))
    return changes


def _differences(
    workspace: Path, checkout: Path, snapshot: Snapshot, paths: list[str], changes: Changes
) -> list[tuple[str, Entry | None]]:
    """(path, the workspace's entry or None when deleted) of each file the agent changed."""
    todo = []
    for path in paths:
        try:
            parts = parts_of(path)
            after = entry(workspace, parts, MAX_FILE_BYTES)
            before = snapshot.get(path)
            if after == before:
                continue
            if entry(checkout, parts) != before:
                raise Refused("it changed in the checkout during the run")
            todo.append((path, after))
        except (OSError, Refused) as error:
            changes.skipped.append((path, _why(error)))
    return todo


def _write_back(workspace: Path, checkout: Path, parts: list[str], owner: Owner | None) -> bool:
    """Put the workspace's file into the checkout; True when the checkout had no file there."""
    umask = _umask()
    with opened(workspace, parts) as source:
        if source is None:
            raise Refused("it disappeared from the workspace")
        with parent_of(checkout, parts, make=(0o777 & ~umask, owner)) as parent:
            try:
                old = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            mode = _mode(old, bool(source.mode & stat.S_IXUSR), umask)
            keep = (old.st_uid, old.st_gid) if old else owner
            install(parent, parts[-1], source, mode, keep, MAX_FILE_BYTES)
    return old is None


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
