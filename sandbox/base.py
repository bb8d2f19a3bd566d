"""The sandbox seam: what the agent and the worker may ask of a place where commands run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Protocol

if TYPE_CHECKING:
    from sandbox.boundary.changes import ChangeLimits, ChangeSet

WORKSPACE = "/workspace"


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one shell command."""

    output: str
    """stdout and stderr interleaved, decoded leniently, capped (head and tail kept)."""
    exit_code: int | None
    """The command's exit status; None when it was killed for running past its timeout."""
    timed_out: bool = False
    """Whether the command ran past its timeout and was killed with its process group."""
    truncated_bytes: int = 0
    """How many bytes of output were cut from the middle; 0 when nothing was."""
    duration_s: float = 0.0
    """Wall-clock time the command took, in seconds."""


class Sandbox(Protocol):
    """A shell with persistent state (cwd, exported variables) over a workspace directory."""

    workspace: str
    """The workspace path as the commands see it."""

    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run a bash command in the persistent shell; None means the default timeout."""
        ...

    def read_file(self, path: str) -> bytes:
        """The bytes of a file; relative paths are relative to the workspace."""
        ...

    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a file, creating parent directories."""
        ...

    def close(self) -> None:
        """Stop and remove the sandbox; safe to call twice."""
        ...


class WorkspaceSandbox(Sandbox, Protocol):
    """What the worker needs on top of `Sandbox`: the workspace in and the changes out, as data.

    No host directory is shared with the sandbox: the workspace arrives as an archive, and the
    agent's changes leave as a checked `ChangeSet` only after every process in the sandbox has
    been stopped, so the host never reads a tree that sandboxed code can still change."""

    owner: tuple[int, int]
    """uid and gid the workspace's files must belong to for the sandbox's commands."""

    def put_workspace(self, archive: BinaryIO) -> None:
        """Unpack a tar archive (see `sandbox.boundary.WorkspaceArchive`) into the workspace."""
        ...

    def take_changes(self, base: str | None, limits: ChangeLimits) -> ChangeSet:
        """Stop everything in the sandbox, then return the workspace's changes against commit
        `base`, checked; the sandbox is closed afterwards. ChangesRefused when none can be had."""
        ...


class SandboxProvider(Protocol):
    """Where the worker gets a sandbox for a job: a warm pool, a cold start, or a local shell."""

    def acquire(self, job_id: str) -> WorkspaceSandbox:
        """A started sandbox with an empty workspace, owned by this job until `close()`."""
        ...
