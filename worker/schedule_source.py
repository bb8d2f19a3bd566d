"""Finding schedules on GitHub: every installation's repositories and their `.github/wrench.yml`."""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Iterator

from githubkit import GitHub
from githubkit.exception import GitHubException, RequestFailed

from worker.github import installation_client, pages
from worker.repo_config import CONFIG_PATH, RepoConfigError, parse_repo_config
from worker.scheduler import Problems, ScheduledRepo
from worker.tokens import SCHEDULER_PERMISSIONS, InstallationTokens

log = logging.getLogger(__name__)
# Schedules change rarely; reading every repository's file on every tick would spend the
# installation's rate limit for nothing.
CONFIG_TTL_S = 300


class GitHubRepoSource:
    """RepoSource over the GitHub API, with a read-only token per installation."""

    def __init__(
        self,
        app: GitHub,
        tokens: InstallationTokens,
        api_url: str,
        bot_login: Callable[[], str],  # noqa: PLR0913
        problems: Problems,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._app, self._tokens, self._api_url = app, tokens, api_url
        self._bot_login, self._problems, self._clock = bot_login, problems, clock
        self._configs: dict[str, tuple[float, str | None]] = {}

    def repositories(self) -> Iterator[ScheduledRepo]:
        for installation in pages(self._app, "/app/installations"):
            try:
                token = self._tokens.get(installation["id"], None, SCHEDULER_PERMISSIONS)
                with installation_client(self._api_url, token) as github:
                    for repo in pages(github, "/installation/repositories", "repositories"):
                        yield self._repo(github, installation["id"], repo["full_name"])
            except (GitHubException, KeyError, TypeError) as exc:
                # One installation GitHub will not answer for must not stop the others.
                subject = f"installation {installation['id']}"
                self._problems.report(subject, f"skipped: {type(exc).__name__}: {exc}")

    def _repo(self, github: GitHub, installation_id: int, full_name: str) -> ScheduledRepo:
        schedules = []
        try:
            text = self._config_text(github, full_name)
            schedules = parse_repo_config(text).schedules if text else []
            self._problems.clear(full_name)
        except RepoConfigError as exc:
            self._problems.report(full_name, f"schedules skipped: {exc}")
        except (GitHubException, KeyError, TypeError, ValueError) as exc:
            # Not cached: the file is read again at the next tick.
            self._configs.pop(full_name, None)
            reason = f"{type(exc).__name__}: {exc}"
            self._problems.report(
                full_name, f"schedules skipped, {CONFIG_PATH} unreadable: {reason}"
            )

        def open_wrench_branches() -> list[str]:
            pulls = pages(github, f"/repos/{full_name}/pulls")
            return [p["head"]["ref"] for p in pulls if p["user"]["login"] == self._bot_login()]

        return ScheduledRepo(full_name, installation_id, schedules, open_wrench_branches)

    def _config_text(self, github: GitHub, full_name: str) -> str | None:
        """The file's text, read at most every CONFIG_TTL_S per repository."""
        fetched_at, text = self._configs.get(full_name, (float("-inf"), None))
        if self._clock() - fetched_at >= CONFIG_TTL_S:
            text = self._fetch_config(github, full_name)
            self._configs[full_name] = (self._clock(), text)
        return text

    def _fetch_config(self, github: GitHub, full_name: str) -> str | None:
        try:
            answer = github.request("GET", f"/repos/{full_name}/contents/{CONFIG_PATH}").json()
        except RequestFailed as exc:
            if exc.response.status_code == 404:
                return None
            raise
        return base64.b64decode(answer["content"]).decode()
