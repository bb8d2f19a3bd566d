"""Where a job tells people how it is going: a GitHub comment, a Slack thread, the log."""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from collections.abc import Callable
from typing import Protocol

from wrench.secrets import Redactor

log = logging.getLogger(__name__)

# Slack accepts five posts to a response_url within 30 minutes.
SLACK_POSTS = 5
SLACK_PROGRESS_INTERVAL_S = 120.0


class Reporter(Protocol):
    """Status updates of one job; `progress` may be dropped, `stage` and `finish` are not."""

    def stage(self, status: str) -> None: ...
    def progress(self, status: str) -> None: ...
    def finish(self, message: str) -> None: ...


class SlackReporter:
    """Posts to a slash command's response_url within Slack's budget, keeping one post for the
    result; progress posts are also spaced out so they do not use the budget up early."""

    def __init__(
        self, response_url: str, redactor: Redactor, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._url, self._redactor, self._clock = response_url, redactor, clock
        self.posts = 0
        self._last = float("-inf")

    def stage(self, status: str) -> None:
        if self.posts < SLACK_POSTS - 1:
            self._post(f"Wrench {status}")

    def progress(self, status: str) -> None:
        if self._clock() - self._last >= SLACK_PROGRESS_INTERVAL_S:
            self.stage(status)

    def finish(self, message: str) -> None:
        if self.posts < SLACK_POSTS:
            self._post(f"Wrench {message}")

    def _post(self, text: str) -> None:
        if self._redactor.find(text):
            text = "Wrench withheld a message that looked like it held a secret."
        body = json.dumps({"response_type": "ephemeral", "text": text}).encode()
        request = urllib.request.Request(
            self._url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        self.posts += 1
        self._last = self._clock()
        try:
            urllib.request.urlopen(request, timeout=10).close()
        except OSError as exc:  # Slack being down must not fail the job
            log.warning("could not post to Slack: %s", exc)


class LogReporter:
    """For runs nobody watches live (schedules): the log is the record."""

    def __init__(self, subject: str) -> None:
        self._subject = subject

    def stage(self, status: str) -> None:
        log.info("%s: %s", self._subject, status)

    def progress(self, status: str) -> None:
        log.debug("%s: %s", self._subject, status)

    def finish(self, message: str) -> None:
        log.info("%s: %s", self._subject, message)


class Fanout:
    """Several reporters as one."""

    def __init__(self, *reporters: Reporter) -> None:
        self._reporters = reporters

    def stage(self, status: str) -> None:
        for reporter in self._reporters:
            reporter.stage(status)

    def progress(self, status: str) -> None:
        for reporter in self._reporters:
            reporter.progress(status)

    def finish(self, message: str) -> None:
        for reporter in self._reporters:
            reporter.finish(message)
