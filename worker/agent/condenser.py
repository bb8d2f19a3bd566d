"""Keeping prompts from growing without bound: old tool outputs are masked before each call."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from worker.agent.llm import Message, ToolCall

MASK = "[old output omitted: {chars} chars]"
LONG_ARGUMENT = 400
"""Argument strings longer than this (a whole file for `create`) are cut in old tool calls."""


class Condenser(Protocol):
    """Turns the full conversation into the one sent to the model."""

    def condense(self, messages: Sequence[Message]) -> list[Message]: ...


class NoCondenser:
    """Sends the whole conversation every time."""

    def condense(self, messages: Sequence[Message]) -> list[Message]:
        return list(messages)


class ObservationMasker:
    """Keeps the latest tool outputs and replaces older ones with a one-line placeholder.

    Observation masking (as in "The Complexity Trap", Lindenbauer et al. 2025) keeps every
    action the model took, so it still knows what it did, and drops the bulky outputs it has
    already acted on; it costs no model call, unlike summarising. Long arguments of the same
    old calls (file contents the model wrote) are cut too, keeping the JSON valid.
    """

    def __init__(self, keep_recent: int = 6) -> None:
        self.keep_recent = keep_recent

    def condense(self, messages: Sequence[Message]) -> list[Message]:
        condensed = list(messages)
        outputs = [i for i, message in enumerate(condensed) if message.role == "tool"]
        old = outputs[: max(0, len(outputs) - self.keep_recent)]
        if not old:
            return condensed
        for i in old:
            content = condensed[i].content
            mask = MASK.format(chars=len(content))
            if len(content) > len(mask):
                condensed[i] = replace(condensed[i], content=mask)
        for i in range(old[-1]):
            if condensed[i].tool_calls:
                calls = tuple(_shorten(call) for call in condensed[i].tool_calls)
                condensed[i] = replace(condensed[i], tool_calls=calls)
        return condensed


def _shorten(call: ToolCall) -> ToolCall:
    if len(call.arguments) <= LONG_ARGUMENT:
        return call
    try:
        arguments = json.loads(call.arguments)
    except json.JSONDecodeError:
        return call  # the model was told it was malformed; keep what it wrote
    if not isinstance(arguments, dict):
        return call
    for name, value in arguments.items():
        if isinstance(value, str) and len(value) > LONG_ARGUMENT:
            arguments[name] = (
                value[:LONG_ARGUMENT] + f"[... {len(value) - LONG_ARGUMENT} chars omitted]"
            )
    return replace(call, arguments=json.dumps(arguments))
