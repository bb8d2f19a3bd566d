"""Putting job specs on the rq queue by dotted path, so the web tier never imports the worker."""

from __future__ import annotations

from redis import Redis
from redis.client import Pipeline
from rq import Callback, Queue
from rq.job import Dependency

from wrench.jobs import JobSpec

JOB_FUNCTION = "worker.job.run_job"
# Runs when a job fails, including when rq finds it abandoned by a dead worker.
FAILURE_CALLBACK = "worker.failures.on_job_failure"
RESULT_TTL_S = 7 * 86400


class JobQueue:
    """The agent-job queue; every job gets an explicit timeout."""

    def __init__(self, redis: Redis, name: str, job_timeout_s: int) -> None:
        self._queue = Queue(name, connection=redis)
        self._job_timeout_s = job_timeout_s

    def enqueue(
        self,
        *specs: JobSpec,
        after: str | None = None,
        meta: dict | None = None,
        pipeline: Pipeline | None = None,
    ) -> list[str]:
        """Queue jobs in one Redis transaction and return their ids.

        `after` names a job they wait for, whether it succeeds or fails. With `pipeline`, the
        jobs join the caller's transaction, which the caller executes.
        """
        depends_on = Dependency(jobs=[after], allow_failure=True) if after else None
        pipe = pipeline if pipeline is not None else self._queue.connection.pipeline()
        jobs = [
            self._queue.enqueue(
                JOB_FUNCTION,
                spec.model_dump(mode="json"),
                job_timeout=self._job_timeout_s,
                result_ttl=RESULT_TTL_S,
                failure_ttl=RESULT_TTL_S,
                description=spec.describe(),
                on_failure=Callback(FAILURE_CALLBACK),
                depends_on=depends_on,
                meta=meta,
                pipeline=pipe,
            )
            for spec in specs
        ]
        if pipeline is None:
            pipe.execute()
        return [job.id for job in jobs]
