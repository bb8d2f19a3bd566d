"""GitHub clients built from the settings: App (JWT) auth and per-installation auth."""

from __future__ import annotations

from githubkit import AppAuthStrategy, GitHub

from wrench.settings import Settings, SettingsError


def app_client(settings: Settings, timeout: float | None = None, retry: bool = True) -> GitHub:
    """A client that authenticates as the App itself (for /app and installation look-ups).

    `timeout` limits each request (None: githubkit's default); without `retry` a failed request
    fails at once, for quick checks."""
    key = settings.private_key()
    if settings.APP_ID is None or key is None:
        raise SettingsError("APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH) must be set")
    return GitHub(
        AppAuthStrategy(str(settings.APP_ID), key),
        base_url=settings.GITHUB_API_URL,
        timeout=timeout,
        auto_retry=retry,
    )


def app_slug(settings: Settings) -> str:
    """The App's slug, which is also the name people @mention."""
    with app_client(settings) as github:
        return github.request("GET", "/app").json()["slug"]
