"""Fixtures for the worker: a fake GitHub with one repository, and an App client for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from githubkit import AppAuthStrategy, GitHub

from tests.fakes.app_key import app_key_pair
from tests.fakes.github import FakeGitHub

APP_ID = 777
REPO = "octo-org/hello"
FILES = {
    "README.md": "# hello\n",
    "hello.py": 'def greet(name):\n    return "Hello, " + name\n',
}


@pytest.fixture
def fake_github(tmp_path) -> Iterator[FakeGitHub]:
    with FakeGitHub(tmp_path / "github", APP_ID, app_key_pair()[1]) as fake:
        repo = fake.add_repo(REPO, FILES)
        repo.permissions.update({"octocat": "admin", "writer": "write", "reader": "read"})
        fake.add_issue(REPO, 1, "Greeting lacks punctuation", "`greet` should end with `!`.")
        yield fake


@pytest.fixture
def app_client(fake_github) -> Iterator[GitHub]:
    strategy = AppAuthStrategy(str(APP_ID), app_key_pair()[0])
    with GitHub(strategy, base_url=fake_github.url, http_cache=False) as client:
        yield client
