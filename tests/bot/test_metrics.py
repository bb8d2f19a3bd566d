"""`GET /metrics`: what the web tier and the worker record, parsed by Prometheus' own parser."""

from __future__ import annotations

import json

from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from bot.app import create_app
from tests.bot.deliveries import headers
from tests.bot.test_webhooks import labeled, post
from wrench.metrics import Metrics


def samples(client, **kwargs) -> dict[tuple, float]:
    response = client.get("/metrics", **kwargs)
    assert response.status_code == 200
    found = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_deliveries_jobs_and_queue_depth_are_counted(settings, redis):
    client = create_app(settings).test_client()
    post(client, "issues", labeled())
    post(client, "issues", labeled("bug"))
    body = json.dumps(labeled()).encode()
    client.post(
        "/api/github/webhooks",
        data=body,
        headers={**headers("issues", body), "X-Hub-Signature-256": "sha256=00"},
    )
    metrics = Metrics(redis)
    metrics.inc("wrench_jobs_total", trigger="label", outcome="pull_request")
    metrics.observe("wrench_job_duration_seconds", 42.0, trigger="label")
    metrics.gauge("wrench_sandbox_pool_idle", 2)

    found = samples(client)
    delivered = "wrench_webhook_deliveries_total"
    assert found[delivered, (("event", "issues"), ("outcome", "queued"))] == 1
    assert found[delivered, (("event", "issues"), ("outcome", "ignored"))] == 1
    assert found[delivered, (("event", "unverified"), ("outcome", "bad_signature"))] == 1
    assert found["wrench_queue_jobs", (("queue", "wrench-test"), ("state", "queued"))] == 1
    assert found["wrench_jobs_total", (("outcome", "pull_request"), ("trigger", "label"))] == 1
    bucket = "wrench_job_duration_seconds_bucket"
    assert found[bucket, (("le", "30"), ("trigger", "label"))] == 0
    assert found[bucket, (("le", "60"), ("trigger", "label"))] == 1
    assert found["wrench_job_duration_seconds_sum", (("trigger", "label"),)] == 42.0
    assert found["wrench_sandbox_pool_idle", ()] == 2


def test_a_metrics_token_is_required_when_set(settings, redis):
    guarded = settings.model_copy(update={"METRICS_TOKEN": SecretStr("scrape-me-please")})
    client = create_app(guarded).test_client()
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    samples(client, headers={"Authorization": "Bearer scrape-me-please"})


def test_unverified_requests_cannot_add_labels_or_break_metrics(settings, redis):
    client = create_app(settings).test_client()
    for event in ["evil,event=x|y", "Ünïcode", "a" * 500]:
        client.post(
            "/api/github/webhooks",
            data=b"{}",
            headers={"X-GitHub-Event": event, "Content-Length": str(26 * 2**20)},
        )
        client.post("/api/github/webhooks", data=b"{}", headers={"X-GitHub-Event": event})
    Metrics(redis).inc("wrench_jobs_total", trigger="x,y=z|w", outcome="ok")
    found = samples(client)
    events = {
        dict(labels).get("event")
        for name, labels in found
        if name == "wrench_webhook_deliveries_total"
    }
    assert events == {"unverified"}
    assert found["wrench_jobs_total", (("outcome", "ok"), ("trigger", "x_y_z_w"))] == 1
