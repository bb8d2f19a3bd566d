"""`POST /slack/commands`: the `/wrench` slash command, verified, parsed, answered in 3 seconds."""

from __future__ import annotations

import fnmatch
import logging
import re
import time
from dataclasses import dataclass
from urllib.parse import parse_qs

from flask import Blueprint, current_app, jsonify, request
from redis.exceptions import RedisError
from rq.exceptions import NoSuchJobError
from rq.job import Job

from bot.signatures import verify_slack
from wrench.jobs import JobSpec, SlackReply, Trigger

log = logging.getLogger(__name__)
blueprint = Blueprint("slack", __name__)

_ISSUE = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)#(?P<number>\d+)(?:\s+(?P<text>.*))?$", re.DOTALL)
_TASK = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)\s+(?P<text>.+)$", re.DOTALL)
_STATUS = re.compile(r"^status\s+(?P<job>[\w-]+)$")

HELP = (
    "*Wrench* works on your GitHub repositories.\n"
    "• `/wrench owner/repo#123 [instructions]`: work on an issue or pull request\n"
    "• `/wrench owner/repo <task>`: do a task on the default branch and open a pull request\n"
    "• `/wrench status <job>`: how a job is doing\n"
    "• `/wrench help`: this message"
)
DENIED = (
    "You may not use Wrench on `{repo}` from here. Ask the operator to add your user or this "
    "channel to `SLACK_ACCESS`."
)
QUEUED = "Queued job `{job}` for `{target}`. I will post progress and the result here."
UNAVAILABLE = "Wrench could not queue this: its job queue is unavailable. Try again in a minute."


@dataclass(frozen=True)
class Work:
    """A parsed request for work on a repository."""

    repository: str
    number: int | None
    text: str


def parse(text: str) -> Work | str | None:
    """A Work request, a job id for `status`, or None for help."""
    text = text.strip()
    if status := _STATUS.match(text):
        return status["job"]
    if issue := _ISSUE.match(text):
        return Work(issue["repo"], int(issue["number"]), (issue["text"] or "").strip())
    if task := _TASK.match(text):
        return Work(task["repo"], None, task["text"].strip())
    return None


def allowed(access: dict[str, list[str]], repository: str, *who: str) -> bool:
    """Whether any of the Slack ids may work on the repository; deny unless listed."""
    name = repository.lower()
    patterns = [p.lower() for key in who for p in access.get(key, [])]
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _reply(text: str, outcome: str):
    current_app.extensions["wrench"].metrics.inc("wrench_slack_commands_total", outcome=outcome)
    return jsonify(response_type="ephemeral", text=text), 200


@blueprint.post("/slack/commands")
def command():
    web = current_app.extensions["wrench"]
    secret = web.settings.SLACK_SIGNING_SECRET
    if secret is None:
        return jsonify(error="SLACK_SIGNING_SECRET is not set: Slack commands are refused"), 503
    body = request.get_data(cache=True, parse_form_data=False)
    headers = request.headers
    if not verify_slack(
        secret.get_secret_value().encode(),
        body,
        headers.get("X-Slack-Request-Timestamp"),
        headers.get("X-Slack-Signature"),
        time.time(),
    ):
        return jsonify(error="bad or stale Slack signature"), 401
    form = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
    if not form.get("response_url") or not form.get("user_id"):
        return jsonify(error="not a slash command: response_url or user_id is missing"), 400
    parsed = parse(form.get("text", ""))
    if parsed is None:
        return _reply(HELP, "help")
    if isinstance(parsed, str):
        return _reply(_status(web.redis, parsed), "status")
    return _work(web, parsed, form)


def _work(web, work: Work, form: dict[str, str]):
    user, channel = form.get("user_id", ""), form.get("channel_id", "")
    if not allowed(web.settings.SLACK_ACCESS, work.repository, user, channel):
        return _reply(DENIED.format(repo=work.repository), "denied")
    spec = JobSpec(
        repository=work.repository,
        installation_id=None,
        number=work.number,
        is_pull_request=False,
        trigger=Trigger.SLACK,
        instruction=work.text,
        requester=user,
        delivery_id=f"slack-{form.get('trigger_id', '')}",
        slack=SlackReply(response_url=form["response_url"], user_id=user, channel_id=channel),
    )
    try:
        [job_id] = web.queue.enqueue(spec)
    except RedisError as exc:
        log.error("Slack command not queued, Redis is unavailable: %s", exc)
        return _reply(UNAVAILABLE, "unavailable")
    target = f"{work.repository}#{work.number}" if work.number else work.repository
    return _reply(QUEUED.format(job=job_id, target=target), "queued")


def _status(redis, job_id: str) -> str:
    try:
        job = Job.fetch(job_id, connection=redis)
    except NoSuchJobError:
        return f"There is no job `{job_id}` (jobs are kept for 7 days)."
    except RedisError:
        return UNAVAILABLE
    return f"Job `{job.id}`: *{job.get_status().value}*. {job.description}"
