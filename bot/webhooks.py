"""`POST /api/github/webhooks`: verify the signature, de-duplicate, route, enqueue, answer."""

from __future__ import annotations

import json
import logging

from flask import Blueprint, current_app, jsonify, request
from pydantic import ValidationError
from redis.exceptions import RedisError

from bot.router import Delivery, Ignore
from bot.signatures import verify_github
from bot.triggers import MalformedPayload, router
from wrench import logs
from wrench.jobs import JobSpec

log = logging.getLogger(__name__)
blueprint = Blueprint("github", __name__)

# GitHub keeps redeliveries possible for 3 days; keep ids a little longer.
DELIVERY_TTL_S = 3 * 86400 + 3600
PASSIVE_EVENTS = {"ping", "installation", "installation_repositories"}


def _error(status: int, reason: str):
    return jsonify(error=reason), status


@blueprint.post("/api/github/webhooks")
def receive():
    web = current_app.extensions["wrench"]
    if web.webhook_secret is None:
        return _error(503, "WEBHOOK_SECRET is not set: this server refuses webhooks until it is")
    body = request.get_data(cache=False)
    if not verify_github(web.webhook_secret, body, request.headers.get("X-Hub-Signature-256")):
        return _error(401, "bad or missing X-Hub-Signature-256")
    event = request.headers.get("X-GitHub-Event")
    delivery_id = request.headers.get("X-GitHub-Delivery")
    if not event or not delivery_id:
        return _error(400, "missing X-GitHub-Event or X-GitHub-Delivery header")
    logs.delivery_id.set(delivery_id)
    try:
        payload = json.loads(body)
    except ValueError:
        return _error(400, "body is not JSON")
    if not isinstance(payload, dict):
        return _error(400, "body is not a JSON object")
    return _handle(web, Delivery(delivery_id, event, payload))


def _handle(web, delivery: Delivery):
    if delivery.event in PASSIVE_EVENTS:
        return jsonify(ignored=f"{delivery.event} needs no work"), 200
    try:
        config = web.trigger_config()
        decisions = router.dispatch(delivery, config)
    except (MalformedPayload, KeyError, TypeError, ValidationError) as exc:
        return _error(400, f"malformed {delivery.event} payload: {exc}")
    specs = [d for d in decisions if isinstance(d, JobSpec)]
    if not specs:
        reasons = [d.reason for d in decisions if isinstance(d, Ignore)]
        reason = "; ".join(reasons) or f"no trigger for {delivery.event}.{delivery.action}"
        log.info("delivery %s ignored: %s", delivery.id, reason)
        return jsonify(ignored=reason), 200
    return _enqueue(web, delivery, specs)


def _enqueue(web, delivery: Delivery, specs: list[JobSpec]):
    key = f"wrench:delivery:{delivery.id}"
    try:
        if not web.redis.set(key, "1", nx=True, ex=DELIVERY_TTL_S):
            return jsonify(ignored="duplicate delivery", jobs=[]), 200
        try:
            job_ids = web.queue.enqueue(*specs)
        except RedisError:
            web.redis.delete(key)
            raise
    except RedisError as exc:
        log.error("delivery %s not queued, Redis is unavailable: %s", delivery.id, exc)
        return _error(503, "the job queue is unavailable; redeliver this webhook later")
    log.info("delivery %s queued jobs %s", delivery.id, ",".join(job_ids))
    return jsonify(jobs=job_ids), 202
