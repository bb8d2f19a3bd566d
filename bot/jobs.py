"""`GET /jobs/<id>`: a job's page, live while it runs, behind a signed and expiring link."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, jsonify, render_template, request
from rq.exceptions import NoSuchJobError
from rq.job import Job

from wrench import events
from wrench.links import verify

blueprint = Blueprint("jobs", __name__)


def _job(job_id: str) -> Job:
    web = current_app.extensions["wrench"]
    args = request.args
    if not verify(web.settings, job_id, args.get("expires", ""), args.get("sig", "")):
        abort(403, "this link is invalid or has expired")
    try:
        return Job.fetch(job_id, connection=web.redis)
    except NoSuchJobError:
        abort(404, "no such job (jobs are kept for 7 days)")


def summary(job: Job) -> dict:
    """What the page header shows."""
    spec = job.args[0] if job.args else {}
    run = job.meta.get("run") or {}
    return {
        "id": job.id,
        "status": job.get_status().value,
        "repository": spec.get("repository"),
        "number": spec.get("number"),
        "requester": spec.get("requester"),
        "trigger": spec.get("trigger"),
        "enqueued_at": job.enqueued_at.isoformat() if job.enqueued_at else None,
        "outcome": (job.return_value() or {}).get("outcome") if job.is_finished else None,
        "url": (job.return_value() or {}).get("url") if job.is_finished else None,
        "steps": run.get("steps"),
        "cost_usd": run.get("cost_usd"),
        "duration_s": run.get("duration_s"),
    }


@blueprint.get("/jobs/<job_id>")
def page(job_id: str):
    job = _job(job_id)
    return render_template("job.html", job=summary(job), query=request.query_string.decode())


@blueprint.get("/jobs/<job_id>/events")
def job_events(job_id: str):
    job = _job(job_id)
    after = request.args.get("after", "0")
    records = events.read(
        current_app.extensions["wrench"].redis, job.id, int(after) if after.isdigit() else 0
    )
    return jsonify(job=summary(job), events=records)
