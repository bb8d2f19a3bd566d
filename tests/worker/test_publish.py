"""Publishing: a PR, an update of the open PR, a commit on a PR, an answer, incomplete work."""

from __future__ import annotations

import base64

import pytest

from sandbox.boundary import Change, ChangeSet
from tests.worker.conftest import REPO
from worker.git import Checkout, Identity
from worker.github import GitHubKitRepo, installation_client
from worker.publish import PublishRefused, Target, Work, publish
from wrench.secrets import Redactor

BOT = Identity("wrench[bot]", "1+wrench[bot]@users.noreply.github.com")
DONE = Work(finished=True, message="Added the exclamation mark.", summary="3 steps, $0.01, 9 s")


@pytest.fixture
def world(fake_github, tmp_path):
    token = fake_github.mint_token(4242, {"repositories": ["hello"]}).value
    with installation_client(fake_github.url, token) as client:
        yield fake_github, GitHubKitRepo(client, REPO), token, tmp_path


def clone(world, branch="main", name="c"):
    fake, _, token, tmp = world
    url = f"{fake.url}/git/{REPO}.git"
    return Checkout.clone(url, branch, tmp / f"{name}.git", token)


def issue_target(**changes):
    base = dict(
        number=1,
        title="Greeting lacks punctuation",
        is_pull_request=False,
        branch="wrench/issue-1",
        base="main",
        push_allowed=True,
        draft=True,
    )
    return Target(**{**base, **changes})


def edit(text='def greet(name):\n    return "Hello, " + name + "!"\n', *refused):
    """What the agent left, as it comes out of the sandbox: hello.py changed."""
    return ChangeSet((Change("hello.py", text.encode()),), tuple(refused))


def test_changes_on_an_issue_open_a_draft_pull_request(world):
    fake, github, _, _ = world
    checkout = clone(world)
    changes = edit()
    outcome = publish(checkout, github, issue_target(), DONE, changes, BOT, Redactor())

    [pull] = fake.open_pulls(REPO)
    assert outcome.url == pull["html_url"] and f"#{pull['number']}" in outcome.comment
    assert pull["draft"] is True and pull["head"]["ref"] == "wrench/issue-1"
    assert pull["body"].startswith("Fixes #1\n") and "3 steps, $0.01" in pull["body"]
    assert "!" in fake.read_file(REPO, "wrench/issue-1", "hello.py")


def test_a_second_run_updates_the_open_pull_request(world):
    fake, github, _, _ = world
    first = clone(world)
    first_changes = edit()
    publish(first, github, issue_target(), DONE, first_changes, BOT, Redactor())
    second = clone(world, "wrench/issue-1", "again")
    second_changes = edit("print('more')\n")
    again = Work(finished=True, message="More.", summary="1 step")
    outcome = publish(second, github, issue_target(), again, second_changes, BOT, Redactor())

    [pull] = fake.open_pulls(REPO)
    assert "updated" in outcome.comment and pull["body"].startswith("Fixes #1\n\nMore.")
    assert len(fake.commits(REPO, "wrench/issue-1")) == 3


def test_no_changes_is_an_answer(world):
    fake, github, _, _ = world
    answer = Work(finished=True, message="`greet` is in hello.py.", summary="")
    outcome = publish(clone(world), github, issue_target(), answer, ChangeSet(), BOT, Redactor())
    assert outcome.comment == "`greet` is in hello.py." and outcome.url is None
    assert fake.branch_sha(REPO, "wrench/issue-1") is None and fake.open_pulls(REPO) == []


def test_incomplete_work_is_pushed_without_a_pull_request(world):
    fake, github, _, _ = world
    checkout = clone(world)
    changes = edit()
    stopped = Work(finished=False, message="the step limit (5) was reached", summary="")
    outcome = publish(checkout, github, issue_target(), stopped, changes, BOT, Redactor())
    assert "incomplete" in outcome.comment and "step limit" in outcome.comment
    assert fake.branch_sha(REPO, "wrench/issue-1") and fake.open_pulls(REPO) == []


def test_changes_on_a_pull_request_are_pushed_to_its_branch(world):
    fake, github, _, _ = world
    fake.commit_to_branch(REPO, "feature", {"feature.txt": "f"})
    checkout = clone(world, "feature", "pr")
    changes = edit()
    target = issue_target(number=2, is_pull_request=True, branch="feature")
    outcome = publish(checkout, github, target, DONE, changes, BOT, Redactor())
    assert outcome.comment.startswith("pushed ")
    assert fake.commits(REPO, "feature")[0]["message"].startswith("Address #2")
    assert fake.open_pulls(REPO) == []


