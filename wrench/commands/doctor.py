"""`wrench doctor`: checks every part Wrench needs and says how to fix each one that fails."""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from wrench.secrets import Redactor
from wrench.settings import Settings, SettingsError, load_settings

OK, FAIL, NOTE = "OK", "FAIL", "NOTE"
MAX_DETAIL = 300
PING = "Reply with the single word OK."
IMAGE_FIX = "build it with `python -m sandbox.image` (scripts/setup does), or set SANDBOX_IMAGE"
MODEL_FIX = "check LLM_MODEL, LLM_API_KEY and LLM_BASE_URL; the provider's answer is above"
GITHUB_FIX = "check GITHUB_API_URL and that this machine can reach it"
NO_APP_FIX = (
    "run `wrench web` and open it to create the App from its manifest, or set APP_ID and "
    "PRIVATE_KEY (or PRIVATE_KEY_PATH)"
)
BAD_KEY_FIX = (
    "APP_ID and the private key must belong to the same App: check APP_ID, or generate a new "
    "private key on the App's settings page"
)
OPTIONAL = {
    "SLACK_SIGNING_SECRET": "not set: Slack commands (/slack/commands) are off",
    "PUBLIC_URL": "not set: links to job pages in comments are relative",
    "METRICS_TOKEN": "not set: /metrics answers anyone who can reach the web port",
    "LLM_API_KEY": "not set: litellm uses the provider's usual environment variable, if any",
}


@dataclass(frozen=True)
class Row:
    status: str
    check: str
    detail: str
    fix: str = ""


class Failed(Exception):
    """A check failed in a way it understands: what is wrong, and how to fix it."""

    def __init__(self, detail: str, fix: str = "") -> None:
        super().__init__(detail)
        self.detail, self.fix = detail, fix


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Settings], str]
    """Says what it found; raises (best `Failed`) when the part does not work."""
    fix: str
    """How to fix a failure the check does not explain itself."""
    timeout_s: float


