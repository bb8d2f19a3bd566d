"""The worker's GitHub calls over githubkit against the fake GitHub."""

from __future__ import annotations

import pytest

from tests.worker.conftest import REPO
from worker.github import GitHubKitRepo, installation_client
from worker.tracker import Tracker
from wrench.secrets import Redactor


@pytest.fixture
def github(fake_github):
    token = fake_github.mint_token(4242, {"repositories": ["hello"]}).value
    with installation_client(fake_github.url, token) as client:
        yield GitHubKitRepo(client, REPO)


def test_permissions_issue_and_clone_url(github, fake_github):
    assert github.permission("octocat") == "admin"
    assert github.permission("reader") == "read"
    assert github.permission("stranger") == "none"
    assert github.issue(1)["title"] == "Greeting lacks punctuation"
    assert github.repository()["clone_url"] == f"{fake_github.url}/git/{REPO}.git"


def test_comments_reactions_and_pulls(github, fake_github):
    comment_id = github.create_comment(1, "hello")
    github.update_comment(comment_id, "hello again")
    github.react("issue", 1, "eyes")
    assert fake_github.comments[comment_id]["history"] == ["hello", "hello again"]
    assert fake_github.reactions[0]["content"] == "eyes"

    assert not github.branch_exists("wrench/issue-1")
    fake_github.commit_to_branch(REPO, "wrench/issue-1", {"a.txt": "a"})
    assert github.branch_exists("wrench/issue-1")
    assert github.open_pull_for("wrench/issue-1") is None
    pull = github.create_pull("Fix", "wrench/issue-1", "main", "Fixes #1", draft=True)
    assert github.open_pull_for("wrench/issue-1")["number"] == pull["number"]
    github.update_pull(pull["number"], "Fixes #1, again")
    assert fake_github.pulls[REPO, pull["number"]]["body"] == "Fixes #1, again"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_tracker_edits_one_comment_and_throttles_progress(github, fake_github):
    clock = Clock()
    tracker = Tracker(github, 1, Redactor(), footer="job abc", min_interval_s=5, clock=clock)
    tracker.start("queued")
    for step in range(10):
        clock.now += 1
        tracker.progress(f"step {step}")
    tracker.finish("done")

    [comment] = fake_github.issue_comments(REPO, 1)
    assert comment["body"].endswith("done\n\n<sub>job abc</sub>")
    # queued, two throttled progress edits (at t=5 and t=10), done.
    assert [body.split("\n")[0].split("** ")[1] for body in comment["history"]] == [
        "queued",
        "step 4",
        "step 9",
        "done",
    ]


def test_the_tracker_withholds_a_message_holding_a_secret(github, fake_github):
    tracker = Tracker(github, 1, Redactor(["sk-live-secret-value"]))
    tracker.start("queued")
    tracker.finish("the key is sk-live-secret-value")
    tracker.finish("a token ghp_" + "a" * 36)
    [comment] = fake_github.issue_comments(REPO, 1)
    assert all("secret-value" not in body and "ghp_" not in body for body in comment["history"])
    assert "withheld" in comment["body"]
