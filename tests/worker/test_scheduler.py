"""The scheduler with an injected clock: DST, racing schedulers, restarts, limits, bad files."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from rq import Queue

from worker.scheduler import PROBLEMS_KEY, ScheduledRepo, Scheduler
from wrench.jobs import JobSpec, Trigger
from wrench.queue import JobQueue
from wrench.schedules import Schedule

BERLIN = ZoneInfo("Europe/Berlin")
NIGHTLY = Schedule(name="nightly", cron="30 2 * * *", timezone="Europe/Berlin", task="Tidy up.")
WEEKLY = Schedule(
    name="weekly-deps",
    cron="0 6 * * 1",
    timezone="Europe/Berlin",
    task="Update outdated dependencies and make the test suite pass.",
)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Repos:
    """An in-memory RepoSource."""

    def __init__(self, *schedules: Schedule, open_branches: list[str] | None = None) -> None:
        self.schedules = list(schedules)
        self.open_branches = open_branches or []

    def repositories(self):
        yield ScheduledRepo("octo-org/hello", 4242, self.schedules, lambda: self.open_branches)


@pytest.fixture
def queue(redis):
    return JobQueue(redis, "sched-test", 1800)


def scheduler(redis, queue, clock, repos, max_open_prs=3, server=()):
    return Scheduler(redis, queue, repos, list(server), max_open_prs, clock)


def jobs(redis) -> list[JobSpec]:
    return [JobSpec.model_validate(j.args[0]) for j in Queue("sched-test", connection=redis).jobs]


def run_every(sched, clock, start, end, step=timedelta(minutes=15)) -> list[datetime]:
    """Tick from start to end; returns the clock times at which jobs were queued."""
    clock.now, fired = start, []
    while clock.now <= end:
        fired += [clock.now] * len(sched.tick())
        clock.now += step
    return fired


@pytest.mark.parametrize(
    ("start", "expected_local_days"),
    [
        # Spring forward (29 March): 02:30 does not exist; the run happens once, at 03:00.
        (datetime(2026, 3, 27, 12, tzinfo=BERLIN), ["03-28", "03-29", "03-30"]),
        # Fall back (25 October): 02:30 happens twice; the run happens once.
        (datetime(2026, 10, 23, 12, tzinfo=BERLIN), ["10-24", "10-25", "10-26"]),
    ],
)
def test_a_daily_schedule_runs_once_a_day_across_dst(redis, queue, start, expected_local_days):
    clock = Clock(start)
    sched = scheduler(redis, queue, clock, Repos(NIGHTLY))
    fired = run_every(sched, clock, start, start + timedelta(days=3))
    assert [t.astimezone(BERLIN).strftime("%m-%d") for t in fired] == expected_local_days
    assert all(job.trigger == Trigger.SCHEDULE and job.schedule == "nightly" for job in jobs(redis))


def test_a_weekly_schedule_keeps_its_local_time_across_dst(redis, queue):
    start = datetime(2026, 10, 18, tzinfo=UTC)
    clock = Clock(start)
    fired = run_every(
        scheduler(redis, queue, clock, Repos(WEEKLY)),
        clock,
        start,
        start + timedelta(days=15),
        step=timedelta(minutes=5),
    )
    assert [(t.astimezone(BERLIN).strftime("%a %H:%M")) for t in fired] == ["Mon 06:00"] * 2
    assert [t.astimezone(UTC).hour for t in fired] == [4, 5]  # CEST, then CET


def test_two_schedulers_racing_enqueue_each_run_once(redis, queue):
    start = datetime(2026, 10, 26, 4, 50, tzinfo=UTC)
    clocks = [Clock(start), Clock(start)]
    scheds = [scheduler(redis, queue, c, Repos(WEEKLY)) for c in clocks]
    for s in scheds:
        s.tick()  # both see the schedule before it is due
    for c in clocks:
        c.now = start + timedelta(minutes=11)
    barrier, results = threading.Barrier(2), []

    def race(s):
        barrier.wait()
        results.extend(s.tick())

    threads = [threading.Thread(target=race, args=(s,)) for s in scheds]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(results) == 1 and len(jobs(redis)) == 1


def test_a_restart_catches_up_a_missed_run_once(redis, queue):
    clock = Clock(datetime(2026, 11, 23, 4, 0, tzinfo=UTC))  # Monday 05:00 in Berlin
    scheduler(redis, queue, clock, Repos(WEEKLY)).tick()
    clock.now += timedelta(hours=3)  # the scheduler was down at 06:00; a new one starts
    restarted = scheduler(redis, queue, clock, Repos(WEEKLY))
    assert len(restarted.tick()) == 1
    clock.now += timedelta(minutes=1)
    assert restarted.tick() == [] and len(jobs(redis)) == 1


def test_a_claim_left_by_a_crash_is_taken_again_once_it_expires(redis, queue):
    clock = Clock(datetime(2026, 11, 23, 4, 55, tzinfo=UTC))
    sched = scheduler(redis, queue, clock, Repos(WEEKLY))
    sched.tick()
    clock.now += timedelta(minutes=10)
    due = datetime(2026, 11, 23, 6, 0, tzinfo=BERLIN)
    claim = WEEKLY.run_key("octo-org/hello", due)
    redis.set(claim, "claimed", ex=300)  # a scheduler claimed the run, then died
    assert sched.tick() == []
    redis.delete(claim)  # the claim expires
    assert len(sched.tick()) == 1 and len(jobs(redis)) == 1


def test_runs_beyond_the_open_pr_limit_are_skipped_with_a_visible_reason(redis, queue):
    clock = Clock(datetime(2026, 11, 23, 4, 55, tzinfo=UTC))
    repos = Repos(WEEKLY, open_branches=["wrench/issue-1", "wrench/issue-2"])
    sched = scheduler(redis, queue, clock, repos, max_open_prs=2)
    sched.tick()
    clock.now += timedelta(minutes=10)
    assert sched.tick() == []
    reason = redis.hget(PROBLEMS_KEY, "octo-org/hello:weekly-deps").decode()
    assert "2 open Wrench pull requests (the limit is 2)" in reason
    # Its own open PR does not count: the run updates it.
    repos.open_branches = ["wrench/issue-1", "wrench/schedule-weekly-deps"]
    clock.now += timedelta(days=7)
    assert len(sched.tick()) == 1
    assert redis.hget(PROBLEMS_KEY, "octo-org/hello:weekly-deps") is None


def test_server_schedules_apply_to_every_repository(redis, queue):
    clock = Clock(datetime(2026, 11, 23, 4, 55, tzinfo=UTC))
    sched = scheduler(redis, queue, clock, Repos(), server=[WEEKLY])
    sched.tick()
    clock.now += timedelta(minutes=10)
    assert len(sched.tick()) == 1
