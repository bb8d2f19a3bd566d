"""The `wrench worker` process: an rq worker that forks ready-to-run work horses, and beside it
a maintenance process that keeps the warm pool full and reaps dead jobs' sandboxes."""

from __future__ import annotations

import logging
import multiprocessing
import os
import time

import docker
from redis import Redis
from rq import Queue, Worker

from sandbox.config import SandboxConfig
from sandbox.pool import WarmPool
from sandbox.reaper import reap
from worker import failures
from worker.agent.llm import preload_litellm
from worker.serial import is_live
from wrench.logs import configure_logging
from wrench.metrics import Metrics
from wrench.settings import Settings, load_settings

log = logging.getLogger(__name__)
MAINTENANCE_INTERVAL_S = 30


def maintain_once(settings: Settings) -> None:
    """Reap the sandboxes of dead jobs, refill the pool, publish its size."""
    redis = Redis.from_url(settings.REDIS_URL)
    client = docker.from_env()
    config = SandboxConfig.from_settings(settings)
    reap(client, config, lambda job_id: is_live(redis, job_id))
    pool = WarmPool(client, config)
    pool.refill()
    Metrics(redis).gauge("wrench_sandbox_pool_idle", len(pool.idle()))


def _maintain_forever(settings: Settings, worker_pid: int) -> None:
    configure_logging(settings)
    while os.getppid() == worker_pid:
        try:
            maintain_once(settings)
        except Exception:
            log.exception(
                "sandbox maintenance failed; trying again in %s s", MAINTENANCE_INTERVAL_S
            )
        _sleep_while_parent(worker_pid, MAINTENANCE_INTERVAL_S)
    # The worker died without stopping us (SIGKILL): a pool nobody uses must not be kept up.
    log.warning("the worker process is gone: sandbox maintenance stops")


def _sleep_while_parent(worker_pid: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and os.getppid() == worker_pid:
        time.sleep(0.5)


def on_work_horse_killed(job, retpid: int, ret_val: int, rusage) -> None:
    """Tell the user, then remove the dead job's sandbox right away rather than at the next
    maintenance round."""
    failures.on_work_horse_killed(job, retpid, ret_val, rusage)
    try:
        settings = load_settings()
        client = docker.from_env()
        reap(
            client,
            SandboxConfig.from_settings(settings),
            lambda job_id: job_id != job.id and is_live(job.connection, job_id),
        )
    except Exception:
        log.exception("could not reap the sandbox of job %s", job.id)


def run_worker(settings: Settings, burst: bool = False) -> None:
    """Preload what every job imports (litellm takes seconds), start maintenance, work."""
    preload_litellm()
    import worker.job  # noqa: F401  (so that forked work horses start with it loaded)

    configure_logging(settings)
    maintenance = multiprocessing.Process(
        target=_maintain_forever,
        args=(settings, os.getpid()),
        name="wrench-maintenance",
        daemon=True,
    )
    maintenance.start()
    redis = Redis.from_url(settings.REDIS_URL)
    queue = Queue(settings.QUEUE_NAME, connection=redis)
    worker = Worker([queue], connection=redis, work_horse_killed_handler=on_work_horse_killed)
    worker.work(burst=burst, with_scheduler=False)
