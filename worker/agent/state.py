"""`State`: what a run knows so far, the conversation and the counters its limits are checked on."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from worker.agent.events import Observation
from worker.agent.llm import Message, Reply


@dataclass
class State:
    """The conversation so far and the running totals of one run."""

    task: str
    started: float = field(default_factory=time.monotonic)
    """When the run started, as a `time.monotonic()` instant."""
    messages: list[Message] = field(default_factory=list)
    """The whole conversation, uncondensed."""
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    priciest_call_usd: float = 0.0
    """The most a single model call has cost."""
    last_call_usd: float = 0.0
    call_growth_usd: float = 0.0
    """How much more the last call cost than the one before (prompts grow step by step)."""
    bad_replies: int = 0
    """Replies in a row with no valid tool call."""
    repeats: int = 0
    """Steps in a row identical to the one before (counting that one)."""
    last_step: tuple | None = None
    """What the last step did and saw, to recognise a repeat."""
    last_said: str = ""
    """The last text the model wrote beside its tool calls."""
    last_action: str = ""
    """One line on the last action run, for progress reports."""

    def add_reply(self, reply: Reply) -> None:
        self.steps += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.cost_usd += reply.cost_usd
        self.priciest_call_usd = max(self.priciest_call_usd, reply.cost_usd)
        if self.steps > 1:
            self.call_growth_usd = max(0.0, reply.cost_usd - self.last_call_usd)
        self.last_call_usd = reply.cost_usd
        self.messages.append(reply.message)
        if reply.message.content.strip():
            self.last_said = reply.message.content.strip()

    def add_observation(self, observation: Observation) -> None:
        if observation.call_id is None:
            self.messages.append(Message("user", observation.content))
        else:
            self.messages.append(Message("tool", observation.content, (), observation.call_id))

    def next_call_usd(self) -> float:
        """What the next model call may cost: the priciest so far, or the last plus its growth."""
        return max(self.priciest_call_usd, self.last_call_usd + self.call_growth_usd)

    def note_step(self, signature: tuple) -> int:
        """Record what a step did and saw; returns how many identical steps in a row that makes."""
        self.repeats = self.repeats + 1 if signature == self.last_step else 1
        self.last_step = signature
        return self.repeats

    def elapsed(self) -> float:
        return time.monotonic() - self.started
