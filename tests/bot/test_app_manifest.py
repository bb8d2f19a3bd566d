"""The App manifest asks for what the router needs, and no more."""

import yaml

from bot.triggers import router
from tests.conftest import ROOT


def manifest():
    return yaml.safe_load((ROOT / "app.yml").read_text())


def test_every_routed_event_is_a_default_event():
    assert router.events() <= set(manifest()["default_events"])
    assert router.events()  # the router does handle events


def test_permissions_are_least_privilege():
    assert manifest()["default_permissions"] == {
        "contents": "write",
        "issues": "write",
        "pull_requests": "write",
        "metadata": "read",
    }


def test_webhook_path_is_probots():
    assert manifest()["hook_attributes"]["url"].endswith("/api/github/webhooks")
