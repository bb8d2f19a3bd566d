"""The sandbox seam: what the agent and the worker may ask of a place where commands run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

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
    """What the worker needs on top of `Sandbox`: the workspace as a directory on the host."""

    host_workspace: Path
    """The host directory mounted at `workspace`: the worker clones the repository here."""

    def adopt_workspace(self) -> None:
        """Hand the host directory's contents (cloned by root) over to the sandbox's user."""
        ...


class SandboxProvider(Protocol):
    """Where the worker gets a sandbox for a job: a warm pool, a cold start, or a local shell."""

    def acquire(self, job_id: str) -> WorkspaceSandbox:
        """A started sandbox with an empty host workspace, owned by this job until `close()`."""
        ...
