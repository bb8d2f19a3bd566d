"""The web process as deployed: gunicorn over real HTTP, every fixture payload, clean start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.deliveries import as_app_delivery, fixture_files, headers
from tests.conftest import WEBHOOK_SECRET, free_port

WRENCH = str(Path(sys.executable).with_name("wrench"))


def env(redis_url: str, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.isupper() or k in {"PATH", "HOME", "LANG"}}
    return {
        **base,
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "BOT_NAME": "wrench",
        "REDIS_URL": redis_url,
        "QUEUE_NAME": "wrench-test",
        **extra,
    }


def post(url: str, event: str, body: bytes) -> int:
    request = urllib.request.Request(url, data=body, headers=headers(event, body), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.fixture
def web(redis_url, redis, tmp_path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [WRENCH, "web", "--port", str(port)],
        env=env(redis_url),
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    yield base
    proc.terminate()
    _, stderr = proc.communicate(timeout=10)
    assert "Traceback" not in stderr


def test_every_fixture_payload_gets_an_answer_below_500(web):
    statuses = {}
    for path in fixture_files():
        event, raw = path.parent.name, path.read_bytes()
        statuses[f"{event}/{path.name}", "as sent"] = post(f"{web}/api/github/webhooks", event, raw)
        app_body = json.dumps(as_app_delivery(json.loads(raw))).encode()
        statuses[f"{event}/{path.name}", "as an App"] = post(
            f"{web}/api/github/webhooks", event, app_body
        )
    assert len(statuses) >= 2 * 130
    assert {k: v for k, v in statuses.items() if v >= 500} == {}
    assert set(statuses.values()) <= {200, 202}


def test_the_web_process_never_imports_litellm_or_docker(redis_url, tmp_path):
    # Only the web tier's own modules: the test helpers import Docker fixtures.
    payload = {
        "action": "labeled",
        "label": {"name": "wrench"},
        "sender": {"login": "o"},
        "installation": {"id": 1},
        "repository": {"full_name": "o/r"},
        "issue": {"number": 1, "title": "t"},
    }
    script = (
        "import sys, json\n"
        "from bot.app import create_app\n"
        "from bot.signatures import github_signature\n"
        "from wrench.settings import Settings\n"
        f"s = Settings(_env_file=None, WEBHOOK_SECRET={WEBHOOK_SECRET!r}, BOT_NAME='wrench',"
        f" REDIS_URL={redis_url!r}, QUEUE_NAME='imports-test')\n"
        f"body = {json.dumps(payload)!r}.encode()\n"
        f"sig = github_signature({WEBHOOK_SECRET!r}.encode(), body)\n"
        "headers = {'X-GitHub-Event': 'issues', 'X-GitHub-Delivery': 'imports-1',"
        " 'X-Hub-Signature-256': sig}\n"
        "answer = create_app(s).test_client().post('/api/github/webhooks', data=body,"
        " headers=headers)\n"
        "assert answer.status_code == 202, answer.json\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True
    )
    modules = set(json.loads(out.stdout))
    assert "rq" in modules and "flask" in modules
    assert not modules & {"litellm", "docker", "openai", "worker", "sandbox"}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_STEPS", "many"),
        ("JOB_TIMEOUT_S", "-5"),
        ("PRIVATE_KEY_PATH", "/nonexistent.pem"),
        ("LOG_FORMAT", "xml"),
    ],
)
@pytest.mark.parametrize("command", ["web", "worker", "scheduler"])
def test_bad_settings_give_one_clear_line_naming_the_setting(
    redis_url, tmp_path, command, name, value
):
    proc = subprocess.run(
        [WRENCH, command],
        env=env(redis_url, **{name: value}),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("wrench: invalid configuration: ") and name in line
