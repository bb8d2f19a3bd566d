"""The `/wrench` slash command: Slack's signature, the commands, access, queueing."""

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest
from pydantic import SecretStr
from rq import Queue

from bot.app import create_app
from bot.signatures import slack_signature, verify_slack
from tests.conftest import free_port
from wrench.jobs import JobSpec, Trigger

SECRET = "slack-signing-secret-for-tests"
ACCESS = {"U_ALICE": ["octo-org/hello"], "C_OPS": ["infra/*"]}


@pytest.fixture
def slack_settings(settings):
    return settings.model_copy(
        update={"SLACK_SIGNING_SECRET": SecretStr(SECRET), "SLACK_ACCESS": ACCESS}
    )


@pytest.fixture
def client(slack_settings, redis):
    return create_app(slack_settings).test_client()


@pytest.fixture
def queue(redis, settings):
    return Queue(settings.QUEUE_NAME, connection=redis)


def form(text, user="U_ALICE", channel="C_RANDOM"):
    return urlencode(
        {
            "token": "legacy",
            "team_id": "T1",
            "channel_id": channel,
            "user_id": user,
            "user_name": "alice",
            "command": "/wrench",
            "text": text,
            "trigger_id": "1.2.3",
            "response_url": "https://hooks.slack.com/commands/T1/1/abc",
        }
    ).encode()


def send(client, body, timestamp=None, signature=None):
    timestamp = timestamp or str(int(time.time()))
    signature = signature or slack_signature(SECRET.encode(), timestamp, body)
    headers = {
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": signature,
        "Content-Type": "application/x-www-form-urlencoded",
    }
    return client.post("/slack/commands", data=body, headers=headers)


def test_slacks_documented_example_verifies():
    # https://api.slack.com/authentication/verifying-requests-from-slack
    secret = b"8f742231b10e8888abcd99yyyzzz85a5"
    body = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&"
        b"channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&"
        b"command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2F"
        b"commands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
        b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    signature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    assert verify_slack(secret, body, "1531420618", signature, now=1531420618 + 10)
    assert not verify_slack(secret, body, "1531420618", signature, now=1531420618 + 301)
    assert not verify_slack(secret, body + b"x", "1531420618", signature, now=1531420618)


@pytest.mark.parametrize(
    ("timestamp", "signature"),
    [(str(int(time.time()) - 600), None), (None, "v0=" + "0" * 64), ("soon", "v0=1")],
)
def test_bad_or_stale_signatures_are_401(client, queue, timestamp, signature):
    assert send(client, form("octo-org/hello#1"), timestamp, signature).status_code == 401
    assert queue.get_jobs() == []


@pytest.mark.parametrize("text", ["", "help", "please do things", "status"])
def test_help_and_anything_unknown_get_the_help_text(client, text):
    response = send(client, form(text))
    assert response.status_code == 200 and response.json["response_type"] == "ephemeral"
    assert "/wrench owner/repo#123" in response.json["text"]


def test_an_issue_command_queues_a_slack_job(client, queue):
    response = send(client, form("octo-org/hello#12 keep it short"))
    [job] = queue.get_jobs()
    assert job.id in response.json["text"] and response.json["response_type"] == "ephemeral"
    spec = JobSpec.model_validate(job.args[0])
    assert (spec.repository, spec.number, spec.trigger) == ("octo-org/hello", 12, Trigger.SLACK)
    assert spec.instruction == "keep it short" and spec.installation_id is None
    assert spec.slack.response_url.startswith("https://hooks.slack.com/")
    assert (spec.slack.user_id, spec.requester) == ("U_ALICE", "U_ALICE")


def test_a_task_on_the_default_branch_has_no_number(client, queue):
    send(client, form("infra/deploy bump the base image", user="U_BOB", channel="C_OPS"))
    [job] = queue.get_jobs()
    spec = JobSpec.model_validate(job.args[0])
    assert spec.number is None and spec.instruction == "bump the base image"


@pytest.mark.parametrize(
    ("text", "user", "channel"),
    [
        ("octo-org/other#1", "U_ALICE", "C_RANDOM"),
        ("octo-org/hello#1", "U_BOB", "C_RANDOM"),
        ("infra/deploy#1", "U_ALICE", "C_RANDOM"),
    ],
)
def test_access_is_denied_unless_configured(client, queue, text, user, channel):
    response = send(client, form(text, user, channel))
    assert "You may not use Wrench" in response.json["text"]
    assert queue.get_jobs() == []


def test_status_reports_a_job(client, queue):
    job_id = send(client, form("octo-org/hello#12")).json["text"].split("`")[1]
    assert "*queued*" in send(client, form(f"status {job_id}")).json["text"]
    assert "no job" in send(client, form("status nope-123")).json["text"]


def test_without_a_signing_secret_slack_is_refused(settings, redis):
    client = create_app(settings).test_client()
    assert send(client, form("help")).status_code == 503


def test_dead_redis_gets_a_clear_answer(slack_settings):
    dead = slack_settings.model_copy(update={"REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"})
    response = send(create_app(dead).test_client(), form("octo-org/hello#1"))
    assert response.status_code == 200 and "queue is unavailable" in response.json["text"]
