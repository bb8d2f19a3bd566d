"""The sandbox seam: what the agent and the worker may ask of a place where commands run."""

from __future__ import annotations

from dataclasses import dataclass
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

    def run(self, command: str, timeout: float = 120.0) -> ExecResult:
        """Run a bash command in the persistent shell."""
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
