"""A repository's own settings for Wrench, from `.github/wrench.yml`, within the server's limits."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

CONFIG_PATH = ".github/wrench.yml"


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


def load_repo_config(workspace: Path) -> RepoConfig:
    """The repository's configuration, or the defaults when it has none."""
    path = workspace / CONFIG_PATH
    if not path.is_file():
        return RepoConfig()
    try:
        data = yaml.safe_load(path.read_text()) or {}
        return RepoConfig.model_validate(data)
    except yaml.YAMLError as exc:
        raise RepoConfigError(f"{CONFIG_PATH} is not valid YAML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'top level'}: {e['msg']}" for e in exc.errors()
        )
        raise RepoConfigError(f"{CONFIG_PATH}: {problems}") from None
