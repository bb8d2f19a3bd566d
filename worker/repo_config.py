"""A repository's own settings for Wrench, from `.github/wrench.yml`, within the server's limits."""

from __future__ import annotations

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from wrench.schedules import Schedule

CONFIG_PATH = ".github/wrench.yml"
MAX_CONFIG_BYTES = 64 * 1024


class RepoConfigError(ValueError):
    """`.github/wrench.yml` is not valid; the message says where and why."""


class Limits(BaseModel):
    """Per-job limits; the server's own are the ceiling."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int | None = Field(None, gt=0)
    """At most this many agent steps."""
    max_cost_usd: float | None = Field(None, gt=0)
    """At most this much model spend, in US dollars."""
    timeout_s: int | None = Field(None, gt=0)
    """At most this many seconds of wall-clock time."""


class RepoConfig(BaseModel):
    """The keys `.github/wrench.yml` may hold; unknown keys are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    """A litellm model name to use instead of the server's LLM_MODEL."""
    limits: Limits = Limits()
    """Lower limits for jobs on this repository."""
    setup: list[str] = []
    """Commands run in the sandbox before the agent starts, e.g. `pip install -e .`."""
    draft: bool = True
    """Open pull requests as drafts (the default) or ready for review."""
    setup_timeout_s: int = Field(600, gt=0)
    """Time allowed for all setup commands together."""
    schedules: list[Schedule] = []
    """Recurring tasks; see `wrench.schedules.Schedule`."""

    @field_validator("schedules")
    @classmethod
    def _unique_names(cls, schedules: list[Schedule]) -> list[Schedule]:
        names = [s.name for s in schedules]
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"schedule names must be unique: {', '.join(dupes)}")
        return schedules


def parse_config_file(data: bytes | None) -> RepoConfig:
    """The configuration in the bytes of `.github/wrench.yml` (None: the repository has none,
    so the defaults); RepoConfigError when it is too large or invalid."""
    if data is None:
        return RepoConfig()
    if len(data) > MAX_CONFIG_BYTES:
        raise RepoConfigError(f"{CONFIG_PATH} is larger than {MAX_CONFIG_BYTES} bytes")
    return parse_repo_config(data.decode(errors="replace"))


def parse_repo_config(text: str) -> RepoConfig:
    """The configuration in a `.github/wrench.yml` text; RepoConfigError when it is invalid."""
    try:
        return RepoConfig.model_validate(yaml.safe_load(text) or {})
    except yaml.YAMLError as exc:
        raise RepoConfigError(f"{CONFIG_PATH} is not valid YAML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'top level'}: {e['msg']}" for e in exc.errors()
        )
        raise RepoConfigError(f"{CONFIG_PATH}: {problems}") from None
