"""The rq job function: `worker.job.run_job`, as the web tier enqueues it by dotted path."""

from __future__ import annotations

from rq import get_current_job

from worker.runner import JobRunner
from worker.services import job_services
from wrench import logs
from wrench.jobs import JobSpec
from wrench.settings import load_settings


def run_job(spec: dict) -> dict:
    """Run one job in the current work horse; returns its outcome for rq's result."""
    job = get_current_job()
    logs.job_id.set(job.id)
    with job_services(load_settings()) as services:
        return JobRunner(services, job).run(JobSpec.model_validate(spec))
