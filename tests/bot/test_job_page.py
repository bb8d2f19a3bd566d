"""The job page: signed expiring links, the header, and events read after an index."""

from __future__ import annotations

import time

import pytest

from bot.app import create_app
from tests.bot.test_webhooks import labeled, post
from wrench import events
from wrench.links import job_link


@pytest.fixture
def client(settings, redis):
    return create_app(settings).test_client()


@pytest.fixture
def job_id(client):
    return post(client, "issues", labeled()).json["jobs"][0]


def test_a_signed_link_shows_the_job(client, settings, job_id):
    page = client.get(job_link(settings, job_id))
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "Codertocat/Hello-World#1" in html and ">queued<" in html


@pytest.mark.parametrize("tamper", ["sig", "expires", "id", "expired"])
def test_a_bad_or_expired_link_is_403(client, settings, job_id, tamper):
    link = job_link(settings, job_id, now=time.time() - 8 * 86400 if tamper == "expired" else None)
    if tamper == "sig":
        link = link[:-4] + "0000"
    elif tamper == "expires":
        link = link.replace("expires=", "expires=9")
    elif tamper == "id":
        link = link.replace(job_id, job_id[:-1] + ("0" if job_id[-1] != "0" else "1"))
    assert client.get(link).status_code == 403
    events_link = link.replace("?", "/events?")
    assert client.get(events_link).status_code == 403


def test_events_are_read_after_an_index(client, settings, redis, job_id):
    for step in range(3):
        events.append(
            redis,
            job_id,
            {
                "kind": "Action",
                "step": step,
                "tool": "bash",
                "arguments": {"command": f"echo {step}"},
            },
        )
    link = job_link(settings, job_id).replace("?", "/events?") + "&after=1"
    data = client.get(link).json
    assert [e["step"] for e in data["events"]] == [1, 2]
    assert data["job"]["status"] == "queued" and data["job"]["requester"] == "Codertocat"
