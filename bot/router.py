"""A small webhook router: handlers registered by event and action, all with one signature."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wrench.jobs import JobSpec


@dataclass(frozen=True)
class Delivery:
    """One verified webhook delivery."""

    id: str
    event: str
    payload: dict[str, Any]

    @property
    def action(self) -> str | None:
        action = self.payload.get("action")
        return action if isinstance(action, str) else None


@dataclass(frozen=True)
class TriggerConfig:
    """What handlers need to decide whether a delivery asks for work."""

    bot_name: str
    trigger_label: str

    @property
    def bot_login(self) -> str:
        return f"{self.bot_name}[bot]"


@dataclass(frozen=True)
class Ignore:
    """A delivery that asks for nothing, and why (shown in GitHub's delivery log)."""

    reason: str


Decision = JobSpec | Ignore
Handler = Callable[[Delivery, TriggerConfig], Decision]


class Router:
    """Maps (event, action) to handlers; an action of None matches every action."""

    def __init__(self) -> None:
        self._handlers: dict[tuple[str, str | None], list[Handler]] = {}

    def register(self, event: str, action: str | None = None) -> Callable[[Handler], Handler]:
        def decorator(handler: Handler) -> Handler:
            self._handlers.setdefault((event, action), []).append(handler)
            return handler

        return decorator

    def events(self) -> set[str]:
        """Every event some handler listens to."""
        return {event for event, _ in self._handlers}

    def dispatch(self, delivery: Delivery, config: TriggerConfig) -> list[Decision]:
        """Every handler's decision for this delivery; empty when no handler matches."""
        handlers = self._handlers.get((delivery.event, None), []) + self._handlers.get(
            (delivery.event, delivery.action), []
        )
        return [handler(delivery, config) for handler in handlers]
