"""`Agent`: renders the prompts and turns the State into the model's next reply."""

from __future__ import annotations

import logging

from jinja2 import Environment, StrictUndefined

from sandbox.base import Sandbox
from worker.agent.condenser import Condenser, NoCondenser, ObservationMasker
from worker.agent.config import AgentConfig
from worker.agent.llm import LLM, Message, Reply
from worker.agent.state import State
from worker.agent.tools import TOOLS

log = logging.getLogger(__name__)

_jinja = Environment(undefined=StrictUndefined, keep_trailing_newline=False, autoescape=False)


class Agent:
    """Asks the model what to do next, showing it a condensed conversation and the tools."""

    def __init__(self, llm: LLM, config: AgentConfig, condenser: Condenser | None = None) -> None:
        self.llm = llm
        self.config = config
        if condenser is None:
            keep = config.keep_recent_observations
            condenser = NoCondenser() if keep is None else ObservationMasker(keep)
        self.condenser = condenser

    def prompts(self, task: str, sandbox: Sandbox) -> list[Message]:
        """The system prompt and the task, with the repository's own instructions."""
        system = _jinja.from_string(self.config.system_template).render(
            workspace=sandbox.workspace, max_steps=self.config.max_steps
        )
        instructions = read_instructions(sandbox, self.config)
        user = _jinja.from_string(self.config.task_template).render(
            task=task, instructions=instructions
        )
        return [Message("system", system.strip()), Message("user", user.strip())]

    def step(self, state: State, deadline: float | None = None) -> Reply:
        """The model's reply to the conversation so far."""
        return self.llm.complete(self.condenser.condense(state.messages), TOOLS, deadline)


def read_instructions(sandbox: Sandbox, config: AgentConfig) -> list[tuple[str, str]]:
    """(file name, text) of each instruction file the repository has, each cut to the limit."""
    found = []
    for name in config.instruction_files:
        try:
            data = sandbox.read_file(name)
        except OSError:  # no such file (or unreadable): the repository has no instructions there
            continue
        text = data.decode("utf-8", errors="replace").strip()
        if len(text) > config.max_instruction_chars:
            log.info(
                "%s is long: only its first %d characters are used",
                name,
                config.max_instruction_chars,
            )
            text = text[: config.max_instruction_chars] + "\n[the rest of this file was cut]"
        if text:
            found.append((name, text))
    return found
