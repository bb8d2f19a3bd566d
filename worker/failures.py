"""Telling the user when a job dies where it cannot speak for itself: a killed or lost worker."""

from __future__ import annotations

import logging
from typing import Any

from rq.job import Job

from worker.github import GitHubKitRepo, installation_client
from worker.tokens import InstallationTokens
from worker.tracker import HEADER
from wrench.github import app_client
from wrench.settings import load_settings

log = logging.getLogger(__name__)

KILLED = (
    "stopped: the worker process running this job was killed{detail}. Nothing was published. "
    "This is usually the machine running out of memory or an operator restarting Wrench; "
    "ask again to retry."
)
ABANDONED = (
    "stopped: the worker running this job disappeared (it crashed or its machine restarted). "
    "Nothing was published; ask again to retry."
)
CRASHED = "failed unexpectedly: {error}. Nothing was published; the operator's log has details."


def record_tracking(job: Job, spec: dict[str, Any], comment_id: int) -> None:
    """Remember where the job's tracking comment is, for whoever reports its death."""
    job.meta["tracking"] = {
        "repository": spec["repository"],
        "number": spec["number"],
        "installation_id": spec["installation_id"],
        "comment_id": comment_id,
    }
    job.save_meta()


def mark_reported(job: Job) -> None:
    """The job told the user how it ended; failure handlers must not say it again."""
    job.meta["reported"] = True
    job.save_meta()


def report(job: Job, message: str) -> None:
    """Edit the job's tracking comment to say how it ended, unless it already did."""
    job.refresh()
    tracking = job.meta.get("tracking")
    if not tracking or job.meta.get("reported"):
        return
    settings = load_settings()
    name = tracking["repository"].split("/")[1]
    with app_client(settings) as app:
        token = InstallationTokens(job.connection, app, settings.private_key() or "").get(
            tracking["installation_id"], name
        )
    with installation_client(settings.GITHUB_API_URL, token) as client:
        repo = GitHubKitRepo(client, tracking["repository"])
        repo.update_comment(
            tracking["comment_id"], f"{HEADER} {message}\n\n<sub>job {job.id}</sub>"
        )
    mark_reported(job)


def on_job_failure(
    job: Job, connection: Any, exc_type: type, exc: BaseException, traceback: Any
) -> None:
    """rq's failure callback: covers exceptions the job did not report and abandoned jobs."""
    from rq.exceptions import AbandonedJobError

    message = (
        ABANDONED if exc_type is AbandonedJobError else CRASHED.format(error=exc_type.__name__)
    )
    _report_safely(job, message)


def on_work_horse_killed(job: Job, retpid: int, ret_val: int, rusage: Any) -> None:
    """The rq worker's hook for a work horse that died without reporting (SIGKILL, OOM)."""
    detail = f" (signal {ret_val & 0x7F})" if ret_val & 0x7F else ""
    _report_safely(job, KILLED.format(detail=detail))


def _report_safely(job: Job, message: str) -> None:
    try:
        report(job, message)
    except Exception:  # the report is best effort; never take the worker down with it
        log.exception("could not report the failure of job %s", job.id)
