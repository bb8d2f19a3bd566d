"""The secret scan before publishing, as a planted secret would try to slip through it."""

from __future__ import annotations

import base64

import pytest

from tests.fakes.app_key import app_key_pair
from worker.publish.scan import kinds_in, scan
from wrench.secrets import Redactor
from wrench.settings import Settings

LLM_KEY = "llm-key-0123456789abcdef"


@pytest.fixture
def redactor() -> Redactor:
    settings = Settings(
        _env_file=None,
        PRIVATE_KEY=app_key_pair()[0],
        WEBHOOK_SECRET="webhook-secret-value",
        LLM_API_KEY=LLM_KEY,
        SLACK_SIGNING_SECRET="slack-signing-value",
        JOB_LINK_SECRET="job-link-key-value",
        REDIS_URL="redis://:redis-password-1@127.0.0.1:6379/0",
    )
    found = Redactor(settings.named_secrets())
    found.add("ghs_installationtokenfortheJob0123456", "the installation token")
    return found


@pytest.mark.parametrize(
    "text, kind",
    [
        (LLM_KEY, "LLM_API_KEY"),
        ("webhook-secret-value", "WEBHOOK_SECRET"),
        ("slack-signing-value", "SLACK_SIGNING_SECRET"),
        ("job-link-key-value", "JOB_LINK_SECRET"),
        ("redis-password-1", "the password in REDIS_URL"),
        ("ghs_installationtokenfortheJob0123456", "the installation token"),
        ("ghp_" + "a" * 36, "a GitHub token"),
        ("github_pat_" + "a" * 40, "a GitHub token"),
        ("AKIA" + "A" * 16, "an AWS access key id"),
        ("AIza" + "b" * 35, "a Google API key"),
        ("glpat-" + "c" * 20, "a GitLab token"),
        ("xoxb-" + "1" * 12, "a Slack token"),
        ("sk_live_" + "d" * 24, "a Stripe key"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl", "a JSON web token"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nabc", "a private key"),
    ],
)
def test_every_secret_wrench_holds_and_every_common_shape_is_found(redactor, text, kind):
    assert kind in kinds_in(redactor, f"config = '{text}'\n".encode())


def test_any_one_line_of_the_apps_private_key_is_found(redactor):
    lines = [line for line in app_key_pair()[0].splitlines() if "-----" not in line]
    for line in (lines[1], lines[len(lines) // 2], lines[-2]):
        assert kinds_in(redactor, f"x = '{line}'".encode()) == ["a line of the App's private key"]


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: text.encode("utf-16-le"),
        lambda text: text.encode("utf-16"),  # with a byte order mark
        lambda text: b"\0" + text.encode("utf-16-be"),
        lambda text: base64.b64encode(text.encode()),
        lambda text: base64.urlsafe_b64encode(text.encode()),
        lambda text: base64.b64encode(base64.b64encode(text.encode())),
        lambda text: base64.b64encode(text.encode("utf-16-le")),
    ],
)
def test_encodings_do_not_hide_a_secret(redactor, encode):
    planted = encode(f"# padding so the run is long enough\nKEY={LLM_KEY}\n")
    assert any(kind.startswith("LLM_API_KEY") for kind in kinds_in(redactor, planted))


def test_findings_name_the_file_and_kind_but_never_the_value(redactor):
    found = scan(redactor, [("`a.txt`", LLM_KEY.encode()), ("`b.txt`", b"harmless")])
    assert [str(finding) for finding in found] == ["`a.txt` holds LLM_API_KEY"]
    assert LLM_KEY not in str(found)


def test_ordinary_files_pass(redactor):
    code = b"def greet(name):\n    return 'Hello, ' + name\n" * 200
    image = bytes(range(256)) * 100
    assert (
        scan(redactor, [("code", code), ("image", image), ("b64", base64.b64encode(image))]) == []
    )
