"""The webhook endpoint through Flask's test client, with real payloads and a real Redis."""

from __future__ import annotations

import json
import uuid

import pytest
from rq import Queue

from bot.app import create_app
from tests.bot.deliveries import as_app_delivery, headers, load
from tests.conftest import free_port
from wrench.jobs import JobSpec, Trigger


@pytest.fixture
def client(settings):
    return create_app(settings).test_client()


@pytest.fixture
def queue(redis, settings):
    return Queue(settings.QUEUE_NAME, connection=redis)


def post(client, event, payload, delivery=None, **kwargs):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    hdrs = headers(event, body, delivery)
    hdrs.update(kwargs.pop("headers", {}))
    return client.post("/api/github/webhooks", data=body, headers=hdrs, **kwargs)


def labeled(label="wrench"):
    payload = as_app_delivery(load("issues/labeled.payload.json"))
    payload["label"] = {**payload["label"], "name": label}
    return payload


def commented(body, association="OWNER", sender_type="User", login="octocat"):
    payload = as_app_delivery(load("issue_comment/created.payload.json"))
    payload["comment"] = {**payload["comment"], "body": body, "author_association": association}
    payload["sender"] = {**payload["sender"], "type": sender_type, "login": login}
    return payload


def queued_specs(queue) -> list[JobSpec]:
    return [JobSpec.model_validate(job.args[0]) for job in queue.get_jobs()]


def test_labeled_issue_queues_one_job_with_a_typed_spec(client, queue, settings):
    response = post(client, "issues", labeled(), delivery="d-1")

    assert response.status_code == 202
    [job] = queue.get_jobs()
    assert response.json == {"jobs": [job.id]}
    assert job.func_name == "worker.job.run_job"
    assert job.timeout == settings.JOB_TIMEOUT_S
    spec = JobSpec.model_validate(job.args[0])
    assert (spec.repository, spec.number, spec.trigger) == ("Codertocat/Hello-World", 1, "label")
    assert (spec.installation_id, spec.requester, spec.delivery_id) == (4242, "Codertocat", "d-1")
    assert spec.is_pull_request is False


def test_trigger_label_matches_case_insensitively_and_other_labels_are_ignored(client, queue):
    assert post(client, "issues", labeled("Wrench")).status_code == 202
    response = post(client, "issues", labeled("bug"))
    assert response.status_code == 200
    assert "not the trigger label" in response.json["ignored"]
    assert len(queue.get_jobs()) == 1


def test_labeled_pull_request_is_a_pull_request_job(client, queue):
    payload = as_app_delivery(load("pull_request/labeled.payload.json"))
    payload["label"]["name"] = "wrench"
    assert post(client, "pull_request", payload).status_code == 202
    [spec] = queued_specs(queue)
    assert spec.is_pull_request and spec.number == payload["number"]


def test_redelivery_of_the_same_id_enqueues_nothing(client, queue, redis):
    first = post(client, "issues", labeled(), delivery="same-id")
    again = post(client, "issues", labeled(), delivery="same-id")

    assert first.status_code == 202
    assert again.status_code == 200 and again.json["ignored"] == "duplicate delivery"
    assert len(queue.get_jobs()) == 1
    assert redis.ttl("wrench:delivery:same-id") >= 3 * 86400


@pytest.mark.parametrize(
    "body",
    ["@wrench please fix the flaky test", "Hey @Wrench, look", "cc @wrench[bot]: go", "(@wrench)"],
)
def test_a_mention_by_a_writer_queues_a_comment_job(client, queue, body):
    assert post(client, "issue_comment", commented(body)).status_code == 202
    [spec] = queued_specs(queue)
    assert spec.trigger == Trigger.COMMENT and spec.instruction == body
    assert spec.comment_id == load("issue_comment/created.payload.json")["comment"]["id"]


@pytest.mark.parametrize(
    ("body", "association", "sender_type", "login", "reason"),
    [
        ("please fix it", "OWNER", "User", "octocat", "does not mention"),
        ("@wrench-dev fix it", "OWNER", "User", "octocat", "does not mention"),
        ("mail me@wrench.io", "OWNER", "User", "octocat", "does not mention"),
        ("> @wrench fix it\n\nno thanks", "OWNER", "User", "octocat", "does not mention"),
        ("run `@wrench fix`", "OWNER", "User", "octocat", "does not mention"),
        ("```\n@wrench fix\n```", "OWNER", "User", "octocat", "does not mention"),
        ("@wrench fix it", "NONE", "User", "stranger", "no write access"),
        ("@wrench fix it", "CONTRIBUTOR", "User", "drive-by", "no write access"),
        ("@wrench fix it", "OWNER", "Bot", "dependabot[bot]", "sent by a bot"),
        ("@wrench fix it", "OWNER", "User", "wrench[bot]", "sent by a bot"),
    ],
)
def test_comments_that_do_not_ask_are_ignored(
    client, queue, body, association, sender_type, login, reason
):
    response = post(client, "issue_comment", commented(body, association, sender_type, login))
    assert response.status_code == 200
    assert reason in response.json["ignored"]
    assert queue.get_jobs() == []


