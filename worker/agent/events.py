"""What happens in a run, as events on a stream, and the redacted JSONL trajectory they make."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, is_dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, computed_field

from worker.agent.llm import Message
from wrench.secrets import Redactor

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Event:
    """Something that happened in a run."""

    step: int
    """The model call it belongs to (0 before the first)."""
    at: float = field(default_factory=time.time)
    """When it happened, as a Unix time."""


@dataclass(frozen=True)
class RunStarted(Event):
    """The task, the model and the limits a run starts with."""

    task: str
    model: str
    limits: dict[str, float]


@dataclass(frozen=True)
class Prompt(Event):
    """A message the run starts with: the system prompt or the task."""

    role: str
    content: str


@dataclass(frozen=True)
class ModelReply(Event):
    """The model's answer, with its usage, cost and how long it took."""

    message: Message
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    duration_s: float


@dataclass(frozen=True)
class Action(Event):
    """A checked tool call, about to run."""

    tool: str
    arguments: dict[str, Any]
    call_id: str

    def summary(self, width: int = 80) -> str:
        """One line saying what the action does, for progress reports."""
        args = self.arguments
        detail = args.get("command", "")
        if self.tool == "str_replace_editor":
            detail = f"{detail} {args.get('path', '')}"
        line = " ".join(f"{self.tool}: {detail}".split())
        return line if len(line) <= width else line[: width - 1] + "…"


@dataclass(frozen=True)
class Observation(Event):
    """What the model is told after a tool call or a bad reply."""

    content: str
    call_id: str | None = None
    """The call it answers; None for feedback on the reply as a whole (sent as a user message)."""
    tool: str = ""
    error: bool = False
    """Whether the call failed or could not run."""
    exit_code: int | None = None
    duration_s: float = 0.0


@dataclass(frozen=True)
class Progress(Event):
    """Where the run stands after a step, for status reports."""

    max_steps: int
    last_action: str
    cost_usd: float
    max_cost_usd: float
    prompt_tokens: int
    completion_tokens: int
    elapsed_s: float


class StopReason(StrEnum):
    """Why a run ended."""

    FINISHED = "finished"
    MAX_STEPS = "max_steps"
    MAX_COST = "max_cost"
    TIMEOUT = "timeout"
    STUCK = "stuck"
    FORMAT_ERRORS = "format_errors"
    MODEL_ERROR = "model_error"
    CANCELLED = "cancelled"
    ERROR = "error"


class RunResult(BaseModel):
    """How a run ended and what it used."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    reason: StopReason
    message: str
    """The model's message to the user when it finished; else the last thing it said, if any."""
    detail: str
    """Why the run ended, in a sentence for people."""
    steps: int
    """Model calls made."""
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    duration_s: float

    @computed_field
    @property
    def finished(self) -> bool:
        """Whether the model called `finish` (rather than being stopped)."""
        return self.reason is StopReason.FINISHED


@dataclass(frozen=True)
class RunEnded(Event):
    """How the run ended: always the last event."""

    result: RunResult


Subscriber = Callable[[Event], None]


class EventStream:
    """The run's events in order; each one is handed to every subscriber as it is added."""

    def __init__(self, subscribers: Iterable[Subscriber] = ()) -> None:
        self.events: list[Event] = []
        self._subscribers = list(subscribers)

    def add(self, event: Event) -> None:
        self.events.append(event)
        for subscriber in self._subscribers:
            try:
                subscriber(event)
            except Exception:  # a failing status report must not end the agent's work
                log.exception("event subscriber %r failed", subscriber)


class TrajectoryWriter:
    """A subscriber appending each event as one JSON line, secrets redacted, flushed at once."""

    def __init__(self, path: Path, redactor: Redactor) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._redactor = redactor
        self._file = path.open("a", encoding="utf-8")

    def __call__(self, event: Event) -> None:
        record = event_record(event, self._redactor)
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def event_record(event: Event, redactor: Redactor) -> dict[str, Any]:
    """The event as one JSON object, tagged with its kind, every string redacted."""
    return {"kind": type(event).__name__, **_jsonable(event, redactor.redact)}


def _jsonable(value: Any, redact: Callable[[str], str]) -> Any:
    """Plain JSON data with every string (keys too) redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): _jsonable(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item, redact) for item in value]
    if isinstance(value, BaseModel):
        return _jsonable(value.model_dump(mode="json"), redact)
    if is_dataclass(value):
        return {f.name: _jsonable(getattr(value, f.name), redact) for f in fields(value)}
    return value
