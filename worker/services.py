"""Building the worker's and the scheduler's real parts from the settings (entry points only)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import docker
from githubkit import GitHub
from redis import Redis
from rq.job import Job

from sandbox.config import SandboxConfig
from sandbox.pool import WarmPool
from worker.agent import LiteLLMModel, LLMConfig
from worker.runner import Services
from worker.schedule_source import GitHubRepoSource
from worker.scheduler import Problems, Scheduler
from worker.tokens import InstallationTokens
from worker.work import JobTools
from wrench import events
from wrench.github import app_client
from wrench.links import job_link
from wrench.logs import configure_logging
from wrench.metrics import Metrics
from wrench.queue import JobQueue
from wrench.schedules import utc_now
from wrench.settings import Settings


def app_slug(app: GitHub) -> str:
    """The App's slug (its bot user is `<slug>[bot]`), from GitHub."""
    return app.request("GET", "/app").json()["slug"]


def job_queue(settings: Settings, redis: Redis) -> JobQueue:
    return JobQueue(redis, settings.QUEUE_NAME, settings.JOB_TIMEOUT_S)


@contextmanager
def scheduler_from_settings(settings: Settings) -> Iterator[Scheduler]:
    configure_logging(settings)
    redis = Redis.from_url(settings.REDIS_URL)
    with app_client(settings) as app:
        tokens = InstallationTokens(redis, app, settings.private_key() or "")
        problems = Problems(redis)
        login = cache(lambda: f"{app_slug(app)}[bot]")
        source = GitHubRepoSource(app, tokens, settings.GITHUB_API_URL, login, problems)
        yield Scheduler(
            redis,
            job_queue(settings, redis),
            source,
            settings.SCHEDULES,
            settings.MAX_OPEN_PRS,
            utc_now,
        )


@contextmanager
def job_services(settings: Settings) -> Iterator[Services]:
    """The parts one job uses. Built in the work horse: clients made before rq's fork would
    share sockets with the parent."""
    redactor = configure_logging(settings)
    redis = Redis.from_url(settings.REDIS_URL)
    pool = WarmPool(docker.from_env(), SandboxConfig.from_settings(settings))

    def tools(job: Job) -> JobTools:
        return JobTools(
            settings=settings,
            job_id=job.id,
            sandboxes=pool,
            llm=lambda model: LiteLLMModel(
                LLMConfig.from_settings(settings, model=model or settings.LLM_MODEL)
            ),
            refill=pool.refill_in_background,
            workdir=settings.DATA_DIR.resolve() / "jobs" / job.id,
            trajectory=trajectory_path(settings, job.id),
            publish_event=lambda record: events.append(redis, job.id, record),
            cancelled=lambda: bool(redis.exists(cancel_key(job.id))),
        )

    with app_client(settings) as app:
        yield Services(
            redis=redis,
            app=app,
            tokens=InstallationTokens(redis, app, settings.private_key() or ""),
            queue=job_queue(settings, redis),
            metrics=Metrics(redis),
            redactor=redactor,
            app_slug=(slug := cache(lambda: app_slug(app))),
            handle=lambda: settings.BOT_NAME or slug(),
            footer=lambda job_id: footer(settings, job_id),
            tools=tools,
            api_url=settings.GITHUB_API_URL,
            trigger_label=settings.TRIGGER_LABEL,
            timeout_s=settings.JOB_TIMEOUT_S,
        )


def trajectory_path(settings: Settings, job_id: str) -> Path:
    return settings.DATA_DIR / "trajectories" / f"{job_id}.jsonl"


def cancel_key(job_id: str) -> str:
    """Set to ask a running job to stop at its next step."""
    return f"wrench:cancel:{job_id}"


def footer(settings: Settings, job_id: str) -> str:
    """`job <id>`, linked to the job page when PUBLIC_URL says where this server is."""
    if settings.PUBLIC_URL is None:
        return f"job {job_id}"
    return f"[job {job_id[:8]}: details]({job_link(settings, job_id)})"
