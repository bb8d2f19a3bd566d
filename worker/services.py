"""Building the worker's and the scheduler's real parts from the settings (entry points only)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from githubkit import GitHub
from redis import Redis

from worker.schedule_source import GitHubRepoSource
from worker.scheduler import Problems, Scheduler
from worker.tokens import InstallationTokens
from wrench.github import app_client
from wrench.logs import configure_logging
from wrench.queue import JobQueue
from wrench.schedules import utc_now
from wrench.settings import Settings


def bot_name(settings: Settings, app: GitHub) -> str:
    """The handle people @mention: BOT_NAME, or the App's slug."""
    return settings.BOT_NAME or app.request("GET", "/app").json()["slug"]


def job_queue(settings: Settings, redis: Redis) -> JobQueue:
    return JobQueue(redis, settings.QUEUE_NAME, settings.JOB_TIMEOUT_S)


@contextmanager
def scheduler_from_settings(settings: Settings) -> Iterator[Scheduler]:
    configure_logging(settings)
    redis = Redis.from_url(settings.REDIS_URL)
    with app_client(settings) as app:
        tokens = InstallationTokens(redis, app, settings.private_key() or "")
        problems = Problems(redis)
        login = cache(lambda: f"{bot_name(settings, app)}[bot]")
        source = GitHubRepoSource(app, tokens, settings.GITHUB_API_URL, login, problems)
        yield Scheduler(
            redis,
            job_queue(settings, redis),
            source,
            settings.SCHEDULES,
            settings.MAX_OPEN_PRS,
            utc_now,
        )
