"""The workspace going in: a tar archive the host builds from trusted sources only.

Every entry belongs to the sandbox user, and every directory is written before what it holds
(the engine would otherwise create missing parents as root, where the sandbox user cannot
write). The archive goes to the engine's API; no host directory is mounted.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

MIB = 2**20


class WorkspaceArchive:
    """A tar archive under construction, spooled to an anonymous temporary file."""

    def __init__(self, owner: tuple[int, int]) -> None:
        self._uid, self._gid = owner
        self._file = tempfile.TemporaryFile()
        self._tar = tarfile.open(
            fileobj=self._file,
            mode="w",
            format=tarfile.GNU_FORMAT,
            errors="surrogateescape",
            copybufsize=MIB,
        )
        self._directories: set[str] = set()
        self._now = int(time.time())
        self.bytes = 0
        """Bytes of file content added so far."""

    def _info(self, path: str, kind: bytes, mode: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(path)
        info.type, info.mode, info.mtime = kind, mode, self._now
        info.uid, info.gid = self._uid, self._gid
        return info

    def directory(self, path: str, mode: int = 0o755) -> None:
        """Add a directory (and its missing parents) once."""
        if not path or path in self._directories:
            return
        self.directory(os.path.dirname(path))
        self._directories.add(path)
        self._tar.addfile(self._info(path, tarfile.DIRTYPE, mode))

    def file(self, path: str, data: BinaryIO, size: int, executable: bool = False) -> None:
        """Add a regular file of `size` bytes read from `data`."""
        self.directory(os.path.dirname(path))
        info = self._info(path, tarfile.REGTYPE, 0o755 if executable else 0o644)
        info.size = size
        self._tar.addfile(info, data)
        self.bytes += size

    def data(self, path: str, content: bytes) -> None:
        """Add a small regular file with these bytes."""
        self.file(path, io.BytesIO(content), len(content))

    def link(self, path: str, target: str) -> None:
        """Add a symbolic link; it resolves inside the sandbox, never on the host."""
        self.directory(os.path.dirname(path))
        info = self._info(path, tarfile.SYMTYPE, 0o777)
        info.linkname = target
        self._tar.addfile(info)

    def tree(self, root: Path, prefix: str, skip: Callable[[str], bool] = lambda _: False) -> None:
        """Add a directory of the host's own (a git directory) under `prefix`, links as links;
        `skip` gets each path relative to `root` and leaves out what it accepts."""
        self.directory(prefix)
        for directory, subdirectories, files in os.walk(root):
            relative = os.path.relpath(directory, root)
            base = "" if relative == "." else relative + "/"
            subdirectories[:] = [d for d in sorted(subdirectories) if not skip(base + d)]
            for name in subdirectories:
                if os.path.islink(os.path.join(directory, name)):
                    self.link(f"{prefix}/{base}{name}", os.readlink(os.path.join(directory, name)))
                else:
                    self.directory(f"{prefix}/{base}{name}")
            for name in sorted(files):
                if not skip(base + name):
                    self._host_file(os.path.join(directory, name), f"{prefix}/{base}{name}")

    def _host_file(self, source: str, path: str) -> None:
        info = os.lstat(source)
        if stat.S_ISLNK(info.st_mode):
            self.link(path, os.readlink(source))
        elif stat.S_ISREG(info.st_mode):
            with open(source, "rb") as data:
                self.file(path, data, info.st_size, bool(info.st_mode & stat.S_IXUSR))

    def finish(self) -> BinaryIO:
        """The finished archive, positioned at its start; the caller closes it."""
        self._tar.close()
        self._file.seek(0)
        return self._file
