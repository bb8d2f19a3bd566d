"""Installation tokens scoped to one repository, cached in Redis (encrypted) across processes."""

from __future__ import annotations

import hashlib
import os
import time
from datetime import datetime

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from githubkit import GitHub
from redis import Redis

# What a job needs: push branches, comment and react, open pull requests.
JOB_PERMISSIONS = {
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
    "metadata": "read",
}
# What the scheduler needs to find due schedules.
SCHEDULER_PERMISSIONS = {"contents": "read", "pull_requests": "read", "metadata": "read"}
# Stop using a cached token this long before GitHub expires it (a job may outlive it otherwise).
EXPIRY_MARGIN_S = 15 * 60


class InstallationTokens:
    """Mints tokens through the App's JWT client; Redis holds them encrypted with a key derived
    from the App's private key, so a Redis dump alone does not leak them."""

    def __init__(self, redis: Redis, app: GitHub, private_key: str) -> None:
        self._redis = redis
        self._app = app
        key = hashlib.sha256(b"wrench-token-cache\0" + private_key.encode()).digest()
        self._cipher = AESGCM(key)

    def get(
        self,
        installation_id: int,
        repository: str | None,
        permissions: dict[str, str] = JOB_PERMISSIONS,
    ) -> str:
        """A token for `repository` (the name, without owner; None for every repository the
        installation covers) with exactly `permissions`."""
        scope = ",".join(f"{k}:{v}" for k, v in sorted(permissions.items()))
        key = f"wrench:token:{installation_id}:{repository}:{scope}"
        with self._redis.lock(f"{key}:lock", timeout=60, blocking_timeout=60):
            if (cached := self._load(key)) is not None:
                return cached
            token, expires_at = self._mint(installation_id, repository, permissions)
            ttl = int(expires_at - time.time() - EXPIRY_MARGIN_S)
            if ttl > 0:
                nonce = os.urandom(12)
                sealed = nonce + self._cipher.encrypt(nonce, token.encode(), key.encode())
                self._redis.set(key, sealed, ex=ttl)
            return token

    def _load(self, key: str) -> str | None:
        sealed = self._redis.get(key)
        if sealed is None:
            return None
        try:
            return self._cipher.decrypt(sealed[:12], sealed[12:], key.encode()).decode()
        except InvalidTag:  # sealed with another App key: mint afresh
            return None

    def _mint(
        self, installation_id: int, repository: str | None, permissions: dict[str, str]
    ) -> tuple[str, float]:
        body: dict = {"permissions": permissions}
        if repository is not None:
            body["repositories"] = [repository]
        answer = self._app.request(
            "POST", f"/app/installations/{installation_id}/access_tokens", json=body
        ).json()
        expires = datetime.fromisoformat(answer["expires_at"].replace("Z", "+00:00"))
        return answer["token"], expires.timestamp()
