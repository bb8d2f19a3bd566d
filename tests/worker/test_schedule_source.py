"""Schedules read from GitHub: every installation's repositories, valid and invalid files."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr

from tests.fakes.app_key import app_key_pair
from tests.worker.conftest import APP_ID
from tests.worker.test_scheduler import WEEKLY, Clock, jobs
from worker.schedule_source import GitHubRepoSource
from worker.scheduler import PROBLEMS_KEY, Problems, Scheduler
from worker.services import scheduler_from_settings
from worker.tokens import InstallationTokens
from wrench.queue import JobQueue

GOOD = """
schedules:
  - name: weekly-deps
    cron: "0 6 * * 1"
    timezone: Europe/Berlin
    task: Update outdated dependencies and make the test suite pass.
"""
BAD = "schedules:\n  - name: nightly\n    cron: '0 25 * * *'\n    task: x\n"


@pytest.fixture
def source(fake_github, app_client, redis):
    fake_github.commit_to_branch("octo-org/hello", "main", {".github/wrench.yml": GOOD})
    fake_github.add_repo("octo-org/broken", {".github/wrench.yml": BAD})
    fake_github.add_repo("other-org/plain", {"README.md": "hi"}, installation_id=99)
    tokens = InstallationTokens(redis, app_client, app_key_pair()[0])
    return GitHubRepoSource(
        app_client, tokens, fake_github.url, lambda: "wrench[bot]", Problems(redis)
    )


def test_repositories_of_every_installation_with_their_schedules(source, fake_github):
    repos = {r.full_name: r for r in source.repositories()}
    assert set(repos) == {"octo-org/hello", "octo-org/broken", "other-org/plain"}
    assert [s.name for s in repos["octo-org/hello"].schedules] == ["weekly-deps"]
    assert repos["octo-org/broken"].schedules == repos["other-org/plain"].schedules == []
    assert repos["octo-org/hello"].open_wrench_branches() == []
    # Installation tokens for the scheduler are read-only.
    assert {t.permissions["contents"] for t in fake_github.tokens.values()} == {"read"}


def test_an_invalid_file_is_reported_once_and_the_others_still_run(source, redis, caplog):
    clock = Clock(datetime(2026, 11, 23, 4, 55, tzinfo=UTC))
    sched = Scheduler(redis, JobQueue(redis, "sched-test", 1800), source, [], 3, clock)
    with caplog.at_level(logging.ERROR):
        sched.tick()
        clock.now += timedelta(minutes=10)
        queued = sched.tick()
    assert len(queued) == 1 and jobs(redis)[0].repository == "octo-org/hello"
    problem = redis.hget(PROBLEMS_KEY, "octo-org/broken").decode()
    assert "schedules.0.cron" in problem and "five-field" in problem
    assert len([r for r in caplog.records if "octo-org/broken" in r.getMessage()]) == 1


def test_config_files_are_not_read_on_every_tick(source, fake_github):
    list(source.repositories())
    list(source.repositories())
    reads = [r for r in fake_github.requests if "/contents/" in r[1]]
    assert len(reads) == 3


def test_the_scheduler_process_is_wired_from_the_settings(source, settings, fake_github):
    configured = settings.model_copy(
        update={
            "APP_ID": APP_ID,
            "PRIVATE_KEY": SecretStr(app_key_pair()[0]),
            "GITHUB_API_URL": fake_github.url,
            "BOT_NAME": None,
            "SCHEDULES": [WEEKLY],
        }
    )
    with scheduler_from_settings(configured) as scheduler:
        assert scheduler.tick() == []  # nothing is due the first time a schedule is seen
    assert any(path.startswith("/app/installations?") for _, path, _ in fake_github.requests)


def test_a_repository_github_cannot_serve_does_not_stop_the_others(source, fake_github, redis):
    # A directory where the file should be: GitHub answers with a listing, not a file.
    fake_github.add_repo("octo-org/odd", {".github/wrench.yml/x": "not a file\n"})
    repos = {r.full_name: r for r in source.repositories()}
    assert [s.name for s in repos["octo-org/hello"].schedules] == ["weekly-deps"]
    assert repos["octo-org/odd"].schedules == []
    assert "unreadable" in redis.hget(PROBLEMS_KEY, "octo-org/odd").decode()


def test_the_latest_comments_are_read_when_there_are_many(fake_github):
    from worker.github import GitHubKitRepo, installation_client

    for n in range(130):
        fake_github.add_comment("octo-org/hello", 1, f"comment {n}")
    token = fake_github.mint_token(4242, {}).value
    with installation_client(fake_github.url, token) as client:
        comments = GitHubKitRepo(client, "octo-org/hello").issue_comments(1)
    assert [c["body"] for c in comments[-2:]] == ["comment 128", "comment 129"]
    assert len(comments) == 130
