"""Without BOT_NAME, the web tier asks GitHub for the App's slug once and answers to it."""

from __future__ import annotations

from pydantic import SecretStr

from bot.app import create_app
from tests.bot.test_webhooks import commented, post
from tests.conftest import free_port
from tests.fakes.app_key import app_key_pair
from tests.fakes.github import FakeGitHub


def as_app(settings, api_url):
    """The settings of an App with no BOT_NAME, talking to `api_url`."""
    private = SecretStr(app_key_pair()[0])
    update = {"BOT_NAME": None, "APP_ID": 31, "PRIVATE_KEY": private, "GITHUB_API_URL": api_url}
    return settings.model_copy(update=update)


def test_the_apps_slug_is_the_bot_name(settings, redis, tmp_path):
    with FakeGitHub(tmp_path, 31, app_key_pair()[1], slug="fixbot") as fake:
        client = create_app(as_app(settings, fake.url)).test_client()
        assert post(client, "issue_comment", commented("@fixbot fix it")).status_code == 202
        assert post(client, "issue_comment", commented("@wrench fix it")).status_code == 200
        assert post(client, "issue_comment", commented("@fixbot again")).status_code == 202
        assert [r for r in fake.requests if r[1] == "/app"] == [("GET", "/app", 200)]


def test_an_unreachable_github_is_a_503_that_says_to_set_bot_name(settings, redis):
    app = create_app(as_app(settings, f"http://127.0.0.1:{free_port()}"))
    response = post(app.test_client(), "issue_comment", commented("@fixbot fix it"))
    assert response.status_code == 503 and "set BOT_NAME" in response.json["error"]