def command(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except SettingsError as error:
        print(table([Row(FAIL, "settings", str(error), "fix them in the environment or .env")]))
        return 1
    rows = [Row(OK, "settings", _source()), *setting_rows(settings)]
    rows += run_checks(settings, checks(settings))
    print(table(rows, Redactor(settings.named_secrets())))
    failed = sum(row.status == FAIL for row in rows)
    print(f"\n{failed} problem(s) to fix" if failed else "\nall checks passed")
    return 1 if failed else 0


def checks(settings: Settings) -> list[Check]:
    found = [
        Check("redis", check_redis, "start Redis, or point REDIS_URL at it", 8),
        Check("docker", check_docker, "start the Docker engine and let this user use it", 15),
        Check("image", check_image, "get the Docker engine working first", 15),
        Check("github", check_github, GITHUB_FIX, 15),
        Check("model", lambda s: ask_model(s, s.LLM_MODEL), MODEL_FIX, 60),
    ]
    if settings.LLM_FALLBACK_MODEL:
        fallback = Check("fallback", lambda s: ask_model(s, s.LLM_FALLBACK_MODEL), MODEL_FIX, 60)
        found.append(fallback)
    return found


def run_checks(settings: Settings, to_run: list[Check]) -> list[Row]:
    """Every check at once, each in its own thread and with its own time limit."""
    results: dict[str, Row] = {}
    threads = []
    for check in to_run:
        thread = threading.Thread(
            target=lambda c=check: results.__setitem__(c.name, _run(c, settings)), daemon=True
        )
        thread.start()
        threads.append((check, thread))
    started = time.monotonic()
    rows = []
    for check, thread in threads:
        thread.join(max(0.0, started + check.timeout_s - time.monotonic()))
        late = Row(FAIL, check.name, f"no answer within {check.timeout_s:g} s", check.fix)
        rows.append(results.get(check.name, late))
    return rows


def _run(check: Check, settings: Settings) -> Row:
    try:
        return Row(OK, check.name, check.run(settings))
    except Failed as failed:
        return Row(FAIL, check.name, failed.detail, failed.fix or check.fix)
    except Exception as error:  # anything at all: the report must go on
        return Row(FAIL, check.name, f"{type(error).__name__}: {error}", check.fix)


def setting_rows(settings: Settings) -> list[Row]:
    """A missing webhook secret is a failure; a missing optional setting is a note."""
    rows = []
    if settings.WEBHOOK_SECRET is None:
        rows.append(
            Row(
                FAIL,
                "webhooks",
                "WEBHOOK_SECRET is not set: the web process refuses every webhook (503)",
                "set it to the App's webhook secret (the setup page writes it to .env)",
            )
        )
    for name, why in OPTIONAL.items():
        if getattr(settings, name) is None:
            rows.append(Row(NOTE, name, why))
    return rows


def check_redis(settings: Settings) -> str:
    from redis import Redis

    client = Redis.from_url(settings.REDIS_URL, socket_connect_timeout=3, socket_timeout=3)
    try:
        version = client.info("server")["redis_version"]
    finally:
        client.close()
    return f"{_address(settings.REDIS_URL)}, Redis {version}"


def check_docker(settings: Settings) -> str:
    import docker

    client = docker.from_env(timeout=10)
    version = client.version()["Version"]
    runtime = settings.SANDBOX_RUNTIME
    if runtime and runtime not in client.info().get("Runtimes", {}):
        raise Failed(
            f"Docker {version} has no runtime {runtime!r} (SANDBOX_RUNTIME)",
            "register it with dockerd (see the README on gVisor), or unset SANDBOX_RUNTIME",
        )
    return f"Docker {version}" + (f", runtime {runtime}" if runtime else "")


def check_image(settings: Settings) -> str:
    import docker
    from docker.errors import ImageNotFound

    try:
        image = docker.from_env(timeout=10).images.get(settings.SANDBOX_IMAGE)
    except ImageNotFound:
        raise Failed(f"{settings.SANDBOX_IMAGE} is not in the local engine", IMAGE_FIX) from None
    return f"{settings.SANDBOX_IMAGE} ({image.short_id})"


def check_github(settings: Settings) -> str:
    if settings.APP_ID is None or settings.private_key() is None:
        raise Failed("no GitHub App: APP_ID and PRIVATE_KEY are not set", NO_APP_FIX)
    from githubkit.exception import RequestFailed

    from wrench.github import app_client

    host = urlsplit(settings.GITHUB_API_URL).netloc
    try:
        with app_client(settings, timeout=8, retry=False) as app:
            found = app.request("GET", "/app").json()
    except RequestFailed as error:
        status = error.response.status_code
        if status == 401:
            raise Failed(f"{host} refused the App's credentials (401)", BAD_KEY_FIX) from None
        raise Failed(f"GET /app on {host} answered {status}", GITHUB_FIX) from None
    return f"App {found['slug']} (id {found['id']}) on {host}"


def ask_model(settings: Settings, model: str | None) -> str:
    """One tiny completion, without retries or fallback."""
    if not model:
        raise Failed("LLM_MODEL is not set", "set LLM_MODEL (a litellm model name) and its key")
    from worker.agent.llm import LiteLLMModel, LLMConfig, Message, ModelError

    config = LLMConfig.from_settings(
        settings,
        model=model,
        fallback_model=None,
        max_retries=0,
        timeout_s=min(settings.LLM_TIMEOUT_S, 20.0),
        completion_kwargs={"max_tokens": 16},
    )
    try:
        reply = LiteLLMModel(config).complete([Message("user", PING)], [], time.monotonic() + 25)
    except ModelError as error:
        raise Failed(f"{model} did not answer: {error}", MODEL_FIX) from None
    return f"{model} answered in {reply.duration_s:.1f} s"


def table(rows: list[Row], redactor: Redactor | None = None) -> str:
    """One line per check (status, name, what was found) and a `fix:` line under each failure."""
    redact = (redactor or Redactor()).redact
    width = max(len(row.check) for row in rows)
    lines = []
    for row in rows:
        detail = " ".join(redact(row.detail).split())
        if len(detail) > MAX_DETAIL:
            detail = detail[: MAX_DETAIL - 1] + "…"
        lines.append(f"{row.status:<4}  {row.check:<{width}}  {detail}")
        if row.status == FAIL:
            lines.append(f"{'':<4}  {'':<{width}}  fix: {redact(row.fix)}")
    return "\n".join(lines)


def _address(url: str) -> str:
    """The URL without its user and password."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _source() -> str:
    env = Path(".env").resolve()
    if env.is_file():
        return f"read from the environment and {env}"
    return "read from the environment (no .env in this directory)"
