"""`GET /metrics`: Prometheus text format, optionally behind a bearer token."""

from __future__ import annotations

import hmac

from flask import Blueprint, Response, current_app, jsonify, request
from rq import Queue
from rq.registry import DeferredJobRegistry, FailedJobRegistry, StartedJobRegistry

from wrench.metrics import render

blueprint = Blueprint("metrics", __name__)


def queue_gauges(queue: Queue) -> dict[tuple[tuple[str, str], ...], float]:
    """Jobs per state right now, read from rq's registries."""
    counts = {
        "queued": queue.count,
        "started": StartedJobRegistry(queue=queue).count,
        "deferred": DeferredJobRegistry(queue=queue).count,
        "failed": FailedJobRegistry(queue=queue).count,
    }
    return {(("queue", queue.name), ("state", state)): n for state, n in counts.items()}


@blueprint.get("/metrics")
def metrics():
    web = current_app.extensions["wrench"]
    token = web.settings.METRICS_TOKEN
    if token is not None:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if not hmac.compare_digest(given.encode(), token.get_secret_value().encode()):
            return jsonify(error="a valid METRICS_TOKEN bearer token is required"), 401
    queue = Queue(web.settings.QUEUE_NAME, connection=web.redis)
    text = render(web.redis, {"wrench_queue_jobs": queue_gauges(queue)})
    return Response(text, mimetype="text/plain; version=0.0.4")