def test_a_bot_with_a_similar_name_is_not_taken_for_ourselves(client, queue):
    payload = commented("@wrench fix it", login="notwrench[bot]")
    assert post(client, "issue_comment", payload).status_code == 202


def test_a_comment_on_a_pull_request_is_a_pull_request_job(client, queue):
    payload = commented("@wrench rebase this")
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    post(client, "issue_comment", payload)
    assert queued_specs(queue)[0].is_pull_request


def test_review_comment_and_review_mentions_queue_jobs(client, queue):
    comment = as_app_delivery(load("pull_request_review_comment/created.payload.json"))
    comment["comment"]["body"] = "@wrench use a constant here"
    review = as_app_delivery(load("pull_request_review/submitted.payload.json"))
    review["review"]["body"] = "@wrench address these comments"

    assert post(client, "pull_request_review_comment", comment).status_code == 202
    assert post(client, "pull_request_review", review).status_code == 202
    specs = queued_specs(queue)
    assert {s.trigger for s in specs} == {Trigger.REVIEW_COMMENT, Trigger.REVIEW}
    assert all(s.is_pull_request and s.number == comment["pull_request"]["number"] for s in specs)
    assert {s.comment_id for s in specs} == {comment["comment"]["id"], review["review"]["id"]}


def test_a_review_without_a_body_is_ignored(client, queue):
    review = as_app_delivery(load("pull_request_review/submitted.payload.json"))
    assert review["review"]["body"] is None
    assert post(client, "pull_request_review", review).status_code == 200


def test_a_delivery_without_an_installation_is_ignored_with_a_reason(client, queue):
    payload = labeled()
    del payload["installation"]
    response = post(client, "issues", payload)
    assert response.status_code == 200 and "no installation" in response.json["ignored"]


@pytest.mark.parametrize(
    ("event", "name"),
    [
        ("ping", "ping/payload.json"),
        ("installation", "installation/created.payload.json"),
        ("push", "push/payload.json"),
        ("issues", "issues/opened.payload.json"),
    ],
)
def test_passive_and_unrouted_events_are_answered_2xx_without_jobs(client, queue, event, name):
    response = post(client, event, as_app_delivery(load(name)))
    assert response.status_code == 200
    assert queue.get_jobs() == []


@pytest.mark.parametrize(
    "signature",
    [None, "sha1=0123456789abcdef0123456789abcdef01234567", "sha256=" + "0" * 64, "garbage"],
)
def test_a_bad_or_missing_signature_is_401_and_nothing_happens(client, queue, redis, signature):
    body = json.dumps(labeled()).encode()
    hdrs = headers("issues", body, "d-bad")
    hdrs.pop("X-Hub-Signature-256")
    if signature:
        hdrs["X-Hub-Signature-256"] = signature
    response = client.post("/api/github/webhooks", data=body, headers=hdrs)
    assert response.status_code == 401
    assert queue.get_jobs() == [] and redis.keys("wrench:delivery:*") == []


def test_a_signature_made_with_another_secret_is_401(client, queue):
    body = json.dumps(labeled()).encode()
    hdrs = headers("issues", body, secret="not-the-secret")
    assert client.post("/api/github/webhooks", data=body, headers=hdrs).status_code == 401


@pytest.mark.parametrize(
    ("body", "drop", "reason"),
    [
        (b"{not json", None, "not JSON"),
        (b"[1, 2]", None, "not a JSON object"),
        (b"{}", "X-GitHub-Event", "missing X-GitHub-Event"),
        (
            json.dumps({"action": "labeled", "issue": {"number": 1}}).encode(),
            None,
            "malformed issues payload",
        ),
    ],
)
def test_malformed_deliveries_are_400_with_a_reason(client, queue, body, drop, reason):
    hdrs = headers("issues", body)
    if drop:
        hdrs.pop(drop)
    response = client.post("/api/github/webhooks", data=body, headers=hdrs)
    assert response.status_code == 400
    assert reason in response.json["error"]
    assert queue.get_jobs() == []


def test_a_body_over_25_mb_is_413(client, queue):
    body = b'{"pad": "' + b"x" * (25 * 1024 * 1024) + b'"}'
    response = client.post("/api/github/webhooks", data=body, headers=headers("issues", body))
    assert response.status_code == 413


def test_without_a_webhook_secret_webhooks_are_refused(settings, queue):
    app = create_app(settings.model_copy(update={"WEBHOOK_SECRET": None}))
    response = post(app.test_client(), "issues", labeled())
    assert response.status_code == 503 and "WEBHOOK_SECRET" in response.json["error"]
    assert queue.get_jobs() == []


def test_dead_redis_is_503_never_2xx(settings):
    dead = settings.model_copy(update={"REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"})
    client = create_app(dead).test_client()
    response = post(client, "issues", labeled(), delivery=str(uuid.uuid4()))
    assert response.status_code == 503
    assert "unavailable" in response.json["error"]
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json["redis"].startswith("unreachable")


def test_healthz_reports_redis_reachable(client, redis):
    assert client.get("/healthz").json == {"status": "ok", "redis": "reachable"}
