"""Request signature checks for GitHub webhooks and Slack commands, in constant time."""

from __future__ import annotations

import hashlib
import hmac


def github_signature(secret: bytes, body: bytes) -> str:
    """The `X-Hub-Signature-256` value GitHub sends for this body."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify_github(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether `header` is the SHA-256 signature of `body`; a missing or `sha1=` header fails."""
    if not header or not header.startswith("sha256="):
        return False
    return hmac.compare_digest(github_signature(secret, body), header)


# Slack rejects requests whose timestamp is further than this from now (replay protection).
SLACK_MAX_SKEW_S = 300


def slack_signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """The `X-Slack-Signature` value Slack sends for this body and timestamp."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret, base, hashlib.sha256).hexdigest()


def verify_slack(
    secret: bytes, body: bytes, timestamp: str | None, header: str | None, now: float
) -> bool:
    """Whether the request is signed by Slack and was made within five minutes of `now`."""
    if not timestamp or not header or not timestamp.isdigit():
        return False
    if abs(now - int(timestamp)) > SLACK_MAX_SKEW_S:
        return False
    return hmac.compare_digest(slack_signature(secret, timestamp, body), header)
