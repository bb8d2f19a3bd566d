"""The scheduler process: find due schedules across installations and enqueue each run once.

Exactly once, even with two schedulers or a restart: a run is claimed with SET NX on a key
made of the schedule and its local due time; the job and the schedule's bookkeeping are then
written in one Redis transaction. A claim that was never completed (a crash between the two)
expires, and the next tick, on any scheduler, takes the run again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from githubkit.exception import GitHubException
from redis import Redis

from wrench.jobs import JobSpec, Trigger
from wrench.queue import JobQueue
from wrench.schedules import CATCH_UP, Schedule

log = logging.getLogger(__name__)

CLAIM_TTL_S = 300
RUN_TTL_S = 30 * 86400
PROBLEMS_KEY = "wrench:schedule:problems"


@dataclass(frozen=True)
class ScheduledRepo:
    """A repository as the scheduler sees it."""

    full_name: str
    installation_id: int
    schedules: list[Schedule]
    open_wrench_branches: Callable[[], list[str]]
    """Head branches of the open pull requests Wrench opened here (asked only when a run is due)."""


class RepoSource(Protocol):
    """Where the scheduler finds repositories and their schedules."""

    def repositories(self) -> Iterable[ScheduledRepo]: ...


class Problems:
    """Visible, de-duplicated reports of what the scheduler skipped: each distinct problem
    is logged once and kept in a Redis hash for the operator's tools."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    def report(self, subject: str, message: str) -> None:
        if (self._redis.hget(PROBLEMS_KEY, subject) or b"").decode() != message:
            self._redis.hset(PROBLEMS_KEY, subject, message)
            log.error("schedule problem in %s: %s", subject, message)

    def clear(self, subject: str) -> None:
        self._redis.hdel(PROBLEMS_KEY, subject)


class Scheduler:
    """One tick looks at every schedule of every repository and enqueues the due runs."""

    def __init__(
        self,
        redis: Redis,
        queue: JobQueue,
        source: RepoSource,  # noqa: PLR0913
        server_schedules: list[Schedule],
        max_open_prs: int,
        clock: Callable[[], datetime],
    ) -> None:
        self._redis, self._queue, self._source = redis, queue, source
        self._server_schedules, self._max_open_prs = server_schedules, max_open_prs
        self._clock = clock
        self.problems = Problems(redis)

    def tick(self) -> list[str]:
        """Enqueue every due run; returns the new jobs' ids."""
        now = self._clock()
        jobs = []
        for repo in self._source.repositories():
            for schedule in [*repo.schedules, *self._server_schedules]:
                try:
                    job_id = self._consider(repo, schedule, now)
                except GitHubException as exc:  # e.g. listing open PRs: try again next tick
                    reason = f"{type(exc).__name__}: {exc}"
                    self.problems.report(f"{repo.full_name}:{schedule.name}", f"not run: {reason}")
                    continue
                if job_id:
                    jobs.append(job_id)
        return jobs

    def _consider(self, repo: ScheduledRepo, schedule: Schedule, now: datetime) -> str | None:
        last_key = f"wrench:schedule-last:{repo.full_name}:{schedule.name}"
        # A new schedule starts counting from the moment it is first seen: no backfill.
        self._redis.set(last_key, now.isoformat(), nx=True)
        last = datetime.fromisoformat(self._redis.get(last_key).decode())
        due = schedule.latest_due(max(last, now - CATCH_UP), now)
        if due is None:
            return None
        run_key = schedule.run_key(repo.full_name, due)
        if not self._redis.set(run_key, "claimed", nx=True, ex=CLAIM_TTL_S):
            return None
        with self._redis.pipeline() as pipe:
            job_id = self._enqueue_or_skip(repo, schedule, pipe)
            pipe.set(run_key, job_id or "skipped", ex=RUN_TTL_S)
            pipe.set(last_key, due.isoformat())
            pipe.execute()
        if job_id:
            log.info(
                "scheduled run %s of %s queued as job %s", schedule.name, repo.full_name, job_id
            )
        return job_id

    def _enqueue_or_skip(self, repo: ScheduledRepo, schedule: Schedule, pipe) -> str | None:
        branch = f"wrench/schedule-{schedule.name}"
        open_branches = repo.open_wrench_branches()
        open_prs = len(open_branches)
        subject = f"{repo.full_name}:{schedule.name}"
        if branch not in open_branches and open_prs >= self._max_open_prs:
            self.problems.report(
                subject,
                f"run skipped: {open_prs} open Wrench pull requests "
                f"(the limit is {self._max_open_prs})",
            )
            return None
        self.problems.clear(subject)
        spec = JobSpec(
            repository=repo.full_name,
            installation_id=repo.installation_id,
            number=None,
            is_pull_request=False,
            trigger=Trigger.SCHEDULE,
            instruction=schedule.task,
            requester=f"schedule {schedule.name}",
            delivery_id=f"schedule-{subject}",
            schedule=schedule.name,
        )
        [job_id] = self._queue.enqueue(spec, pipeline=pipe)
        return job_id


def run_forever(scheduler: Scheduler, interval_s: float, stop: threading.Event) -> None:
    """Tick until `stop` is set; a failing tick (GitHub down, say) is logged, never fatal."""
    while not stop.is_set():
        try:
            scheduler.tick()
        except Exception:
            log.exception("scheduler tick failed; trying again in %s s", interval_s)
        stop.wait(interval_s)
