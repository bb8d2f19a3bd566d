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
    with _directory(root, parts[:-1], create=None) as parent:
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
    with _directory(root, parts[:-1], create=owner) as parent:
        fd = _open(parts[-1], flags, parent)
    with os.fdopen(fd, "wb") as file:
        _require_regular(file.fileno())
        file.truncate(0)
        file.write(data)
        if os.geteuid() == 0:
            os.fchown(file.fileno(), *owner)


@contextmanager
def _directory(root: Path, parts: list[str], create: tuple[int, int] | None) -> Iterator[int]:
    """A descriptor of root/parts, walked without links; missing ones made when `create`."""
    fd = os.open(root, _DIRECTORY)
    try:
        for part in parts:
            if create is not None:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    if os.geteuid() == 0:
                        os.chown(part, *create, dir_fd=fd, follow_symlinks=False)
                except FileExistsError:
                    pass
            child = _open(part, _DIRECTORY, fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


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
