"""GitHub clients built from the settings: App (JWT) auth and per-installation auth."""

from __future__ import annotations

from githubkit import AppAuthStrategy, GitHub

from wrench.settings import Settings, SettingsError


def app_client(settings: Settings) -> GitHub:
    """A client that authenticates as the App itself (for /app and installation look-ups)."""
    key = settings.private_key()
    if settings.APP_ID is None or key is None:
        raise SettingsError("APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH) must be set")
    return GitHub(AppAuthStrategy(str(settings.APP_ID), key), base_url=settings.GITHUB_API_URL)


def app_slug(settings: Settings) -> str:
    """The App's slug, which is also the name people @mention."""
    with app_client(settings) as github:
        return github.request("GET", "/app").json()["slug"]
