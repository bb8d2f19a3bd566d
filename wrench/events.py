"""A job's events in Redis, so the job page can show a run live from any host."""

from __future__ import annotations

import json
from typing import Any

from redis import Redis

TTL_S = 7 * 86400
MAX_EVENTS = 5000


def _key(job_id: str) -> str:
    return f"wrench:events:{job_id}"


def append(redis: Redis, job_id: str, record: dict[str, Any]) -> None:
    """Add one (already redacted) event record; the list expires with the job."""
    with redis.pipeline(transaction=False) as pipe:
        pipe.rpush(_key(job_id), json.dumps(record, ensure_ascii=False))
        pipe.ltrim(_key(job_id), 0, MAX_EVENTS - 1)
        pipe.expire(_key(job_id), TTL_S)
        pipe.execute()


def read(redis: Redis, job_id: str, after: int = 0) -> list[dict[str, Any]]:
    """The records from index `after` on."""
    return [json.loads(raw) for raw in redis.lrange(_key(job_id), after, -1)]
