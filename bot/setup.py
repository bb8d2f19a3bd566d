"""First run without credentials: create the GitHub App from `app.yml` (GitHub's manifest flow).

GET / offers one button that posts the manifest to GitHub; GitHub sends the browser back to
/setup/callback with a code, which is exchanged for the App's id, key and webhook secret.
Those are written to `.env` (mode 600). Once APP_ID is set, these pages are gone.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from flask import Blueprint, abort, current_app, render_template, request

from wrench.settings import Settings

blueprint = Blueprint("setup", __name__)
MANIFEST = Path(__file__).resolve().parents[1] / "app.yml"
# pydantic-settings reads `.env` from the working directory; setup writes the same file.
ENV_FILE = Path(".env")
STATE_TTL_S = 3600


def github_web_url(api_url: str) -> str:
    """github.com for the public API, else the Enterprise Server host of `https://HOST/api/v3`."""
    parts = urlsplit(api_url)
    if parts.hostname == "api.github.com":
        return "https://github.com"
    return f"{parts.scheme}://{parts.netloc}"


def manifest(base_url: str) -> dict:
    """`app.yml`, pointed at this server."""
    data = yaml.safe_load(MANIFEST.read_text())
    data["url"] = base_url
    data["hook_attributes"] = {"url": f"{base_url}/api/github/webhooks", "active": True}
    data["redirect_url"] = f"{base_url}/setup/callback"
    return data


def _settings() -> Settings:
    """The settings, while the App does not exist yet; 404 once it does, also before the
    restart that reads `.env`, so that nobody can replace the App's credentials."""
    settings = current_app.extensions["wrench"].settings
    if settings.APP_ID is not None or _configured(ENV_FILE):
        abort(404)
    return settings


def _configured(path: Path) -> bool:
    if not path.exists():
        return False
    return any(line.split("=", 1)[0].strip() == "APP_ID" for line in path.read_text().splitlines())


@blueprint.get("/")
def start():
    settings = _settings()
    state = secrets.token_urlsafe(24)
    current_app.extensions["wrench"].redis.set(f"wrench:setup:{state}", "1", ex=STATE_TTL_S)
    base_url = (settings.PUBLIC_URL or request.host_url).rstrip("/")
    return render_template(
        "setup.html",
        manifest=json.dumps(manifest(base_url)),
        github=github_web_url(settings.GITHUB_API_URL),
        state=state,
    )


@blueprint.get("/setup/callback")
def callback():
    settings = _settings()
    state, code = request.args.get("state", ""), request.args.get("code", "")
    if not code or not current_app.extensions["wrench"].redis.delete(f"wrench:setup:{state}"):
        abort(400, "this setup link is stale or was not started here: start again from /")
    from githubkit import GitHub, UnauthAuthStrategy
    from githubkit.exception import GitHubException

    github = GitHub(UnauthAuthStrategy(), base_url=settings.GITHUB_API_URL, http_cache=False)
    try:
        app = github.request("POST", f"/app-manifests/{code}/conversions").json()
    except GitHubException as exc:
        abort(502, f"GitHub did not create the App ({type(exc).__name__}): start again from /")
    write_env(
        ENV_FILE,
        {
            "APP_ID": str(app["id"]),
            "PRIVATE_KEY": app["pem"],
            "WEBHOOK_SECRET": app["webhook_secret"],
        },
    )
    return render_template("setup_done.html", app=app, env_file=ENV_FILE.resolve())


def write_env(path: Path, values: dict[str, str]) -> None:
    """Set `values` in a dotenv file, keeping its other lines; the file is made mode 600."""
    kept = []
    if path.exists():
        kept = [
            line
            for line in path.read_text().splitlines()
            if line.split("=", 1)[0].strip() not in values
        ]
    lines = kept + [f"{key}={json.dumps(value)}" for key, value in values.items()]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("\n".join(lines) + "\n")
    path.chmod(0o600)
