"""`AgentConfig`: the agent's behaviour and hard limits, validated, one docstring per field."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from wrench.settings import Settings

PROMPTS = Path(__file__).with_name("prompts")


def _template(name: str) -> str:
    return (PROMPTS / name).read_text()


class AgentConfig(BaseModel):
    """What the agent does and how far it may go."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    max_steps: int = Field(50, gt=0)
    """Model calls allowed; checked before each call."""
    max_cost_usd: float = Field(3.0, gt=0)
    """Model spend allowed; a call is not made when its estimated cost (the priciest call so far,
    or the last one plus its growth) would cross it."""
    max_duration_s: float = Field(1800.0, gt=0)
    """Wall-clock time allowed; model calls and commands are cut short to end by then."""
    command_timeout_s: float = Field(300.0, gt=0)
    """Limit on one command the model runs, in seconds."""
    max_format_errors: int = Field(3, gt=0)
    """Replies in a row without a valid tool call that end the run."""
    stuck_after: int = Field(4, ge=2)
    """Identical steps (same calls, same observations) in a row that end the run as stuck.
    The model is warned one step before."""
    keep_recent_observations: int | None = Field(6, ge=1)
    """Tool outputs kept verbatim in the prompt; older ones are masked. None keeps them all."""
    max_observation_chars: int = Field(12_000, ge=1000)
    """Longest tool output put in the prompt; the middle of longer ones is cut."""
    instruction_files: tuple[str, ...] = (".wrench/instructions.md", "AGENTS.md")
    """Files in the repository whose text, when present, goes into the task prompt."""
    max_instruction_chars: int = Field(20_000, ge=0)
    """Longest text taken from each instruction file."""
    system_template: str = Field(default_factory=lambda: _template("system.j2"))
    """Jinja template of the system prompt (variables: `workspace`, `max_steps`)."""
    task_template: str = Field(default_factory=lambda: _template("task.j2"))
    """Jinja template of the first user message (variables: `task`, `instructions`)."""

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> AgentConfig:
        """Limits from the operator's settings; a fifth of the job's time is left for git work."""
        values = {
            "max_steps": settings.MAX_STEPS,
            "max_cost_usd": settings.MAX_COST_USD,
            "max_duration_s": settings.JOB_TIMEOUT_S * 0.8,
        }
        return cls(**(values | overrides))

    def limits(self) -> dict[str, float]:
        """The hard limits, for the trajectory."""
        return {
            "max_steps": self.max_steps,
            "max_cost_usd": self.max_cost_usd,
            "max_duration_s": self.max_duration_s,
        }
