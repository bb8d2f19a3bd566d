"""The part of a job that needs a sandbox: clone, set up, run the agent, publish."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox.base import SandboxProvider, WorkspaceSandbox
from sandbox.boundary import ChangeLimits, ChangeSet
from worker.agent import (
    LLM,
    Agent,
    AgentConfig,
    AgentController,
    EventStream,
    Progress,
    RunResult,
    TrajectoryWriter,
)
from worker.agent.events import Event, event_record
from worker.context import TaskContext
from worker.git import Checkout, Identity
from worker.github import GitHubRepo
from worker.plan import Plan
from worker.publish import Outcome, Target, Work, publish
from worker.repo_config import CONFIG_PATH, RepoConfig, parse_config_file
from worker.reporting import Reporter
from worker.stopwatch import Stopwatch
from wrench.secrets import Redactor
from wrench.settings import Settings

# Time kept back from the agent for committing, pushing and reporting (at most a fifth of
# the job's time).
PUBLISH_RESERVE_S = 120
PROGRESS = "is working: step {step} of {max_steps}, last: {last}. ${cost:.2f} and {elapsed} so far."
SETUP = "is running the repository's setup commands."
CLONING = "is cloning `{repository}`."
AGENT = "is working on it with `{model}`."


class SetupFailed(RuntimeError):
    """A setup command from `.github/wrench.yml` failed; the message says which and how."""


@dataclass
class JobTools:
    """What the sandbox part of a job needs, handed in by the entry point."""

    settings: Settings
    job_id: str
    sandboxes: SandboxProvider
    llm: Callable[[str | None], LLM]
    """The model to use: the repository's choice, or the server's for None."""
    refill: Callable[[], threading.Thread]
    """Starts topping the warm pool up again in the background, while the job works."""
    workdir: Path
    """A private host directory for this job's clone; removed at the end."""
    trajectory: Path
    publish_event: Callable[[dict], None]
    """Sends one redacted event record to the job page's live feed."""
    cancelled: Callable[[], bool]


@dataclass(frozen=True)
class Assignment:
    """What one job must do, and with which credentials and deadline."""

    github: GitHubRepo
    task: TaskContext
    plan: Plan
    token: str
    identity: Identity
    deadline: float
    """`time.monotonic()` instant by which the whole job must be done."""
    watch: Stopwatch
    """Where the job's time goes, stage by stage."""


@dataclass(frozen=True)
class Result:
    outcome: Outcome
    run: RunResult


def do_work(tools: JobTools, job: Assignment, reporter: Reporter, redactor: Redactor) -> Result:
    """Run the agent on the task in a fresh sandbox and publish; always cleans up.

    The clone stays on the host, where no sandbox can reach it: the sandbox gets an archive of
    it, and what comes back is data, taken only once every process in the sandbox is stopped."""
    tools.workdir.mkdir(parents=True, exist_ok=True)
    lap = job.watch.lap
    with lap("acquire"):
        sandbox = tools.sandboxes.acquire(tools.job_id)
    refill = tools.refill()
    try:
        reporter.stage(CLONING.format(repository=job.github.full_name))
        with lap("clone"):
            checkout = _clone(job, tools.workdir / "git")
            config = parse_config_file(checkout.file(CONFIG_PATH))
        with lap("copy_in"), checkout.archive(sandbox.owner) as archive:
            sandbox.put_workspace(archive)
        with lap("setup"):
            _setup(sandbox, config, reporter, redactor)
        with lap("agent"):
            run = _agent(tools, sandbox, job, config, reporter, redactor)
        with lap("collect"):
            changes = sandbox.take_changes(checkout.base, ChangeLimits())
        with lap("publish"):
            outcome = _publish(job, checkout, config, run, changes, redactor)
        return Result(outcome, run)
    finally:
        sandbox.close()
        shutil.rmtree(tools.workdir, ignore_errors=True)
        refill.join(timeout=30)


