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
