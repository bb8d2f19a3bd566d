"""One job from trigger to answer: authorise, tell the user, take the issue's lock, work, report.

Whatever happens, the user hears how the job ended, in words; the sandbox and the workspace
are removed; the issue's lock is released.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from githubkit import GitHub
from githubkit.exception import GitHubException, RequestFailed
from redis import Redis
from rq.job import Job
from rq.timeouts import JobTimeoutException

from sandbox.boundary import ChangesRefused
from worker import failures, serial
from worker.context import gather, task_only
from worker.git import GitError, Identity, auth_header
from worker.github import GitHubKitRepo, GitHubRepo, installation_client
from worker.plan import plan
from worker.publish import PublishRefused
from worker.repo_config import RepoConfigError
from worker.reporting import Fanout, LogReporter, Reporter, SlackReporter
from worker.stopwatch import Stopwatch
from worker.tokens import InstallationTokens
from worker.tracker import Tracker
from worker.work import Assignment, JobTools, SetupFailed, do_work, summary
from wrench.jobs import JobSpec, Trigger
from wrench.metrics import Metrics
from wrench.queue import JobQueue
from wrench.secrets import Redactor

log = logging.getLogger(__name__)

WRITE_ROLES = {"admin", "maintain", "write"}
REFUSED = (
    "Sorry @{login}, only people with write access to this repository can ask Wrench for work. "
    "A maintainer can label the issue `{label}` or mention @{bot} instead."
)
NOT_INSTALLED = "cannot work on `{repository}`: the GitHub App is not installed there."
QUEUED_BEHIND = "is queued behind job `{holder}`, which is working on this now."
STARTED = "is on it."
KNOWN_FAILURES = {
    SetupFailed: "stopped: {error}",
    RepoConfigError: "stopped: {error}. Fix the file and ask again.",
    PublishRefused: "did not publish anything, because of a secret: {error}. The value is not "
    "shown anywhere; remove it from the change and ask again.",
    ChangesRefused: "stopped: the agent's changes could not be taken out of the sandbox: "
    "{error}. Nothing was published.",
    GitError: "stopped: {error}",
    JobTimeoutException: "stopped: it ran out of time (the limit is JOB_TIMEOUT_S). Nothing was "
    "published.",
}
UNEXPECTED = "failed unexpectedly ({error}). Nothing was published; the operator's log has more."


@dataclass
class Services:
    """Everything a job talks to, built once per worker by the entry point."""

    redis: Redis
    app: GitHub
    tokens: InstallationTokens
    queue: JobQueue
    metrics: Metrics
    redactor: Redactor
    app_slug: Callable[[], str]
    """The App's slug: its bot user is `<slug>[bot]`, whatever BOT_NAME says."""
    handle: Callable[[], str]
    """What people @mention: BOT_NAME, or the slug."""
    tools: Callable[[Job], JobTools]
    footer: Callable[[str], str]
    """The tracking comment's last line for a job id: the job page's link, when it has one."""
    api_url: str
    trigger_label: str
    timeout_s: int


