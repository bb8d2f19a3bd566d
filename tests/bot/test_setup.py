"""First run: the setup page creates the App through GitHub's manifest flow and writes `.env`."""

from __future__ import annotations

import json
import re
import stat

import pytest

from bot import setup
from bot.app import create_app
from tests.fakes.app_key import app_key_pair
from tests.fakes.github import FakeGitHub
from wrench.settings import Settings


@pytest.fixture
def fake(tmp_path):
    with FakeGitHub(tmp_path / "gh", 55, app_key_pair()[1], slug="acme-wrench") as fake:
        fake.manifest_code, fake.private_key = "code-123", app_key_pair()[0]
        yield fake


@pytest.fixture
def first_run(settings, fake, tmp_path, monkeypatch):
    monkeypatch.setattr(setup, "ENV_FILE", tmp_path / ".env")
    unset = settings.model_copy(
        update={"APP_ID": None, "WEBHOOK_SECRET": None, "GITHUB_API_URL": fake.url}
    )
    return create_app(unset).test_client()


def test_the_setup_page_posts_the_manifest_for_this_server(first_run):
    page = first_run.get("/", base_url="https://wrench.example.com").get_data(as_text=True)
    raw = re.search(r'name="manifest" value="([^"]+)"', page)[1]
    manifest = json.loads(raw.replace("&#34;", '"').replace("&amp;", "&"))
    assert manifest["hook_attributes"]["url"] == "https://wrench.example.com/api/github/webhooks"
    assert manifest["redirect_url"] == "https://wrench.example.com/setup/callback"
    assert manifest["default_permissions"]["contents"] == "write"
    assert 'action="http://127.0.0.1:' in page and "/settings/apps/new?state=" in page


def test_the_callback_writes_the_credentials_to_a_private_env_file(first_run, tmp_path, settings):
    page = first_run.get("/").get_data(as_text=True)
    state = re.search(r"state=([\w-]+)", page)[1]
    done = first_run.get(f"/setup/callback?code=code-123&state={state}")
    assert done.status_code == 200 and "acme-wrench" in done.get_data(as_text=True)

    env_file = tmp_path / ".env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    loaded = Settings(_env_file=env_file)
    assert loaded.APP_ID == 55 and loaded.private_key() == app_key_pair()[0]
    assert loaded.WEBHOOK_SECRET.get_secret_value() == "whsec-from-github-0123456789"
    # Until the restart the running process has no APP_ID, but the flow is closed already.
    assert first_run.get("/").status_code == 404
    assert first_run.get(f"/setup/callback?code=code-123&state={state}").status_code == 404
    # The page is gone once the App exists.
    restarted = create_app(loaded.model_copy(update={"REDIS_URL": settings.REDIS_URL}))
    assert restarted.test_client().get("/").status_code == 404


def test_a_callback_that_was_not_started_here_is_refused(first_run, tmp_path):
    assert first_run.get("/setup/callback?code=code-123&state=forged").status_code == 400
    assert not (tmp_path / ".env").exists()
