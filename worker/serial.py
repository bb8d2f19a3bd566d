"""One job at a time per issue or pull request: later triggers wait behind the running one."""

from __future__ import annotations

from redis import Redis
from rq.job import Job, JobStatus

from wrench.jobs import JobSpec
from wrench.queue import JobQueue

LIVE = {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.DEFERRED, JobStatus.SCHEDULED}
# Compare-and-delete, so a job never releases a lock another job now holds.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"


def _key(spec: JobSpec) -> str:
    return f"wrench:running:{spec.repository}#{spec.number}"


def claim(redis: Redis, spec: JobSpec, job_id: str, ttl_s: int) -> str | None:
    """Take the issue's lock; the id of the live job holding it when it is taken."""
    key = _key(spec)
    for _ in range(3):
        if redis.set(key, job_id, nx=True, ex=ttl_s):
            return None
        holder = (redis.get(key) or b"").decode()
        if holder == job_id:
            return None
        if holder and is_live(redis, holder):
            return holder
        # The holder died without releasing: take over from it.
        redis.eval(_RELEASE, 1, key, holder)
    raise RuntimeError(f"could not take the lock on {spec.repository}#{spec.number}")


def release(redis: Redis, spec: JobSpec, job_id: str) -> None:
    redis.eval(_RELEASE, 1, _key(spec), job_id)


def queue_behind(queue: JobQueue, spec: JobSpec, holder_id: str, meta: dict) -> str:
    """Queue the job again, to run when the holder ends however it ends; the new job's id."""
    [job_id] = queue.enqueue(spec, after=holder_id, meta=meta)
    return job_id


def is_live(redis: Redis, job_id: str) -> bool:
    """Whether the job still waits or runs (a dead worker's job stops being live once rq
    notices: at once for a killed work horse, at the next registry cleanup otherwise)."""
    try:
        return Job.fetch(job_id, connection=redis).get_status() in LIVE
    except Exception:  # NoSuchJobError, or a job that cannot be read: not live
        return False
