"""`wrench jobs`, `wrench retry` and `wrench cancel`: the agent-job queue from the command line."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from redis import Redis
from redis.exceptions import ConnectionError as RedisUnreachable
from redis.exceptions import TimeoutError as RedisTimeout
from rq import Queue
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus

from wrench.commands import CommandError
from wrench.jobs import JobSpec
from wrench.links import job_link
from wrench.queue import JOB_FUNCTION, JobQueue
from wrench.settings import Settings, load_settings

ENDED = {JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED}
WAITING = {JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED}
CANCEL_GRACE_S = 600
"""How long past JOB_TIMEOUT_S a stop request is kept, in case the job has not seen it yet."""
COLUMNS = "{id:<36}  {state:<9}  {age:>6}  {outcome:<14}  {description}"
NO_LINKS = "(no job page links: set JOB_LINK_SECRET or WEBHOOK_SECRET)"
UNKNOWN = "no job {id!r} in Redis (ended jobs are kept 7 days): `wrench jobs` lists the known ones"


@contextmanager
def _redis(settings: Settings) -> Iterator[Redis]:
    """The queue's Redis, with a lost connection turned into one clear line."""
    redis = Redis.from_url(settings.REDIS_URL, socket_connect_timeout=5, socket_timeout=10)
    try:
        yield redis
    except (RedisUnreachable, RedisTimeout) as error:
        raise CommandError(f"cannot reach Redis (REDIS_URL): {error}") from None
    finally:
        redis.close()


def list_jobs(args: argparse.Namespace) -> int:
    settings = load_settings()
    with _redis(settings) as redis:
        jobs = recent_jobs(Queue(settings.QUEUE_NAME, connection=redis), args.limit)
        rows = [_row(job) for job in jobs]
    if not rows:
        print(f"no jobs in queue {settings.QUEUE_NAME}")
        return 0
    print(COLUMNS.format(id="ID", state="STATE", age="AGE", outcome="OUTCOME", description="WHAT"))
    for row in rows:
        print(COLUMNS.format(**row))
        print(f"{'':<38}{_link(settings, row['id']) or NO_LINKS}")
    return 0


def recent_jobs(queue: Queue, limit: int) -> list[Job]:
    """The queue's jobs in every state rq keeps, newest first."""
    ids = set(queue.get_job_ids())
    registries = (
        queue.started_job_registry,
        queue.deferred_job_registry,
        queue.scheduled_job_registry,
        queue.finished_job_registry,
        queue.failed_job_registry,
        queue.canceled_job_registry,
    )
    for registry in registries:
        ids.update(registry.get_job_ids())
    jobs = [job for job in Job.fetch_many(sorted(ids), queue.connection) if job is not None]
    return sorted(jobs, key=lambda job: _utc(job.created_at), reverse=True)[:limit]


def _row(job: Job) -> dict[str, str]:
    status = job.get_status(refresh=False)
    outcome = "-"
    if status == JobStatus.FINISHED and isinstance(result := job.return_value(), dict):
        outcome = str(result.get("outcome", "-"))
    return {
        "id": job.id,
        "state": str(status.value if status else "gone"),
        "age": age(_utc(job.created_at)),
        "outcome": outcome,
        "description": job.description or "",
    }


def retry(args: argparse.Namespace) -> int:
    """Queue an ended job's spec again, as a new job."""
    settings = load_settings()
    with _redis(settings) as redis:
        job = _fetch(redis, settings, args.job)
        status = job.get_status()
        if status not in ENDED:
            raise CommandError(
                f"job {job.id} is {status.value}: only an ended job can be retried "
                f"(`wrench cancel {job.id}` first)"
            )
        spec = _spec(job)
        queue = JobQueue(redis, settings.QUEUE_NAME, settings.JOB_TIMEOUT_S)
        new_id = queue.enqueue(spec)[0]
    print(f"queued job {new_id}, a retry of job {job.id}: {spec.describe()}")
    if link := _link(settings, new_id):
        print(link)
    return 0


def cancel(args: argparse.Namespace) -> int:
    """Cancel a waiting job; ask a running one to stop (with `--now`, kill it)."""
    settings = load_settings()
    with _redis(settings) as redis:
        job = _fetch(redis, settings, args.job)
        status = job.get_status()
        if status in WAITING:
            job.cancel()
            print(f"canceled job {job.id}: it was {status.value} and will not run")
            return 0
        if status != JobStatus.STARTED:
            raise CommandError(f"job {job.id} has already ended ({status.value}): nothing to stop")
        _stop(redis, settings, job.id, args.now)
    return 0


def _stop(redis: Redis, settings: Settings, job_id: str, now: bool) -> None:
    from worker.services import cancel_key

    redis.set(cancel_key(job_id), "1", ex=settings.JOB_TIMEOUT_S + CANCEL_GRACE_S)
    print(f"asked job {job_id} to stop: it stops before its next step and reports how far it got")
    if not now:
        print("(`wrench cancel --now` kills it at once)")
        return
    from rq.command import send_stop_job_command

    try:
        send_stop_job_command(redis, job_id)
    except InvalidJobOperation as error:
        raise CommandError(f"could not kill job {job_id} at once: {error}") from None
    print(f"told its worker to kill job {job_id} now")


def _fetch(redis: Redis, settings: Settings, job_id: str) -> Job:
    try:
        job = Job.fetch(job_id, connection=redis)
    except NoSuchJobError:
        raise CommandError(UNKNOWN.format(id=job_id)) from None
    if job.origin != settings.QUEUE_NAME:
        raise CommandError(
            f"job {job_id} is in queue {job.origin!r}, not in QUEUE_NAME {settings.QUEUE_NAME!r}"
        )
    return job


def _spec(job: Job) -> JobSpec:
    if job.func_name != JOB_FUNCTION or not job.args:
        raise CommandError(f"job {job.id} is not an agent job ({job.func_name}): cannot retry it")
    return JobSpec.model_validate(job.args[0])


def _link(settings: Settings, job_id: str) -> str | None:
    try:
        return job_link(settings, job_id)
    except ValueError:  # no secret to sign links with
        return None


def age(created: datetime, now: datetime | None = None) -> str:
    """`42 s`, `5 min`, `3 h` or `2 d`."""
    seconds = max(0, int(((now or datetime.now(UTC)) - created).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _utc(moment: datetime | None) -> datetime:
    if moment is None:
        return datetime.fromtimestamp(0, UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
