"""Signed, expiring links to job pages: trajectories hold private code, so a link is a key."""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import urlencode

from wrench.settings import Settings

LINK_TTL_S = 7 * 86400


def _key(settings: Settings) -> bytes:
    """JOB_LINK_SECRET, or a key derived from the webhook secret so that links work unset."""
    if settings.JOB_LINK_SECRET is not None:
        return settings.JOB_LINK_SECRET.get_secret_value().encode()
    if settings.WEBHOOK_SECRET is None:
        raise ValueError("set JOB_LINK_SECRET or WEBHOOK_SECRET to sign job links")
    base = settings.WEBHOOK_SECRET.get_secret_value().encode()
    return hmac.new(base, b"wrench job links", hashlib.sha256).digest()


def _signature(settings: Settings, job_id: str, expires: int) -> str:
    message = f"{job_id}:{expires}".encode()
    return hmac.new(_key(settings), message, hashlib.sha256).hexdigest()


def job_link(settings: Settings, job_id: str, now: float | None = None) -> str:
    """`/jobs/<id>?expires=..&sig=..`, absolute when PUBLIC_URL is set."""
    expires = int((now or time.time()) + LINK_TTL_S)
    query = urlencode({"expires": expires, "sig": _signature(settings, job_id, expires)})
    return f"{(settings.PUBLIC_URL or '').rstrip('/')}/jobs/{job_id}?{query}"


def verify(
    settings: Settings, job_id: str, expires: str, signature: str, now: float | None = None
) -> bool:
    """Whether the link was made by this server and has not expired."""
    if not expires.isdigit() or int(expires) < (now or time.time()):
        return False
    return hmac.compare_digest(_signature(settings, job_id, int(expires)), signature)
