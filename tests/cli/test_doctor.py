"""`wrench doctor` against a fake GitHub, a fake model, the test Redis and the test image."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.cli.conftest import Cli
from tests.conftest import WEBHOOK_SECRET, free_port
from tests.fakes.app_key import app_key_pair
from tests.fakes.github import FakeGitHub
from tests.fakes.openai_server import FakeOpenAI, Reply, error, text

APP_ID = 808
LLM_KEY = "sk-doctor-" + secrets.token_hex(12)
REDIS_PASSWORD = "redis-pw-" + secrets.token_hex(6)


class Model:
    """The fake model's answer, switchable between tests."""

    def __init__(self) -> None:
        self.reply: Reply = text("OK")

    def __call__(self, body: dict) -> Reply:
        return self.reply


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def doctor_env(tmp_path: Path, sandbox_image: str, model: Model) -> Iterator[dict[str, str]]:
    with (
        FakeGitHub(tmp_path / "github", APP_ID, app_key_pair()[1]) as github,
        FakeOpenAI(model) as llm,
    ):
        yield {
            "APP_ID": str(APP_ID),
            "PRIVATE_KEY": app_key_pair()[0],
            "GITHUB_API_URL": github.url,
            "LLM_MODEL": "openai/doctor-model",
            "LLM_BASE_URL": llm.url,
            "LLM_API_KEY": LLM_KEY,
            "SANDBOX_IMAGE": sandbox_image,
        }


def other_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def lines(output: str) -> dict[str, str]:
    """Each row's line by its check name, and the `fix:` line under it (joined by ` | `)."""
    rows: dict[str, str] = {}
    last = ""
    for line in output.splitlines():
        if line.startswith(("OK ", "FAIL ", "NOTE ")):
            last = line.split()[1]
            rows[last] = line
        elif line.strip().startswith("fix:"):
            rows[last] += " | " + line.strip()
    return rows


def assert_no_secret(output: str, *also: str) -> None:
    key_body = app_key_pair()[0].splitlines()[1:-1]
    for secret in (WEBHOOK_SECRET, LLM_KEY, *key_body, *also):
        assert secret not in output


def test_all_ok_against_working_parts(cli: Cli, doctor_env: dict[str, str]) -> None:
    result = cli("doctor", **doctor_env)

    assert result.returncode == 0, result.stdout + result.stderr
    rows = lines(result.stdout)
    for check in ("settings", "redis", "docker", "image", "github", "model"):
        assert rows[check].startswith("OK "), rows[check]
    assert "App wrench (id 808) on 127.0.0.1:" in rows["github"]
    assert "openai/doctor-model answered in" in rows["model"]
    assert rows["SLACK_SIGNING_SECRET"].startswith("NOTE ")
    assert "all checks passed" in result.stdout
    assert "FAIL" not in result.stdout
    assert_no_secret(result.stdout + result.stderr)


def test_each_broken_part_is_a_fail_with_its_fix(
    cli: Cli, doctor_env: dict[str, str], model: Model
) -> None:
    model.reply = error(500, message="the model is down")
    broken = {
        **doctor_env,
        "REDIS_URL": f"redis://:{REDIS_PASSWORD}@127.0.0.1:{free_port()}/0",
        "SANDBOX_IMAGE": "wrench-absent:nope",
        "PRIVATE_KEY": other_key(),
    }

    result = cli("doctor", **broken)

    assert result.returncode == 1
    rows = lines(result.stdout)
    assert rows["docker"].startswith("OK ")
    assert rows["redis"].startswith("FAIL ") and "ConnectionError" in rows["redis"]
    assert "fix: start Redis, or point REDIS_URL at it" in rows["redis"]
    assert "wrench-absent:nope is not in the local engine" in rows["image"]
    assert "fix: build it with `python -m sandbox.image`" in rows["image"]
    assert "refused the App's credentials (401)" in rows["github"]
    assert "fix: APP_ID and the private key must belong to the same App" in rows["github"]
    assert rows["model"].startswith("FAIL ") and "did not answer" in rows["model"]
    assert "the model is down" in rows["model"]
    assert "fix: check LLM_MODEL, LLM_API_KEY and LLM_BASE_URL" in rows["model"]
    assert "4 problem(s) to fix" in result.stdout
    assert_no_secret(result.stdout + result.stderr, REDIS_PASSWORD, broken["PRIVATE_KEY"][40:80])


def test_missing_required_settings_fail_and_invalid_ones_stop_at_once(
    cli: Cli, doctor_env: dict[str, str]
) -> None:
    unset = {k: v for k, v in doctor_env.items() if k not in {"APP_ID", "PRIVATE_KEY"}}
    cli.env.pop("WEBHOOK_SECRET")

    missing = cli("doctor", **{**unset, "LLM_MODEL": ""})
    invalid = cli("doctor", **doctor_env, MAX_STEPS="many")

    rows = lines(missing.stdout)
    assert missing.returncode == 1
    assert "WEBHOOK_SECRET is not set" in rows["webhooks"]
    assert "no GitHub App" in rows["github"] and "wrench web" in rows["github"]
    assert "LLM_MODEL is not set" in rows["model"]
    assert invalid.returncode == 1
    assert lines(invalid.stdout)["settings"].startswith("FAIL ")
    assert "MAX_STEPS" in invalid.stdout
