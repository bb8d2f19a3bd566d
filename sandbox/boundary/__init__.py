"""What crosses the sandbox boundary, and only as data: the workspace going in as an archive,
the agent's changes coming out as a checked change set. No host directory is ever shared."""

from sandbox.boundary.archive import WorkspaceArchive
from sandbox.boundary.changes import (
    Change,
    ChangeLimits,
    ChangeSet,
    ChangesRefused,
    read_changes,
)
from sandbox.boundary.collect import OUT_DIR, collect_command

__all__ = [
    "OUT_DIR",
    "Change",
    "ChangeLimits",
    "ChangeSet",
    "ChangesRefused",
    "WorkspaceArchive",
    "collect_command",
    "read_changes",
]