def test_a_fork_gets_the_diff_in_the_comment_and_nothing_is_pushed(world):
    fake, github, _, _ = world
    checkout = clone(world)
    changes = edit()
    target = issue_target(is_pull_request=True, push_allowed=False, branch="theirs")
    outcome = publish(checkout, github, target, DONE, changes, BOT, Redactor())
    assert (
        "from a fork" in outcome.comment and '+    return "Hello, " + name + "!"' in outcome.comment
    )
    assert fake.branch_sha(REPO, "theirs") is None


LLM_KEY = "the-llm-key-value-123"


@pytest.mark.parametrize(
    "content, kind",
    [
        (b"TOKEN = 'ghp_" + b"x" * 36 + b"'\n", "a GitHub token"),
        (f"key = {LLM_KEY}\n".encode(), "LLM_API_KEY"),
        # Hidden from any diff text: binary to git, and UTF-16 besides.
        (f"key = {LLM_KEY}\n".encode("utf-16"), "LLM_API_KEY"),
        (base64.b64encode(f"export KEY={LLM_KEY} # padding to a long run".encode()), "LLM_API_KEY"),
    ],
)
def test_a_secret_in_the_changes_is_never_pushed(world, content, kind):
    fake, github, _, _ = world
    checkout = clone(world)
    changes = ChangeSet(
        (Change(".gitattributes", b"notes.txt -diff working-tree-encoding=UTF-16\n"),)
        + (Change("notes.txt", content),)
    )
    redactor = Redactor({"LLM_API_KEY": LLM_KEY})
    with pytest.raises(PublishRefused) as refused:
        publish(checkout, github, issue_target(), DONE, changes, BOT, redactor)
    assert f"`notes.txt` holds {kind}" in str(refused.value)
    assert LLM_KEY not in str(refused.value) and "xxxxxxxx" not in str(refused.value)
    assert fake.branch_sha(REPO, "wrench/issue-1") is None and fake.open_pulls(REPO) == []


def test_paths_the_boundary_refused_are_listed_in_the_answer(world):
    fake, github, _, _ = world
    changes = edit(
        'def greet(name):\n    return "Hi"\n',
        ("evil", "a link to an absolute path, outside the repository"),
        ("x`\n@everyone", "a device file or a pipe, which a repository cannot hold"),
    )
    publish(clone(world), github, issue_target(), DONE, changes, BOT, Redactor())
    [pull] = fake.open_pulls(REPO)
    assert "- `evil`: a link to an absolute path, outside the repository" in pull["body"]
    assert "- `x??@everyone`: a device file" in pull["body"]  # no newline to mention with


def test_a_task_without_an_issue_opens_a_pull_request_without_fixes(world):
    fake, github, _, _ = world
    checkout = clone(world)
    changes = edit()
    target = issue_target(number=None, title="Bump dependencies", branch="wrench/schedule-deps")
    outcome = publish(checkout, github, target, DONE, changes, BOT, Redactor())
    [pull] = fake.open_pulls(REPO)
    assert outcome.kind == "pull_request" and pull["title"] == "Bump dependencies"
    assert "Fixes" not in pull["body"] and pull["head"]["ref"] == "wrench/schedule-deps"


def test_a_stopped_run_without_changes_says_so(world):
    _, github, _, _ = world
    stopped = Work(finished=False, message="the model failed: HTTP 500", summary="")
    outcome = publish(clone(world), github, issue_target(), stopped, ChangeSet(), BOT, Redactor())
    assert outcome.kind == "stopped"
    assert (
        outcome.comment
        == "stopped before finishing: the model failed: HTTP 500. Nothing was changed."
    )


def test_incomplete_work_never_lands_in_an_open_pull_request(world):
    fake, github, _, _ = world
    first = clone(world)
    first_changes = edit()
    publish(first, github, issue_target(), DONE, first_changes, BOT, Redactor())
    again = clone(world, "wrench/issue-1", "again")
    again_changes = edit("half done\n")
    stopped = Work(finished=False, message="the step limit (5) was reached", summary="")
    outcome = publish(again, github, issue_target(), stopped, again_changes, BOT, Redactor())
    assert "wrench/issue-1-incomplete" in outcome.comment
    assert fake.read_file(REPO, "wrench/issue-1-incomplete", "hello.py") == "half done\n"
    assert "half done" not in fake.read_file(REPO, "wrench/issue-1", "hello.py")
