"""Slot directories: one per container, saying who owns it, shared by the worker's processes.

Layout: `<slot_root>/<instance>/<slot>/` with
- `ready`: written once the pooled container has started (`{"container": id, "key": pool key}`);
- `owner`: the job id (or "reaper"), created with O_EXCL: whoever creates it owns the slot.
rq runs each job in a forked process, so these files, not Python objects, say which container
is idle and which is taken; creating `owner` is the one atomic step that claims a slot.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

REAPER = "reaper"
"""The owner the reaper writes when it claims an idle slot to remove it."""


@dataclass(frozen=True)
class Ready:
    """What a pooled slot's `ready` file says."""

    container: str
    key: str


@dataclass(frozen=True)
class Slot:
    """One slot directory."""

    path: Path

    @classmethod
    def create(cls, root: Path, instance: str) -> Slot:
        """A new, unclaimed slot."""
        parent = root / instance
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        slot = cls(parent / secrets.token_hex(6))
        slot.path.mkdir(mode=0o700)
        return slot

    @property
    def name(self) -> str:
        return self.path.name

    def claim(self, owner: str) -> bool:
        """Take the slot for `owner`; False when someone else already has it."""
        try:
            fd = os.open(self.path / "owner", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except (FileExistsError, FileNotFoundError):
            return False
        with os.fdopen(fd, "w") as owner_file:
            owner_file.write(owner)
        return True

    def owner(self) -> str | None:
        """Who claimed the slot: None while idle or gone, "" for a claim being written."""
        try:
            return (self.path / "owner").read_text()
        except FileNotFoundError:
            return None

    def mark_ready(self, container: str, key: str) -> None:
        """Publish a started pooled container; written by rename, so readers never see half."""
        partial = self.path / "ready.partial"
        partial.write_text(json.dumps({"container": container, "key": key}))
        partial.rename(self.path / "ready")

    def ready(self) -> Ready | None:
        """The started container waiting in this slot, if any."""
        try:
            return Ready(**json.loads((self.path / "ready").read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            return None

    def age_s(self, now: float | None = None) -> float:
        """Seconds since the slot was created."""
        try:
            return (now or time.time()) - self.path.stat().st_mtime
        except FileNotFoundError:
            return 0.0

    def remove(self) -> None:
        """Delete the slot; fine if already gone."""
        shutil.rmtree(self.path, ignore_errors=True)


def slots(root: Path, instance: str) -> list[Slot]:
    """Every slot of an instance, oldest first."""
    try:
        entries = [Slot(p) for p in (root / instance).iterdir() if p.is_dir()]
    except FileNotFoundError:
        return []
    return sorted(entries, key=lambda slot: -slot.age_s())
