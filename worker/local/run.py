"""The agent on a checkout on this machine: copied into a sandbox, run, its changes copied back."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox.base import SandboxProvider, WorkspaceSandbox
from sandbox.boundary import ChangeLimits, WorkspaceArchive
from worker.agent import (
    LLM,
    Agent,
    AgentConfig,
    AgentController,
    Event,
    EventStream,
    RunResult,
    TrajectoryWriter,
)
from worker.local.copy import Changes, Destination, Snapshot, copy_back, copy_in
from worker.local.repo import LocalRepo
from wrench.secrets import Redactor


@dataclass(frozen=True)
class LocalTools:
    """What a local run needs, built by the entry point (`wrench run`)."""

    sandboxes: SandboxProvider
    llm: LLM
    config: AgentConfig
    redactor: Redactor
    trajectory: Path
    set_aside: Path
    """A private directory for new files the checkout ignores, which are never applied."""
    on_event: Callable[[Event], None]
    """Sees every event of the run as it happens, for the live display."""
    cancelled: Callable[[], bool]
    say: Callable[[str], None]
    """Tells the user, in one line, what is happening outside the agent's steps."""


@dataclass(frozen=True)
class LocalResult:
    run: RunResult
    changes: Changes


def run_on_checkout(tools: LocalTools, repo: LocalRepo, task: str, run_id: str) -> LocalResult:
    """Run the agent on a copy of the checkout in a fresh sandbox and apply its changes to the
    checkout, however the run ended. The sandbox is always removed, and stopped before its
    changes are read; an interrupt (Ctrl-C twice) leaves the checkout as it was."""
    sandbox = tools.sandboxes.acquire(run_id)
    try:
        snapshot = _prepare(repo, sandbox, tools.say)
        run = _agent(tools, sandbox, task)
        tools.say("taking the agent's changes out of the sandbox")
        changes = sandbox.take_changes(repo.head(), ChangeLimits())
    finally:
        sandbox.close()
    root = os.stat(repo.work_tree)
    to = Destination(repo.work_tree, (root.st_uid, root.st_gid), repo.ignored, tools.set_aside)
    return LocalResult(run, copy_back(changes, snapshot, to))


def _prepare(repo: LocalRepo, sandbox: WorkspaceSandbox, say: Callable[[str], None]) -> Snapshot:
    """The checkout's files (tracked, or untracked and not ignored) and a disposable `.git`."""
    files = repo.files()
    say(f"copying {len(files)} files of {repo.work_tree} into the sandbox")
    archive = WorkspaceArchive(sandbox.owner)
    snapshot = copy_in(repo.work_tree, files, archive)
    repo.add_git_dir(archive)
    with archive.finish() as packed:
        sandbox.put_workspace(packed)
    return snapshot


def _agent(tools: LocalTools, sandbox: WorkspaceSandbox, task: str) -> RunResult:
    with TrajectoryWriter(tools.trajectory, tools.redactor) as trajectory:
        stream = EventStream([trajectory, tools.on_event])
        agent = Agent(tools.llm, tools.config)
        controller = AgentController(agent, sandbox, stream, tools.redactor, tools.cancelled)
        return controller.run(task)
