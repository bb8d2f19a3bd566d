"""`wrench jobs`, `retry` and `cancel` against the test Redis, with real rq workers."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus

from tests.cli.conftest import Cli
from tests.conftest import free_port
from worker.services import cancel_key
from wrench.jobs import JobSpec, Trigger
from wrench.queue import JOB_FUNCTION, JobQueue

RQ = str(Path(sys.executable).with_name("rq"))


def spec(number: int) -> JobSpec:
    return JobSpec(
        repository="octo-org/hello",
        installation_id=4242,
        number=number,
        is_pull_request=False,
        trigger=Trigger.LABEL,
        instruction="Greeting lacks punctuation",
        requester="octocat",
        delivery_id=f"delivery-{number}",
    )


@pytest.fixture
def queue_name(cli: Cli) -> str:
    return cli.env["QUEUE_NAME"]


@pytest.fixture
def jobs(redis: Redis, queue_name: str) -> JobQueue:
    return JobQueue(redis, queue_name, job_timeout_s=600)


@pytest.fixture
def worker(redis_url: str, queue_name: str) -> Iterator[Callable[[], subprocess.Popen]]:
    """Starts a real rq worker (burst mode) on the queue; stopped at the end of the test."""
    started = []

    def start() -> subprocess.Popen:
        command = [RQ, "worker", "--burst", "--url", redis_url, queue_name]
        started.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        return started[-1]

    yield start
    for process in started:
        process.terminate()
        process.wait(30)


def wait_for(job: Job, *statuses: JobStatus, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while job.get_status(refresh=True) not in statuses:
        assert time.monotonic() < deadline, f"job is {job.get_status()}, not {statuses}"
        time.sleep(0.1)


def test_jobs_lists_every_state_newest_first(
    cli: Cli, redis: Redis, jobs: JobQueue, worker, queue_name: str
) -> None:
    plain = Queue(queue_name, connection=redis)
    failed = plain.enqueue("builtins.int", "not a number", description="a job that fails")
    time.sleep(0.01)
    done = plain.enqueue("builtins.dict", outcome="pr_opened", description="a job that opens a PR")
    worker().wait(60)
    time.sleep(0.01)
    (queued,) = jobs.enqueue(spec(1))
    time.sleep(0.01)
    (deferred,) = jobs.enqueue(spec(2), after=queued)

    result = cli("jobs")

    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1::2]]
    assert [(row[0], row[1]) for row in rows] == [
        (deferred, "deferred"),
        (queued, "queued"),
        (done.id, "finished"),
        (failed.id, "failed"),
    ]
    assert rows[2][4] == "pr_opened" and rows[0][4] == "-"
    assert " ".join(rows[1][5:]) == "octo-org/hello#1 (label) by octocat"
    links = result.stdout.splitlines()[2::2]
    assert links[0].strip().startswith(f"http://wrench.test/jobs/{deferred}?expires=")


def test_retry_queues_an_ended_jobs_spec_as_a_new_job(
    cli: Cli, redis: Redis, jobs: JobQueue
) -> None:
    (job_id,) = jobs.enqueue(spec(7))

    too_early = cli("retry", job_id)
    canceled = cli("cancel", job_id)
    retried = cli("retry", job_id)
    unknown = cli("retry", "no-such-job")

    assert too_early.returncode == 1
    assert f"job {job_id} is queued: only an ended job can be retried" in too_early.stderr
    assert canceled.returncode == 0 and "it was queued and will not run" in canceled.stdout
    assert Job.fetch(job_id, connection=redis).get_status() == JobStatus.CANCELED
    assert retried.returncode == 0, retried.stderr
    new_id = retried.stdout.split()[2].rstrip(",")
    assert f"a retry of job {job_id}: octo-org/hello#7 (label) by octocat" in retried.stdout
    new = Job.fetch(new_id, connection=redis)
    assert new_id != job_id and new.get_status() == JobStatus.QUEUED
    assert new.func_name == JOB_FUNCTION and JobSpec.model_validate(new.args[0]) == spec(7)
    assert unknown.returncode == 1
    assert "no job 'no-such-job' in Redis" in unknown.stderr


def test_cancel_asks_a_running_job_to_stop_and_now_kills_it(
    cli: Cli, redis: Redis, worker, queue_name: str
) -> None:
    job = Queue(queue_name, connection=redis).enqueue(time.sleep, 120, job_timeout=300)
    running = worker()
    wait_for(job, JobStatus.STARTED)

    polite = cli("cancel", job.id)
    assert polite.returncode == 0, polite.stderr
    assert f"asked job {job.id} to stop: it stops before its next step" in polite.stdout
    assert redis.get(cancel_key(job.id)) == b"1" and redis.ttl(cancel_key(job.id)) > 0
    assert job.get_status(refresh=True) == JobStatus.STARTED  # cooperative: rq is not involved

    now = cli("cancel", "--now", job.id)
    assert now.returncode == 0, now.stderr
    assert f"told its worker to kill job {job.id} now" in now.stdout
    wait_for(job, JobStatus.STOPPED)
    running.wait(30)

    again = cli("cancel", job.id)
    assert again.returncode == 1
    assert f"job {job.id} has already ended (stopped): nothing to stop" in again.stderr


def test_an_unreachable_redis_is_one_clear_line(cli: Cli) -> None:
    result = cli("jobs", REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")

    assert result.returncode == 1
    assert result.stderr.startswith("wrench: cannot reach Redis (REDIS_URL):")
    assert "Traceback" not in result.stderr
