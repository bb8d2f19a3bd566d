"""Reading and writing workspace files from the host without ever following the sandbox's links.

The worker runs as root on the host and the workspace is writable by untrusted code, which can
plant a symlink such as `setup.py -> /etc/shadow`. Paths are therefore walked one component at
a time from a directory descriptor with O_NOFOLLOW, so no symlink is ever followed, and the
final file must be a regular file. Anything this refuses (a symlink, `..`, a FIFO) raises
UnsafePath, and the caller goes through the container instead, where a link resolves inside
the sandbox and can reach nothing of the host.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

READ_LIMIT = 64 * 1024 * 1024
"""Largest file read_file returns: a sandbox must not make the worker load gigabytes."""
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_REFUSED = (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EMLINK)


class UnsafePath(Exception):
    """The host cannot serve this path without following a link: use the container."""


def workspace_parts(path: str, workspace: str) -> list[str] | None:
    """The components of `path` below `workspace`, or None when it lies outside or uses `..`."""
    absolute = posixpath.join(workspace, path)
    if ".." in absolute.split("/"):
        return None
    normal = posixpath.normpath(absolute)
    if normal != workspace and not normal.startswith(workspace + "/"):
        return None
    return [part for part in normal[len(workspace) :].split("/") if part]


def read_beneath(root: Path, parts: list[str]) -> bytes:
    """The bytes of the regular file root/parts, no link followed."""
    if not parts:
        raise IsADirectoryError(str(root))
    with _directory(root, parts[:-1], None) as parent:
        fd = _open(parts[-1], os.O_RDONLY | os.O_NONBLOCK, parent)
    with os.fdopen(fd, "rb") as file:
        _require_regular(file.fileno())
        data = file.read(READ_LIMIT + 1)
    if len(data) > READ_LIMIT:
        raise OSError(errno.EFBIG, f"larger than {READ_LIMIT} bytes", "/".join(parts))
    return data


def write_beneath(root: Path, parts: list[str], data: bytes, owner: tuple[int, int]) -> None:
    """Create or replace root/parts (and missing parents) owned by `owner`, no link followed."""
    if not parts:
        raise IsADirectoryError(str(root))
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK
    with _directory(root, parts[:-1], (0o755, owner)) as parent:
        fd = _open(parts[-1], flags, parent)
    with os.fdopen(fd, "wb") as file:
        _require_regular(file.fileno())
        file.truncate(0)
        file.write(data)
        if os.geteuid() == 0:
            os.fchown(file.fileno(), *owner)


Owner = tuple[int, int]


def open_beneath(root: Path, parts: list[str], make: tuple[int, Owner | None] | None = None) -> int:
    """A descriptor of the directory root/parts, walked one component at a time without
    following links (UnsafePath where one is a link or not a directory). With `make`
    (mode, owner), missing directories are created, given to `owner` (None: this process)."""
    fd = os.open(root, _DIRECTORY)
    try:
        for part in parts:
            if make is not None:
                _mkdir(fd, part, *make)
            child = _open(part, _DIRECTORY, fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def _directory(
    root: Path, parts: list[str], make: tuple[int, Owner | None] | None
) -> Iterator[int]:
    fd = open_beneath(root, parts, make)
    try:
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


def _open(name: str, flags: int, dir_fd: int) -> int:
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in _REFUSED:
            raise UnsafePath(f"{name}: {error.strerror}") from None
        raise


def _require_regular(fd: int) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise UnsafePath("not a regular file")
