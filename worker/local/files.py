"""Files beneath a directory, reached from directory descriptors without ever following a link.

For the user's checkout, which `wrench run` reads from and writes the agent's changes into:
every component is opened with O_NOFOLLOW, so a link in a path can never take a write (or a
read) outside the tree; only regular files and links are read, a FIFO is never waited on, and
a file is replaced by renaming a finished copy over it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CHUNK = 1024 * 1024
_FILE = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LINKED = (errno.ELOOP, errno.ENOTDIR)
Owner = tuple[int, int]


class Refused(Exception):
    """This path cannot be used without following a link or leaving the tree; says why."""


@dataclass(frozen=True)
class Entry:
    """One file as git sees it: a link, or a regular file and whether it is executable."""

    link: bool
    executable: bool
    digest: str
    """SHA-256 of the file's bytes or of the link's target."""


@dataclass
class Source:
    """A file opened without following links: a link's target, or an open regular file."""

    mode: int
    target: str | None = None
    file: BinaryIO | None = None


def parts_of(path: str) -> list[str]:
    """The components of a relative path, refused when it could reach outside or into `.git`."""
    if path.endswith("/"):
        raise Refused("a nested git repository")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise Refused("not a plain relative path")
    if ".git" in parts:
        raise Refused("inside a .git directory")
    return parts


def entry(root: Path, parts: list[str], limit: int | None = None) -> Entry | None:
    """What root/parts holds as git sees it; None when no file or link is there."""
    with opened(root, parts) as source:
        return None if source is None else _copy(source, limit)


def delete(root: Path, parts: list[str]) -> None:
    """Remove root/parts, then the directories that removal left empty."""
    with parent_of(root, parts) as parent:
        os.unlink(parts[-1], dir_fd=parent)
    for depth in range(len(parts) - 1, 0, -1):
        try:
            with parent_of(root, parts[:depth]) as parent:
                os.rmdir(parts[depth - 1], dir_fd=parent)
        except OSError:
            return  # not empty: neither are the ones above


def install(
    parent: int, name: str, source: Source, mode: int, owner: Owner | None, limit: int | None
) -> Entry:
    """Put `source` at parent/name: written beside it, then renamed over what was there."""
    temp = f".{name[:200]}.wrench-{secrets.token_hex(4)}"
    try:
        if source.target is not None:
            os.symlink(source.target, temp, dir_fd=parent)
            copied = _copy(source, limit)
        else:
            with os.fdopen(os.open(temp, _NEW, 0o600, dir_fd=parent), "wb") as out:
                copied = _copy(source, limit, out)
                os.fchmod(out.fileno(), mode)
        if owner is not None and os.geteuid() == 0:
            os.chown(temp, *owner, dir_fd=parent, follow_symlinks=False)
        os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=parent)
        raise
    return copied


def _copy(source: Source, limit: int | None, sink: BinaryIO | None = None) -> Entry:
    """The source's entry, its bytes copied to `sink` on the way; Refused past `limit` bytes."""
    digest = hashlib.sha256()
    if source.target is not None:
        digest.update(os.fsencode(source.target))
        return Entry(link=True, executable=False, digest=digest.hexdigest())
    assert source.file is not None
    size = 0
    while chunk := source.file.read(CHUNK):
        size += len(chunk)
        if limit is not None and size > limit:
            raise Refused(f"larger than {_size(limit)}")
        digest.update(chunk)
        if sink is not None:
            sink.write(chunk)
    return Entry(False, bool(source.mode & stat.S_IXUSR), digest.hexdigest())


def _size(count: int) -> str:
    return f"{count // 2**20} MiB" if count >= 2**20 else f"{count} bytes"


@contextmanager
def opened(root: Path, parts: list[str]) -> Iterator[Source | None]:
    """root/parts as a link or an open regular file; None when nothing git tracks is there
    (no such file, a directory, or a path through a link, which git sees as a file)."""
    try:
        with parent_of(root, parts) as parent:
            source = _open_at(parent, parts[-1])
    except (FileNotFoundError, Refused):
        source = None
    try:
        yield source
    finally:
        if source is not None and source.file is not None:
            source.file.close()


def _open_at(parent: int, name: str) -> Source | None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return Source(info.st_mode, target=os.readlink(name, dir_fd=parent))
    if stat.S_ISDIR(info.st_mode):
        return None
    try:
        file = os.fdopen(os.open(name, _FILE, dir_fd=parent), "rb")
    except OSError as error:
        if error.errno in _LINKED:
            raise OSError(error.errno, "it changed while it was being read") from None
        raise
    info = os.fstat(file.fileno())
    if not stat.S_ISREG(info.st_mode):  # a FIFO or a device: never read (or wait) on one
        file.close()
        raise OSError(errno.EINVAL, "not a regular file or a link")
    return Source(info.st_mode, file=file)


@contextmanager
def parent_of(
    root: Path, parts: list[str], make: tuple[int, Owner | None] | None = None
) -> Iterator[int]:
    """A descriptor of the directory holding root/parts, walked one component at a time
    without following links (Refused where one is a link or not a directory); with `make`
    (mode, owner: None for this process), missing directories are created."""
    fd = os.open(root, _DIRECTORY)
    try:
        for part in parts[:-1]:
            if make is not None:
                _mkdir(fd, part, *make)
            try:
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            except OSError as error:
                if error.errno not in _LINKED:
                    raise
                raise Refused(f"{part}: a link or a file, not a directory") from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _mkdir(parent: int, name: str, mode: int, owner: Owner | None) -> None:
    try:
        os.mkdir(name, mode, dir_fd=parent)
    except FileExistsError:
        return
    if owner is not None and os.geteuid() == 0:
        os.chown(name, *owner, dir_fd=parent, follow_symlinks=False)
