"""Metrics kept in Redis, so that every process (web workers, work horses, the scheduler) adds
to the same counters, and rendered in Prometheus' text format by `GET /metrics`."""

from __future__ import annotations

import logging
import re
from collections import defaultdict

from redis import Redis
from redis.client import Pipeline
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

COUNTERS = "wrench:metrics:counters"
GAUGES = "wrench:metrics:gauges"
DURATION_BUCKETS = (5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600)

HELP = {
    "wrench_webhook_deliveries_total": (
        "counter",
        "GitHub webhook deliveries by event and outcome.",
    ),
    "wrench_slack_commands_total": ("counter", "Slack slash commands by outcome."),
    "wrench_jobs_total": ("counter", "Finished jobs by trigger and outcome."),
    "wrench_job_duration_seconds": ("histogram", "Wall-clock time of finished jobs."),
    "wrench_model_tokens_total": ("counter", "Model tokens used by jobs, by kind."),
    "wrench_model_cost_usd_total": ("counter", "Model spend of jobs in US dollars."),
    "wrench_queue_jobs": ("gauge", "Jobs in the queue's registries, by state."),
    "wrench_sandbox_pool_idle": ("gauge", "Started idle sandboxes waiting in the warm pool."),
}


def _field(name: str, labels: dict[str, str]) -> str:
    # The separators of this encoding never appear inside a value.
    clean = {k: re.sub(r"[|,=\n]", "_", str(v)) for k, v in labels.items()}
    return name + "|" + ",".join(f"{k}={v}" for k, v in sorted(clean.items()))


class Metrics:
    """Records metrics; a Redis failure is logged and never breaks the caller."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    def inc(
        self, name: str, amount: float = 1, pipeline: Pipeline | None = None, **labels: str
    ) -> None:
        """Add to a counter; with `pipeline`, as part of the caller's transaction."""
        if pipeline is not None:
            pipeline.hincrbyfloat(COUNTERS, _field(name, labels), amount)
            return
        self._write(lambda pipe: pipe.hincrbyfloat(COUNTERS, _field(name, labels), amount))

    def observe(self, name: str, value: float, **labels: str) -> None:
        """Add one observation to a histogram with DURATION_BUCKETS."""

        def write(pipe) -> None:
            # Every bucket is written, with 0 where the value is above it, so all exist.
            for bound in (*DURATION_BUCKETS, "+Inf"):
                field = _field(f"{name}_bucket", {**labels, "le": str(bound)})
                pipe.hincrbyfloat(COUNTERS, field, int(bound == "+Inf" or value <= bound))
            pipe.hincrbyfloat(COUNTERS, _field(f"{name}_sum", labels), value)
            pipe.hincrbyfloat(COUNTERS, _field(f"{name}_count", labels), 1)

        self._write(write)

    def gauge(self, name: str, value: float, **labels: str) -> None:
        self._write(lambda pipe: pipe.hset(GAUGES, _field(name, labels), value))

    def _write(self, commands) -> None:
        try:
            with self._redis.pipeline(transaction=False) as pipe:
                commands(pipe)
                pipe.execute()
        except RedisError as exc:
            log.warning("metrics not recorded: %s", exc)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _order(field: str) -> tuple:
    """Sort key that puts a histogram's buckets in increasing order of `le`."""
    name, _, labels = field.partition("|")
    pairs = dict(pair.split("=", 1) for pair in labels.split(",") if pair)
    le = pairs.pop("le", None)
    bound = float("inf") if le == "+Inf" else float(le) if le else 0.0
    return name.removesuffix("_bucket"), sorted(pairs.items()), name, bound


def render(redis: Redis, gauges: dict[str, dict[tuple[tuple[str, str], ...], float]]) -> str:
    """Everything recorded, plus gauges measured now, in Prometheus' text exposition format."""
    values = {k.decode(): float(v) for k, v in redis.hgetall(COUNTERS).items()}
    values |= {k.decode(): float(v) for k, v in redis.hgetall(GAUGES).items()}
    for name, series in gauges.items():
        values |= {_field(name, dict(labels)): value for labels, value in series.items()}
    samples: dict[str, list[str]] = defaultdict(list)
    for raw in sorted(values, key=_order):
        name, _, labels = raw.partition("|")
        pairs = [pair.split("=", 1) for pair in labels.split(",") if pair]
        rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
        family = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
        family = family if family in HELP else name
        samples[family].append(f"{name}{{{rendered}}} {values[raw]:g}")
    lines = []
    for family in sorted(samples):
        kind, text = HELP.get(family, ("untyped", ""))
        lines += [f"# HELP {family} {text}", f"# TYPE {family} {kind}", *samples[family]]
    return "\n".join(lines) + "\n"
