"""Building signed GitHub deliveries from real payload fixtures."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from bot.signatures import github_signature
from tests.conftest import WEBHOOK_SECRET, WEBHOOKS

INSTALLATION = {"id": 4242, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0Mg=="}


def load(name: str) -> dict[str, Any]:
    """A payload from tests/fixtures/github-webhooks, e.g. `issues/labeled.payload.json`."""
    return json.loads((WEBHOOKS / name).read_text())


def headers(event: str, body: bytes, delivery: str | None = None, secret: str = WEBHOOK_SECRET):
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": github_signature(secret.encode(), body),
        "Content-Type": "application/json",
    }


def as_app_delivery(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as a GitHub App receives it: with an installation."""
    return {**payload, "installation": INSTALLATION}


def fixture_files() -> list[Path]:
    return sorted(WEBHOOKS.glob("*/*.json"))
