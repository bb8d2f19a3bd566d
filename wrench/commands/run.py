"""`wrench run`: the agent on a local checkout, in the sandbox, with a live progress display."""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from docker.errors import DockerException

from sandbox.base import SandboxProvider
from sandbox.boundary import ChangesRefused
from sandbox.config import SandboxConfig
from worker.agent import AgentConfig, LiteLLMModel, LLMConfig
from worker.git import GitError
from worker.local.copy import Changes
from worker.local.repo import LocalRepo
from worker.local.run import LocalResult, LocalTools, run_on_checkout
from worker.work import summary
from wrench.commands import CommandError
from wrench.commands.progress import ProgressLine
from wrench.logs import configure_logging
from wrench.settings import Settings, SettingsError, load_settings

LOCAL_WARNING = (
    "--local isolates NOTHING: the agent's commands run as you, on this machine, with your "
    "files, your credentials and your network. Use it only on tasks and code you trust."
)
STOPPING = "stopping after this step (Ctrl-C again stops at once and copies nothing back)"
INTERRUPTED = "wrench: interrupted: the checkout is as it was, nothing was copied back"


class Interrupt:
    """Ctrl-C once asks the agent to stop after its step; twice stops at once."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._asked = threading.Event()

    def __call__(self) -> bool:
        return self._asked.is_set()

    def _on_signal(self, *_: object) -> None:
        if self._asked.is_set():
            raise KeyboardInterrupt
        self._asked.set()
        self._say(STOPPING)

    def install(self) -> None:
        signal.signal(signal.SIGINT, self._on_signal)


def command(args: argparse.Namespace) -> int:
    overrides = {"LLM_MODEL": args.model} if args.model else {}
    settings = load_settings(**overrides)
    if not settings.LLM_MODEL:
        raise SettingsError("LLM_MODEL is not set: name a litellm model, or pass --model")
    redactor = configure_logging(settings, level=logging.WARNING)
    try:
        repo = LocalRepo.find(Path(args.repo))
    except GitError as error:
        raise CommandError(f"{args.repo} is not a git checkout ({error})") from None
    display = ProgressLine(sys.stderr)
    interrupt = Interrupt(display.say)
    run_id = f"cli-{secrets.token_hex(4)}"
    with ExitStack() as cleanup:
        tools = LocalTools(
            sandboxes=_sandboxes(settings, args.local, repo, cleanup, display.say),
            llm=LiteLLMModel(LLMConfig.from_settings(settings)),
            config=_agent_config(settings, args),
            redactor=redactor,
            trajectory=_trajectory(settings, repo, run_id),
            set_aside=_set_aside(settings, repo, run_id),
            on_event=display,
            cancelled=interrupt,
            say=display.say,
        )
        interrupt.install()
        try:
            result = run_on_checkout(tools, repo, args.task, run_id)
        except KeyboardInterrupt:
            display.end_line()
            print(INTERRUPTED, file=sys.stderr)
            return 130
        except (GitError, OSError, DockerException, ChangesRefused) as error:
            raise CommandError(f"the run failed, nothing was copied back: {error}") from None
    report(result, repo, tools.trajectory)
    return 0 if result.run.finished else 1


def _agent_config(settings: Settings, args: argparse.Namespace) -> AgentConfig:
    limits = {"max_steps": args.max_steps, "max_cost_usd": args.max_cost}
    return AgentConfig.from_settings(settings, **{k: v for k, v in limits.items() if v})


def _sandboxes(
    settings: Settings,
    local: bool,
    repo: LocalRepo,
    cleanup: ExitStack,
    say: Callable[[str], None],
) -> SandboxProvider:
    """The Docker sandbox, or with `local` a plain shell. Its containers carry an instance of
    their own: the worker's reaper removes its instance's sandboxes that no rq job owns."""
    config = SandboxConfig.from_settings(settings)
    config = config.model_copy(update={"instance": f"{config.instance[:35]}-cli"})
    if config.slot_root.is_relative_to(repo.work_tree):
        # The pool's claim files would show up as changes to the checkout.
        private = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="wrench-run-"))
        config = config.model_copy(update={"slot_root": Path(private)})
    if local:
        from sandbox.local import LocalSandboxes

        say(LOCAL_WARNING)
        return LocalSandboxes(config)
    return _docker_pool(config)


def _docker_pool(config: SandboxConfig) -> SandboxProvider:
    import docker
    from docker.errors import ImageNotFound

    from sandbox.pool import WarmPool

    try:
        client = docker.from_env(timeout=30)
        client.images.get(config.image)
    except ImageNotFound:
        raise CommandError(
            f"the sandbox image {config.image} is missing: build it with "
            "`python -m sandbox.image` (scripts/setup does), or set SANDBOX_IMAGE"
        ) from None
    except DockerException as error:
        raise CommandError(
            f"cannot use the Docker engine ({error}): start it, or pass --local to run without "
            "isolation"
        ) from None
    return WarmPool(client, config)


def _trajectory(settings: Settings, repo: LocalRepo, run_id: str) -> Path:
    """DATA_DIR/trajectories/<run>.jsonl, or a private temporary file when DATA_DIR lies in the
    checkout (where it would show up as a change)."""
    directory = settings.DATA_DIR.expanduser().resolve() / "trajectories"
    if not directory.is_relative_to(repo.work_tree):
        return directory / f"{run_id}.jsonl"
    fd, name = tempfile.mkstemp(prefix=f"wrench-{run_id}-", suffix=".jsonl")
    os.close(fd)
    return Path(name)


def _set_aside(settings: Settings, repo: LocalRepo, run_id: str) -> Path:
    """Where new files the checkout ignores are saved instead of applied: a private directory
    under DATA_DIR (a temporary one when DATA_DIR lies in the checkout)."""
    directory = settings.DATA_DIR.expanduser().resolve() / "left-out" / run_id
    if directory.is_relative_to(repo.work_tree):
        return Path(tempfile.mkdtemp(prefix=f"wrench-{run_id}-left-out-"))
    return directory


def report(result: LocalResult, repo: LocalRepo, trajectory: Path) -> None:
    """How the run ended, what it changed in the checkout and what it could not change."""
    run, changes = result.run, result.changes
    verdict = "finished" if run.finished else f"stopped ({run.reason}): {run.detail}"
    print(f"wrench: {verdict}. {summary(run)}")
    if run.message:
        print(f"\n{run.message}\n")
    applied = changes.applied()
    if applied:
        print(f"wrench: changed {len(applied)} file(s) in {repo.work_tree}:")
        _print_stat(repo, applied, changes)
    else:
        print("wrench: the agent changed no files")
    for path, why in changes.skipped:
        print(f"wrench: not applied: {path}: {why}")
    if applied and not run.finished:
        print("wrench: the run did not finish: review its partial changes before keeping them")
    print(f"wrench: trajectory: {trajectory}")


def _print_stat(repo: LocalRepo, applied: list[str], changes: Changes) -> None:
    """`git diff --stat` for tracked files, and one line for each untracked one."""
    try:
        tracked = repo.tracked()
        print(repo.diff_stat([path for path in applied if path in tracked]), end="")
    except GitError as error:
        tracked = set()
        print(f"wrench: no diff stat: {error}")
    kinds = {"new": changes.added, "changed": changes.changed, "deleted": changes.deleted}
    for kind, paths in kinds.items():
        for path in paths:
            if path not in tracked:
                print(f" {path} (untracked, {kind})")
