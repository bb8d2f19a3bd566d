"""The secret scan before publishing: every blob that will be pushed or posted, as bytes.

It reads the bytes themselves, never a diff's text, so no `.gitattributes` (`-diff`,
`working-tree-encoding`) can hide what a file holds. Each blob is looked at as bytes, as
UTF-16 when it holds NULs, and through its long base64 runs (two levels deep), against every
secret Wrench holds and the common token shapes (see `wrench.secrets`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from dataclasses import dataclass

from wrench.secrets import Redactor

BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{40,}={0,2}")
MAX_DEPTH = 2
MAX_DECODED = 1024 * 1024
"""Longest base64 run decoded: a secret is short, a bundled image is not worth the time."""


@dataclass(frozen=True)
class Finding:
    """A secret found: where (a path, or which text) and what kind, never its value."""

    where: str
    kind: str

    def __str__(self) -> str:
        return f"{self.where} holds {self.kind}"


def scan(redactor: Redactor, blobs: Iterable[tuple[str, bytes]]) -> list[Finding]:
    """Every secret in every (where, bytes) pair."""
    return [Finding(where, kind) for where, data in blobs for kind in kinds_in(redactor, data)]


def kinds_in(redactor: Redactor, data: bytes, depth: int = 0) -> list[str]:
    """The kinds of secret in `data`, read every way a file could hide one."""
    found: list[str] = []
    for text in _views(data):
        found += redactor.find(text)
        if depth >= MAX_DEPTH:
            continue
        for run in BASE64_RUN.findall(text):
            if decoded := _decoded(run):
                inside = kinds_in(redactor, decoded, depth + 1)
                found += [f"{kind} (base64-encoded)" for kind in inside]
    return list(dict.fromkeys(found))


def _views(data: bytes) -> list[str]:
    """Latin-1 keeps every byte as one character, so ASCII secrets match as they are; text
    encoded as UTF-16 (a NUL beside each ASCII character) is read in both byte orders."""
    views = [data.decode("latin-1")]
    if b"\0" in data:
        views += [data.decode("utf-16-le", "ignore"), data.decode("utf-16-be", "ignore")]
        views += [data[1:].decode("utf-16-le", "ignore")]  # a run starting at an odd offset
    return views


def _decoded(run: str) -> bytes | None:
    if len(run) > MAX_DECODED * 4 // 3:
        return None
    text = run.rstrip("=")
    text += "=" * (-len(text) % 4)
    try:
        if "-" in text or "_" in text:
            return base64.urlsafe_b64decode(text)
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
