"""Server configuration, read once at an entry point from the environment and an optional `.env`."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from wrench.schedules import Schedule


class SettingsError(Exception):
    """A setting is missing or invalid; the message names it and says how to fix it."""


class Settings(BaseSettings):
    """Every knob an operator can turn. Names are the public contract: keep them."""

    model_config = SettingsConfigDict(
        env_file=".env", extra="ignore", case_sensitive=True, use_attribute_docstrings=True
    )

    APP_ID: int | None = None
    """GitHub App id, shown on the App's settings page."""
    PRIVATE_KEY: SecretStr | None = None
    """The App's PEM private key, inline (newlines may be written as `\\n`)."""
    PRIVATE_KEY_PATH: Path | None = None
    """Path to the App's PEM private key file, as an alternative to PRIVATE_KEY."""
    WEBHOOK_SECRET: SecretStr | None = None
    """Secret GitHub signs webhook deliveries with; the web process refuses webhooks without it."""
    PUBLIC_URL: str | None = None
    """This server's address as GitHub reaches it, e.g. `https://wrench.example.com`; defaults to
    the address the setup page was opened with. Used in the App manifest and job links."""
    GITHUB_API_URL: str = "https://api.github.com"
    """REST base URL; for GitHub Enterprise Server `https://HOST/api/v3`."""
    BOT_NAME: str | None = None
    """The handle people @mention, without `@`; defaults to the App's slug."""
    TRIGGER_LABEL: str = "wrench"
    """The label that starts work on an issue or pull request."""
    REDIS_URL: str = "redis://127.0.0.1:6379/0"
    """Redis holding the job queue, delivery ids and job state."""
    QUEUE_NAME: str = "wrench"
    """rq queue for agent jobs."""
    LLM_MODEL: str | None = None
    """Any litellm model name, e.g. `openai/gpt-4.1` or `anthropic/claude-sonnet-4-5`."""
    LLM_API_KEY: SecretStr | None = None
    """Key for the model provider."""
    LLM_BASE_URL: str | None = None
    """Base URL of an OpenAI-compatible server, when not the provider's default."""
    LLM_FALLBACK_MODEL: str | None = None
    """A litellm model tried (same key and URL) when `LLM_MODEL` keeps failing."""
    LLM_TIMEOUT_S: float = Field(180.0, gt=0)
    """Limit on one model call, in seconds."""
    LLM_INPUT_USD_PER_MTOK: float = Field(3.0, ge=0)
    """Price of a million prompt tokens, for models litellm has no price for (0 for free ones)."""
    LLM_OUTPUT_USD_PER_MTOK: float = Field(15.0, ge=0)
    """Price of a million completion tokens, for models litellm has no price for."""
    SANDBOX_IMAGE: str = "wrench-sandbox:latest"
    """Docker image the sandbox runs; `scripts/setup` builds the project's own under this name."""
    MAX_STEPS: int = Field(50, gt=0)
    """Hard limit on agent steps per job."""
    MAX_COST_USD: float = Field(3.0, gt=0)
    """Hard limit on model spend per job, in US dollars."""
    JOB_TIMEOUT_S: int = Field(1800, gt=0)
    """Hard limit on a job's wall-clock time, in seconds."""
    SLACK_SIGNING_SECRET: SecretStr | None = None
    """Slack's request signing secret, for `/slack/commands`."""
    SLACK_ACCESS: dict[str, list[str]] = {}
    """Who may use `/wrench` on what, as JSON: Slack user or channel ids to repository patterns
    (`owner/repo`, `owner/*` or `*`). Anyone not listed is refused."""
    SCHEDULES: list[Schedule] = []
    """Schedules (JSON, same keys as in `.github/wrench.yml`) for every installed repository."""
    MAX_OPEN_PRS: int = Field(3, ge=1)
    """Scheduled runs are skipped while a repository has this many open Wrench pull requests."""
    SCHEDULER_INTERVAL_S: int = Field(60, ge=5)
    """How often the scheduler looks for due schedules."""
    JOB_LINK_SECRET: SecretStr | None = None
    """Key that signs links to job pages; defaults to one derived from WEBHOOK_SECRET."""
    METRICS_TOKEN: SecretStr | None = None
    """When set, `GET /metrics` requires `Authorization: Bearer <token>`."""
    DATA_DIR: Path = Path("var")
    """Where the worker keeps job trajectories, per-job clones and the sandbox pool's claims."""
    LOG_FORMAT: str = Field("text", pattern="^(text|json)$")
    """`text` for people, `json` for log collectors."""

    @model_validator(mode="after")
    def _one_private_key(self) -> Settings:
        if self.PRIVATE_KEY and self.PRIVATE_KEY_PATH:
            raise ValueError("set PRIVATE_KEY or PRIVATE_KEY_PATH, not both")
        if self.PRIVATE_KEY_PATH and not self.PRIVATE_KEY_PATH.is_file():
            raise ValueError(f"PRIVATE_KEY_PATH: no file at {self.PRIVATE_KEY_PATH}")
        return self

    def private_key(self) -> str | None:
        """The App's PEM key from whichever setting holds it."""
        if self.PRIVATE_KEY_PATH:
            return self.PRIVATE_KEY_PATH.read_text()
        if self.PRIVATE_KEY:
            return self.PRIVATE_KEY.get_secret_value().replace("\\n", "\n")
        return None

    def named_secrets(self) -> dict[str, str]:
        """Every secret this configuration holds, by what it is, passwords written into URLs
        included: for redaction, and for the secret scan before publishing."""
        named = {
            "WEBHOOK_SECRET": self.WEBHOOK_SECRET,
            "LLM_API_KEY": self.LLM_API_KEY,
            "SLACK_SIGNING_SECRET": self.SLACK_SIGNING_SECRET,
            "JOB_LINK_SECRET": self.JOB_LINK_SECRET,
            "METRICS_TOKEN": self.METRICS_TOKEN,
        }
        found = {name: secret.get_secret_value() for name, secret in named.items() if secret}
        for name in ("REDIS_URL", "LLM_BASE_URL", "GITHUB_API_URL"):
            if password := urlsplit(getattr(self, name) or "").password:
                found[f"the password in {name}"] = password
        if key := self.private_key():
            found["the App's private key"] = key
        return found

    # --- Sandbox: the operator's knobs; sandbox/config.py builds the full SandboxConfig. ---
    SANDBOX_POOL_SIZE: int = Field(2, ge=0)
    """Started idle sandboxes kept ready, so a job gets one in milliseconds; 0 disables the pool."""
    SANDBOX_NETWORK: bool = False
    """Give sandboxes the engine's default bridge network; off (the default) means no network."""
    SANDBOX_RUNTIME: str | None = None
    """OCI runtime for sandboxes, e.g. `runsc` for gVisor; empty means the engine's default."""
    SANDBOX_MEMORY: str = Field("2g", pattern=r"^[0-9]+[bkmg]?$")
    """Memory limit per sandbox (`512m`, `2g`); swap is capped to the same."""
    SANDBOX_CPUS: float = Field(2.0, gt=0)
    """CPUs per sandbox (1.5 means one and a half cores)."""
    SANDBOX_PIDS: int = Field(512, ge=16)
    """Most processes per sandbox, so a fork bomb stalls inside it."""
    SANDBOX_INSTANCE: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9_.-]{0,39}$")
    """Label namespace of this deployment's containers; by default one made up once and kept in
    `DATA_DIR/instance`, so that deployments sharing an engine never touch each other's."""


def load_settings(**overrides: object) -> Settings:
    """Read the settings, turning validation errors into one message that names each setting."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = ".".join(str(part) for part in error["loc"]) or "configuration"
            problems.append(f"{name}: {error['msg']}")
        raise SettingsError("invalid configuration: " + "; ".join(problems)) from None
