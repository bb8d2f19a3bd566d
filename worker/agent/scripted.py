"""`ScriptedModel`: a fake `LLM` replaying scripted replies in-process, for tests and benchmarks."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from worker.agent.llm import Message, ModelError, Reply, ToolCall

CHARS_PER_TOKEN = 4
"""The fake's tokenizer: one token per four characters of the messages' JSON, rounded up."""

_ids = itertools.count(1)


def call(name: str, arguments: dict[str, Any] | str | None = None, content: str = "") -> Message:
    """An assistant message calling one tool; a `str` is sent as is (to script malformed JSON)."""
    return calls((name, arguments or {}), content=content)


def calls(*tool_calls: tuple[str, dict[str, Any] | str], content: str = "") -> Message:
    """An assistant message calling several tools at once."""
    wire = tuple(
        ToolCall(f"call_{next(_ids)}", name, args if isinstance(args, str) else json.dumps(args))
        for name, args in tool_calls
    )
    return Message("assistant", content, wire)


def say(text: str) -> Message:
    """An assistant message with text and no tool call."""
    return Message("assistant", text)


def count_tokens(messages: Sequence[Message]) -> int:
    """The fake's token count of a conversation."""
    return math.ceil(len(json.dumps([m.to_openai() for m in messages])) / CHARS_PER_TOKEN)


class ScriptedModel:
    """Replays a script of replies (or raises its exceptions) and records each prompt it got."""

    def __init__(
        self,
        script: Iterable[Message | Exception],
        *,
        model: str = "scripted",
        cost_per_call_usd: float = 0.0,
        usd_per_mtok: float = 0.0,
    ) -> None:
        self.model = model
        self.cost_per_call_usd = cost_per_call_usd
        self.usd_per_mtok = usd_per_mtok
        """Price of a million tokens (prompt or completion), on top of the cost per call."""
        self.prompts: list[list[Message]] = []
        """Every conversation the model was asked to continue, in order."""
        self.tools: list[dict[str, Any]] = []
        """The tools offered with the last call."""
        self._script = iter(script)

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        deadline: float | None = None,
    ) -> Reply:
        self.prompts.append(list(messages))
        self.tools = list(tools)
        item = next(self._script, None)
        if item is None:
            raise ModelError("scripted model: the script has no more replies")
        if isinstance(item, Exception):
            raise item
        prompt, completion = count_tokens(messages), count_tokens([item])
        return Reply(
            message=item,
            model=self.model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=self.cost_per_call_usd + (prompt + completion) * self.usd_per_mtok / 1e6,
            duration_s=0.0,
        )
