"""Slack commands and scheduled runs end in the same job as a GitHub trigger."""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import UTC, datetime
from urllib.parse import urlencode

import pytest

from bot.signatures import slack_signature
from tests.e2e.conftest import REPO, SLACK_SECRET
from tests.e2e.test_issue_to_pr import FIX
from tests.fakes.slack import FakeSlack
from wrench.jobs import JobSpec, Trigger
from wrench.queue import JobQueue


@pytest.fixture
def slack():
    with FakeSlack() as fake:
        yield fake


def command(stack, slack, text: str) -> dict:
    body = urlencode(
        {
            "team_id": "T1",
            "channel_id": "C1",
            "user_id": "U_ALICE",
            "command": "/wrench",
            "text": text,
            "trigger_id": "9.9.9",
            "response_url": slack.url,
        }
    ).encode()
    timestamp = str(int(time.time()))
    request = urllib.request.Request(
        f"{stack.web_url}/slack/commands",
        data=body,
        method="POST",
        headers={
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": slack_signature(SLACK_SECRET.encode(), timestamp, body),
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def test_a_slack_command_on_an_issue_opens_a_pr_and_reports_to_slack(stack, slack):
    stack.model.replies[:] = FIX
    ack = command(stack, slack, f"{REPO}#1 keep it short")
    job_id = ack["text"].split("`")[1]
    assert stack.wait(job_id).return_value()["outcome"] == "pull_request", stack.log("worker")

    [pull] = stack.github.open_pulls(REPO)
    assert 1 <= len(slack.posts) <= 5
    assert pull["html_url"] in slack.texts()[-1]
    assert all(post["response_type"] == "ephemeral" for post in slack.posts)
    # The issue's own readers see the work too.
    [comment] = stack.github.issue_comments(REPO, 1)
    assert f"#{pull['number']}" in comment["body"]


def test_a_slack_task_on_the_default_branch_opens_a_pr_without_fixes(stack, slack):
    stack.model.replies[:] = FIX
    job_id = command(stack, slack, f"{REPO} make greet end with an exclamation mark")["text"]
    job = stack.wait(job_id.split("`")[1])
    assert job.return_value()["outcome"] == "pull_request", stack.log("worker")
    [pull] = stack.github.open_pulls(REPO)
    assert pull["head"]["ref"].startswith("wrench/task-") and "Fixes" not in pull["body"]
    assert pull["title"] == "make greet end with an exclamation mark"
    assert stack.github.issue_comments(REPO, 1) == []


def test_a_repository_without_the_app_is_answered_in_slack(stack, slack):
    job_id = command(stack, slack, "octo-org/not-installed#3 fix it")["text"].split("`")[1]
    assert stack.wait(job_id).return_value()["outcome"] == "not_installed"
    assert slack.texts() == [
        "Wrench cannot work on `octo-org/not-installed`: the GitHub App is not installed there."
    ]
    assert stack.llm.requests == []


def test_a_scheduled_run_opens_a_pr_then_updates_it(stack):
    stack.model.replies[:] = FIX
    spec = JobSpec(
        repository=REPO,
        installation_id=4242,
        number=None,
        is_pull_request=False,
        trigger=Trigger.SCHEDULE,
        instruction="Punctuate the greeting.",
        requester="schedule weekly",
        delivery_id=f"s-{datetime.now(UTC)}",
        schedule="weekly",
    )
    queue = JobQueue(stack.redis, stack.env["QUEUE_NAME"], 120)
    [first] = queue.enqueue(spec)
    assert stack.wait(first).return_value()["outcome"] == "pull_request", stack.log("worker")
    # The next run finds its PR still open: it adds to it rather than opening another.
    [second] = queue.enqueue(spec)
    assert stack.wait(second).return_value()["outcome"] == "updated", stack.log("worker")
    [pull] = stack.github.open_pulls(REPO)
    assert pull["head"]["ref"] == "wrench/schedule-weekly" and "Fixes" not in pull["body"]
    assert len(stack.github.commits(REPO, "wrench/schedule-weekly")) == 3


def test_a_failure_before_any_comment_is_still_reported_in_slack(stack, slack):
    # GitHub fails the installation look-up with a 500: not "not installed", a failure.
    stack.github.failing["/repos/octo-org/hello/installation"] = 500
    job_id = command(stack, slack, f"{REPO}#1 fix it")["text"].split("`")[1]
    assert stack.wait(job_id).get_status().value == "failed"
    [text] = slack.texts()
    assert text.startswith("Wrench failed unexpectedly") and "not installed" not in text
