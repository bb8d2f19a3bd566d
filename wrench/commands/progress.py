"""The live display of `wrench run`: step, last action and cost on one line, rewritten in place."""

from __future__ import annotations

import shutil
from typing import TextIO

from worker.agent import Action, Event, Progress, RunEnded


class ProgressLine:
    """An event subscriber drawing the run's progress; one line per step when not a terminal."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._tty = out.isatty()
        self._open = False
        """Whether the terminal's cursor sits at the end of a progress line."""

    def __call__(self, event: Event) -> None:
        if isinstance(event, Action) and self._tty:
            self._show(f"step {event.step}: {event.summary()}")
        elif isinstance(event, Progress):
            self._show(progress_line(event))
        elif isinstance(event, RunEnded):
            self.end_line()

    def say(self, text: str) -> None:
        """A message on a line of its own."""
        self.end_line()
        self._out.write(f"wrench: {text}\n")
        self._out.flush()

    def end_line(self) -> None:
        if self._open:
            self._out.write("\n")
            self._open = False

    def _show(self, text: str) -> None:
        if self._tty:
            width = shutil.get_terminal_size().columns - 1
            self._out.write("\r\x1b[K" + text[:width])
            self._open = True
        else:
            self._out.write(text + "\n")
        self._out.flush()


def progress_line(event: Progress) -> str:
    """`step 3/50 · $0.04 of $3.00 · 41 s · last: bash: pytest -q`"""
    return (
        f"step {event.step}/{event.max_steps} · ${event.cost_usd:.2f} of ${event.max_cost_usd:.2f}"
        f" · {int(event.elapsed_s)} s · last: {event.last_action}"
    )