def _clone(job: Assignment, git_dir: Path) -> Checkout:
    url = job.github.repository()["clone_url"]
    checkout = Checkout.clone(url, job.plan.clone_branch, git_dir, job.token)
    if job.plan.fetch_ref:
        checkout.check_out(job.plan.fetch_ref)
    return checkout


def _publish(  # noqa: PLR0913
    job: Assignment,
    checkout: Checkout,
    config: RepoConfig,
    run: RunResult,
    changes: ChangeSet,
    redactor: Redactor,
) -> Outcome:
    plan, task = job.plan, job.task
    target = Target(
        task.number,
        task.title,
        plan.is_pull_request,
        plan.branch,
        plan.base,
        plan.push_allowed,
        config.draft,
    )
    work = Work(run.finished, run.message if run.finished else run.detail, summary(run))
    return publish(checkout, job.github, target, work, changes, job.identity, redactor)


def _setup(
    sandbox: WorkspaceSandbox, config: RepoConfig, reporter: Reporter, redactor: Redactor
) -> None:
    if not config.setup:
        return
    reporter.stage(SETUP)
    deadline = time.monotonic() + config.setup_timeout_s
    for command in config.setup:
        result = sandbox.run(command, timeout=max(1.0, deadline - time.monotonic()))
        if result.timed_out or result.exit_code != 0:
            why = "timed out" if result.timed_out else f"exited with {result.exit_code}"
            tail = redactor.redact(result.output[-1500:])
            raise SetupFailed(f"setup command `{command}` {why}:\n\n```\n{tail}\n```")


def _agent(
    tools: JobTools,
    sandbox: WorkspaceSandbox,
    job: Assignment,  # noqa: PLR0913
    config: RepoConfig,
    reporter: Reporter,
    redactor: Redactor,
) -> RunResult:
    settings, limits = tools.settings, config.limits
    reserve = min(PUBLISH_RESERVE_S, 0.2 * settings.JOB_TIMEOUT_S)
    seconds_left = job.deadline - time.monotonic() - reserve
    agent_config = AgentConfig.from_settings(
        settings,
        max_steps=min(settings.MAX_STEPS, limits.max_steps or settings.MAX_STEPS),
        max_cost_usd=min(settings.MAX_COST_USD, limits.max_cost_usd or settings.MAX_COST_USD),
        max_duration_s=max(1.0, min(seconds_left, limits.timeout_s or seconds_left)),
    )
    llm = tools.llm(config.model)
    reporter.stage(AGENT.format(model=llm.model))
    with TrajectoryWriter(tools.trajectory, redactor) as trajectory:
        live = _to_redis(tools.publish_event, redactor)
        stream = EventStream([trajectory, live, _progress_to(reporter)])
        controller = AgentController(
            Agent(llm, agent_config), sandbox, stream, redactor, tools.cancelled
        )
        return controller.run(job.task.render())


def _to_redis(publish: Callable[[dict], None], redactor: Redactor) -> Callable[[Event], None]:
    """Each event, redacted, to the job page's live feed."""

    def on_event(event: Event) -> None:
        publish(event_record(event, redactor))

    return on_event


def _progress_to(reporter: Reporter) -> Callable[[object], None]:
    def on_event(event: object) -> None:
        if isinstance(event, Progress):
            reporter.progress(
                PROGRESS.format(
                    step=event.step,
                    max_steps=event.max_steps,
                    last=event.last_action[:80],
                    cost=event.cost_usd,
                    elapsed=_duration(event.elapsed_s),
                )
            )

    return on_event


def summary(run: RunResult) -> str:
    steps = f"{run.steps} step" + ("" if run.steps == 1 else "s")
    tokens = run.prompt_tokens + run.completion_tokens
    return f"{steps} · ${run.cost_usd:.2f} · {_duration(run.duration_s)} · {tokens:,} tokens"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