class JobRunner:
    """Runs one rq job."""

    def __init__(self, services: Services, job: Job) -> None:
        self.s, self.job = services, job
        self.started = time.monotonic()
        self.watch = Stopwatch()

    def run(self, spec: JobSpec) -> dict:
        try:
            return self._run(spec)
        except Exception as exc:
            if not self.job.meta.get("reported"):
                self._report_early(spec, exc)
            raise

    def _report_early(self, spec: JobSpec, exc: Exception) -> None:
        """A failure before the tracking comment exists: say so where the request came from."""
        message = self._failure(exc)
        if spec.slack:
            SlackReporter(spec.slack.response_url, self.s.redactor).finish(message)
        self._done(spec, "failed")

    def _run(self, spec: JobSpec) -> dict:
        spec = self._with_installation(spec)
        if spec is None:
            return {"outcome": "not_installed"}
        with self.watch.lap("token"):
            token = self.s.tokens.get(spec.installation_id, spec.repository.split("/")[1])
        self.s.redactor.add(token)
        self.s.redactor.add(auth_header(token).rsplit(" ", 1)[1])
        with installation_client(self.s.api_url, token) as client:
            github = GitHubKitRepo(client, spec.repository)
            if not self._authorised(github, spec):
                return self._done(spec, "refused")
            self._acknowledge(github, spec)
            return self._serially(github, spec, token)

    def _with_installation(self, spec: JobSpec) -> JobSpec | None:
        if spec.installation_id is not None:
            return spec
        try:
            answer = self.s.app.request("GET", f"/repos/{spec.repository}/installation").json()
        except RequestFailed as exc:
            if exc.response.status_code != 404:
                raise
            self._reporter(None, spec).finish(NOT_INSTALLED.format(repository=spec.repository))
            return None
        return spec.model_copy(update={"installation_id": answer["id"]})

    def _authorised(self, github: GitHubRepo, spec: JobSpec) -> bool:
        if spec.trigger in {Trigger.SLACK, Trigger.SCHEDULE}:
            return True  # SLACK_ACCESS or the repository's own file decided
        if github.permission(spec.requester) in WRITE_ROLES:
            return True
        github.create_comment(
            spec.number,
            REFUSED.format(login=spec.requester, label=self.s.trigger_label, bot=self.s.handle()),
        )
        return False

    def _acknowledge(self, github: GitHubRepo, spec: JobSpec) -> None:
        if spec.number is None:
            return
        target = {Trigger.COMMENT: "issue_comment", Trigger.REVIEW_COMMENT: "review_comment"}
        kind = target.get(spec.trigger)
        try:
            github.react(kind or "issue", spec.comment_id if kind else spec.number, "eyes")
        except GitHubException as exc:  # e.g. the comment was deleted: the job goes on
            log.warning("could not react to the trigger: %s", exc)

    def _serially(self, github: GitHubRepo, spec: JobSpec, token: str) -> dict:
        reporter = self._reporter(github, spec)
        holder = serial.claim(self.s.redis, spec, self.job.id, self.s.timeout_s + 600)
        if holder:
            reporter.stage(QUEUED_BEHIND.format(holder=holder))
            serial.queue_behind(self.s.queue, spec, holder, dict(self.job.meta))
            failures.mark_reported(self.job)
            return self._done(spec, "queued_behind")
        try:
            return self._work(github, spec, token, reporter)
        finally:
            serial.release(self.s.redis, spec, self.job.id)

    def _work(self, github: GitHubRepo, spec: JobSpec, token: str, reporter: Reporter) -> dict:
        reporter.stage(STARTED)
        try:
            bot_login = f"{self.s.app_slug()}[bot]"
            task = gather(github, spec, bot_login) if spec.number else task_only(spec)
            where = plan(github, spec, github.repository(), self.job.id)
            deadline = self.started + self.s.timeout_s
            job = Assignment(
                github, task, where, token, self._identity(github), deadline, self.watch
            )
            result = do_work(self.s.tools(self.job), job, reporter, self.s.redactor)
        except Exception as exc:
            reporter.finish(self._failure(exc))
            failures.mark_reported(self.job)
            self._done(spec, "failed")
            raise
        reporter.finish(f"{result.outcome.comment}\n\n<sub>{summary(result.run)}</sub>")
        failures.mark_reported(self.job)
        self._record_run(result.run)
        return self._done(spec, result.outcome.kind, url=result.outcome.url)

    def _reporter(self, github: GitHubRepo | None, spec: JobSpec) -> Reporter:
        reporters: list[Reporter] = []
        if github is not None and spec.number is not None:
            tracking = self.job.meta.get("tracking") or {}
            tracker = Tracker(
                github, spec.number, self.s.redactor, footer=self.s.footer(self.job.id)
            )
            tracker.start("is getting ready.", comment_id=tracking.get("comment_id"))
            failures.record_tracking(self.job, spec.model_dump(mode="json"), tracker.comment_id)
            reporters.append(tracker)
        if spec.slack:
            reporters.append(SlackReporter(spec.slack.response_url, self.s.redactor))
        return Fanout(*reporters) if reporters else LogReporter(spec.describe())

    def _identity(self, github: GitHubRepo) -> Identity:
        login = f"{self.s.app_slug()}[bot]"
        host = urlsplit(self.s.api_url).hostname
        domain = "users.noreply.github.com" if host == "api.github.com" else f"users.noreply.{host}"
        return Identity(login, f"{github.user_id(login)}+{login}@{domain}")

    def _failure(self, exc: Exception) -> str:
        for kind, template in KNOWN_FAILURES.items():
            if isinstance(exc, kind):
                return template.format(error=self.s.redactor.redact(str(exc)))
        log.exception("job %s failed", self.job.id)
        return UNEXPECTED.format(error=type(exc).__name__)

    def _record_run(self, run) -> None:
        self.s.metrics.inc("wrench_model_tokens_total", run.prompt_tokens, kind="prompt")
        self.s.metrics.inc("wrench_model_tokens_total", run.completion_tokens, kind="completion")
        self.s.metrics.inc("wrench_model_cost_usd_total", run.cost_usd)
        self.job.meta["run"] = run.model_dump(mode="json")
        self.job.save_meta()

    def _done(self, spec: JobSpec, outcome: str, url: str | None = None) -> dict:
        elapsed = time.monotonic() - self.started
        waited = self.job.started_at - self.job.enqueued_at if self.job.started_at else None
        timings = {**self.watch.laps, "total": elapsed}
        if waited is not None:
            timings["queue_wait"] = waited.total_seconds()
        self.job.meta["timings"] = {k: round(v, 4) for k, v in timings.items()}
        self.job.save_meta()
        self.s.metrics.inc("wrench_jobs_total", trigger=spec.trigger.value, outcome=outcome)
        self.s.metrics.observe("wrench_job_duration_seconds", elapsed, trigger=spec.trigger.value)
        return {"outcome": outcome, "url": url, "duration_s": round(elapsed, 3)}
