"""`POST /api/github/webhooks`: verify the signature, de-duplicate, route, enqueue, answer."""

from __future__ import annotations

import json
import logging
import re

from flask import Blueprint, current_app, g, jsonify, request
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


Answer = tuple[int, dict, str | None]
DELIVERIES = "wrench_webhook_deliveries_total"
_EVENT_NAME = re.compile(r"[a-z_]{1,40}")


def _error(status: int, reason: str, outcome: str) -> Answer:
    return status, {"error": reason}, outcome


@blueprint.post("/api/github/webhooks")
def receive():
    web = current_app.extensions["wrench"]
    status, body, outcome = _receive(web)
    if outcome is not None:  # None: counted with the jobs, in the same Redis transaction
        web.metrics.inc(DELIVERIES, **_labels(outcome))
    return jsonify(body), status


def _labels(outcome: str) -> dict[str, str]:
    # The event header becomes a label only once the signature vouches for it, and only in
    # GitHub's own shape: anyone can send requests, and labels live in Redis for good.
    event = g.get("verified_event", "unverified")
    return {"event": event if _EVENT_NAME.fullmatch(event) else "other", "outcome": outcome}


def _receive(web) -> Answer:
    if web.webhook_secret is None:
        reason = "WEBHOOK_SECRET is not set: this server refuses webhooks until it is"
        return _error(503, reason, "not_configured")
    if (request.content_length or 0) > current_app.config["MAX_CONTENT_LENGTH"]:
        return _error(413, "body over 25 MB", "too_large")
    body = request.get_data(cache=False)
    if not verify_github(web.webhook_secret, body, request.headers.get("X-Hub-Signature-256")):
        return _error(401, "bad or missing X-Hub-Signature-256", "bad_signature")
    event = request.headers.get("X-GitHub-Event")
    delivery_id = request.headers.get("X-GitHub-Delivery")
    if not event or not delivery_id:
        return _error(400, "missing X-GitHub-Event or X-GitHub-Delivery header", "malformed")
    logs.delivery_id.set(delivery_id)
    g.verified_event = event
    try:
        payload = json.loads(body)
    except ValueError:
        return _error(400, "body is not JSON", "malformed")
    if not isinstance(payload, dict):
        return _error(400, "body is not a JSON object", "malformed")
    return _handle(web, Delivery(delivery_id, event, payload))


def _handle(web, delivery: Delivery) -> Answer:
    if delivery.event in PASSIVE_EVENTS:
        return 200, {"ignored": f"{delivery.event} needs no work"}, "ignored"
    try:
        config = web.trigger_config()
        decisions = router.dispatch(delivery, config)
    except (MalformedPayload, KeyError, TypeError, ValidationError) as exc:
        return _error(400, f"malformed {delivery.event} payload: {exc}", "malformed")
    specs = [d for d in decisions if isinstance(d, JobSpec)]
    if not specs:
        reasons = [d.reason for d in decisions if isinstance(d, Ignore)]
        reason = "; ".join(reasons) or f"no trigger for {delivery.event}.{delivery.action}"
        log.info("delivery %s ignored: %s", delivery.id, reason)
        return 200, {"ignored": reason}, "ignored"
    return _enqueue(web, delivery, specs)


def _enqueue(web, delivery: Delivery, specs: list[JobSpec]) -> Answer:
    key = f"wrench:delivery:{delivery.id}"
    try:
        if not web.redis.set(key, "1", nx=True, ex=DELIVERY_TTL_S):
            return 200, {"ignored": "duplicate delivery", "jobs": []}, "duplicate"
        try:
            with web.redis.pipeline() as pipe:
                job_ids = web.queue.enqueue(*specs, pipeline=pipe)
                web.metrics.inc(DELIVERIES, pipeline=pipe, **_labels("queued"))
                pipe.execute()
        except RedisError:
            web.redis.delete(key)
            raise
    except RedisError as exc:
        log.error("delivery %s not queued, Redis is unavailable: %s", delivery.id, exc)
        reason = "the job queue is unavailable; redeliver this webhook later"
        return _error(503, reason, "unavailable")
    log.info("delivery %s queued jobs %s", delivery.id, ",".join(job_ids))
    return 202, {"jobs": job_ids}, None
