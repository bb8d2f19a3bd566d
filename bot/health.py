"""`GET /healthz`: the web process is up, and whether it can reach Redis."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify
from redis.exceptions import RedisError

blueprint = Blueprint("health", __name__)


@blueprint.get("/healthz")
def healthz():
    try:
        current_app.extensions["wrench"].redis.ping()
        redis = "reachable"
    except RedisError as exc:
        redis = f"unreachable: {type(exc).__name__}"
    return jsonify(status="ok", redis=redis), 200
