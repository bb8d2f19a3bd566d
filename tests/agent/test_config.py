"""AgentConfig: limits from the operator's settings, validation, and the template files."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from worker.agent.config import PROMPTS, AgentConfig
from wrench.settings import Settings


def test_the_limits_come_from_the_settings_leaving_time_for_git_work():
    settings = Settings(_env_file=None, MAX_STEPS=7, MAX_COST_USD=0.5, JOB_TIMEOUT_S=1000)

    config = AgentConfig.from_settings(settings, stuck_after=5)

    assert (config.max_steps, config.max_cost_usd, config.max_duration_s) == (7, 0.5, 800)
    assert config.stuck_after == 5
    assert config.limits() == {"max_steps": 7, "max_cost_usd": 0.5, "max_duration_s": 800}


@pytest.mark.parametrize(
    "bad",
    [{"max_steps": 0}, {"max_cost_usd": 0}, {"stuck_after": 1}, {"keep_recent_observations": 0}],
)
def test_limits_that_make_no_sense_are_refused(bad):
    with pytest.raises(ValidationError):
        AgentConfig(**bad)


def test_the_prompts_default_to_the_template_files():
    config = AgentConfig()

    assert config.system_template == (PROMPTS / "system.j2").read_text()
    assert config.task_template == (PROMPTS / "task.j2").read_text()
