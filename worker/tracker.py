"""The tracking comment: one comment per job, edited as the job moves, checked for secrets."""

from __future__ import annotations

import time
from collections.abc import Callable

from worker.github import GitHubRepo
from wrench.secrets import Redactor

HEADER = "🔧 **Wrench**"
WITHHELD = (
    "Wrench withheld this message because it contained something that looks like a secret "
    "(a token or key). The operator can read the job's log."
)


class Tracker:
    """Keeps one comment up to date; progress edits are throttled, stage changes are not."""

    def __init__(
        self,
        github: GitHubRepo,
        number: int,
        redactor: Redactor,
        footer: str = "",
        min_interval_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._github, self._number, self._redactor = github, number, redactor
        self._footer, self._min_interval_s, self._clock = footer, min_interval_s, clock
        self.comment_id: int | None = None
        self._last_edit = float("-inf")

    def start(self, status: str, comment_id: int | None = None) -> int:
        """Create the comment, or adopt one an earlier run of this job created."""
        self.comment_id = comment_id
        self.stage(status)
        assert self.comment_id is not None
        return self.comment_id

    def stage(self, status: str) -> None:
        self._post(status)

    def progress(self, status: str) -> None:
        """An edit that may be skipped when the last one was less than the interval ago."""
        if self._clock() - self._last_edit >= self._min_interval_s:
            self._post(status)

    def finish(self, message: str) -> None:
        self._post(message)

    def _post(self, status: str) -> None:
        body = f"{HEADER} {status}"
        if self._footer:
            body += f"\n\n<sub>{self._footer}</sub>"
        if self._redactor.find(body):
            body = f"{HEADER} {WITHHELD}"
        if self.comment_id is None:
            self.comment_id = self._github.create_comment(self._number, body)
        else:
            self._github.update_comment(self.comment_id, body)
        self._last_edit = self._clock()
