"""The changes coming out, second step: the collected archive, read as untrusted data.

By the time this runs, every process of the sandbox has been stopped and the bytes have come
out through the engine's API. Each path is checked before anything uses it: a path outside the
tree or inside a `.git` directory, a link whose target leaves the tree, a device file, a pipe or
a directory is refused (and listed, so people learn what was left out); too many bytes or paths
refuse the whole change set.
"""

from __future__ import annotations

import posixpath
import tarfile
from dataclasses import dataclass
from typing import BinaryIO

MIB = 2**20


class ChangesRefused(Exception):
    """Nothing can be taken out of the sandbox; the message says why, for people."""


@dataclass(frozen=True)
class ChangeLimits:
    """How much may come out of one sandbox."""

    max_bytes: int = 100 * MIB
    """Content of all changed files together."""
    max_file_bytes: int = 50 * MIB
    """Content of one file (GitHub refuses files over 100 MB)."""
    max_paths: int = 20_000
    """Changed paths."""


@dataclass(frozen=True)
class Change:
    """One path's state after the agent: its content, or None when it was deleted."""

    path: str
    content: bytes | None
    link: bool = False
    """Whether `content` is a symbolic link's target rather than a file's bytes."""
    executable: bool = False


@dataclass(frozen=True)
class ChangeSet:
    """Every checked change, and each refused path with the reason."""

    changes: tuple[Change, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()


OUTER = ("listed", "present", "deleted", "files.tar")
NESTED = "a nested git repository: its files are not taken"


def read_changes(archive: BinaryIO, limits: ChangeLimits) -> ChangeSet:
    """The change set in `archive`: the engine's tar of the collect script's output directory."""
    try:
        with tarfile.open(fileobj=archive, mode="r:") as outer:
            parts = _outer_parts(outer)
            listed = _paths(outer, parts["listed"], limits)
            present = set(_paths(outer, parts["present"], limits))
            deleted = _paths(outer, parts["deleted"], limits)
            inner_file = outer.extractfile(parts["files.tar"])
            assert inner_file is not None
            with tarfile.open(fileobj=inner_file, mode="r:", errors="surrogateescape") as inner:
                found, refused = _members(inner, present, limits)
    except (tarfile.TarError, EOFError, UnicodeDecodeError) as error:
        raise ChangesRefused(f"the sandbox's changes could not be read ({error})") from None
    changes = list(found.values())
    for path in deleted:
        if (why := path_refusal(path)) is None and path not in found:
            changes.append(Change(path, None))
        elif why:
            refused.append((path, why))
    unread = present - set(found) - {path for path, _ in refused}
    refused += [(path, "it could not be read in the sandbox") for path in sorted(unread)]
    nested = {path for path in listed if path.endswith("/")}
    refused += [(path, NESTED) for path in sorted(nested)]
    if set(listed) - present - set(deleted) - nested:
        raise ChangesRefused("the sandbox's list of changed paths is inconsistent")
    return ChangeSet(tuple(sorted(changes, key=lambda c: c.path)), tuple(sorted(refused)))


def path_refusal(path: str) -> str | None:
    """Why `path` may not be changed from the sandbox, or None when it is a plain path in it."""
    parts = path.split("/")
    if not path or "\0" in path or len(path) > 4096 or any(p in ("", ".", "..") for p in parts):
        return "not a plain relative path in the repository"
    if any(part.casefold().rstrip(". ") == ".git" for part in parts):
        return "inside a .git directory"
    return None


def link_refusal(path: str, target: str) -> str | None:
    """Why a link at `path` to `target` is refused: it must resolve inside the tree."""
    if not target or "\0" in target:
        return "a link without a usable target"
    if target.startswith("/"):
        return "a link to an absolute path, outside the repository"
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if resolved == ".." or resolved.startswith("../"):
        return "a link that points outside the repository"
    return None


def _outer_parts(outer: tarfile.TarFile) -> dict[str, tarfile.TarInfo]:
    parts = {}
    for member in outer:
        name = member.name.partition("/")[2]
        if name in OUTER:
            if not member.isreg() or name in parts:
                raise ChangesRefused(f"the sandbox's {name} is not a plain file")
            parts[name] = member
    if missing := [name for name in OUTER if name not in parts]:
        raise ChangesRefused(f"the sandbox did not produce {', '.join(missing)}")
    return parts


def _paths(outer: tarfile.TarFile, member: tarfile.TarInfo, limits: ChangeLimits) -> list[str]:
    if member.size > limits.max_paths * 4097:
        raise ChangesRefused(f"more than {limits.max_paths} paths changed")
    data = outer.extractfile(member)
    assert data is not None
    raw = data.read().split(b"\0")
    paths = [p.decode("utf-8", "surrogateescape") for p in raw if p]
    if len(paths) > limits.max_paths:
        raise ChangesRefused(f"more than {limits.max_paths} paths changed")
    return paths


def _members(
    inner: tarfile.TarFile, present: set[str], limits: ChangeLimits
) -> tuple[dict[str, Change], list[tuple[str, str]]]:
    """Each archived path as a Change, or refused; ChangesRefused past the size limits."""
    found: dict[str, Change] = {}
    refused: list[tuple[str, str]] = []
    total = 0
    for member in inner:
        path = member.name
        why = path_refusal(path) or _kind_refusal(member, path, present, limits)
        if why is None and path in found:
            why = "it appears twice in the sandbox's archive"
        if why:
            found.pop(path, None)
            refused.append((path, why))
            continue
        total += member.size
        if total > limits.max_bytes:
            raise ChangesRefused(f"the changes are larger than {limits.max_bytes // MIB} MiB")
        found[path] = _change(inner, member)
    return found, refused


def _kind_refusal(
    member: tarfile.TarInfo, path: str, present: set[str], limits: ChangeLimits
) -> str | None:
    if path not in present:
        return "not among the changed paths the sandbox listed"
    if member.issym():
        return link_refusal(path, member.linkname)
    if member.isdir():
        return "a directory (a nested repository, or one git would not keep)"
    if not (member.isreg() or member.islnk()):
        return "a device file or a pipe, which a repository cannot hold"
    if member.size > limits.max_file_bytes:
        return f"larger than {limits.max_file_bytes // MIB} MiB"
    return None


def _change(inner: tarfile.TarFile, member: tarfile.TarInfo) -> Change:
    if member.issym():
        return Change(member.name, member.linkname.encode("utf-8", "surrogateescape"), link=True)
    data = inner.extractfile(member)  # a hard link reads the file it links to
    if data is None:
        raise ChangesRefused(f"{member.name}: its content is missing from the archive")
    return Change(member.name, data.read(), executable=bool(member.mode & 0o100))
