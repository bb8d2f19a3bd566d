"""Host-side git over the fake GitHub's smart HTTP: tokens in headers only, hostile .git ignored."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.worker.conftest import REPO
from worker.git import Checkout, GitError, Identity

BOT = Identity("wrench[bot]", "41898282+wrench[bot]@users.noreply.github.com")


@pytest.fixture
def token(fake_github):
    return fake_github.mint_token(4242, {"repositories": ["hello"]}).value


@pytest.fixture
def checkout(fake_github, token, tmp_path):
    url = f"{fake_github.url}/git/{REPO}.git"
    checkout = Checkout.clone(url, "main", tmp_path / "git", tmp_path / "work", token)
    checkout.give_work_tree_a_copy()
    return checkout


def test_clone_keeps_the_token_out_of_every_file(checkout, token, tmp_path):
    assert (checkout.work_tree / "hello.py").is_file()
    assert (checkout.work_tree / ".git").is_dir()  # the agent's own copy
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    config = (checkout.work_tree / ".git" / "config").read_text()
    assert "extraheader" not in config.lower() and "x-access-token" not in config


def test_clone_without_a_valid_token_fails_with_the_token_redacted(fake_github, tmp_path):
    url = f"{fake_github.url}/git/{REPO}.git"
    token = "ghs_" + "not-a-real-token-0123456789"
    with pytest.raises(GitError) as error:
        Checkout.clone(url, "main", tmp_path / "g", tmp_path / "w", token)
    assert "not-a-real-token" not in str(error.value)
    assert "clone failed" in str(error.value)


def test_changes_are_committed_as_the_bot_and_pushed(fake_github, checkout):
    base = checkout.head()
    (checkout.work_tree / "hello.py").write_text('def greet(name):\n    return f"Hello, {name}!"\n')
    (checkout.work_tree / "docs").mkdir()
    (checkout.work_tree / "docs" / "new.md").write_text("new\n")

    assert sorted(checkout.changed_files()) == ["docs/new.md", "hello.py"]
    checkout.commit_all("Punctuate greetings", BOT)
    assert '+    return f"Hello, {name}!"' in checkout.diff(base)
    checkout.push("wrench/issue-1")

    [commit, _] = fake_github.commits(REPO, "wrench/issue-1")
    assert (commit["author"], commit["message"]) == (BOT.name, "Punctuate greetings")
    assert "!" in fake_github.read_file(REPO, "wrench/issue-1", "hello.py")
    assert fake_github.branch_sha(REPO, "main") == base


def test_a_token_without_the_repository_cannot_push(fake_github, checkout, tmp_path):
    other = fake_github.mint_token(4242, {"repositories": ["elsewhere"]}).value
    foreign = Checkout(checkout.git_dir, checkout.work_tree, other)
    (checkout.work_tree / "x.txt").write_text("x")
    foreign.commit_all("x", BOT)
    with pytest.raises(GitError, match="push failed"):
        foreign.push("wrench/issue-1")
    assert fake_github.branch_sha(REPO, "wrench/issue-1") is None


def test_what_the_agent_writes_into_dot_git_never_runs_on_the_host(checkout, tmp_path):
    marker = tmp_path / "pwned"
    agent_git = checkout.work_tree / ".git"
    with (agent_git / "config").open("a") as config:
        config.write(f'[core]\n\tfsmonitor = "touch {marker}"\n\thooksPath = {agent_git}/h\n')
    (agent_git / "h").mkdir()
    hook = agent_git / "h" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (checkout.work_tree / "hello.py").write_text("changed\n")

    assert checkout.changed_files() == ["hello.py"]
    checkout.commit_all("change", BOT)
    assert not marker.exists()
    # The agent's copy is not what gets committed: .git never enters the tree.
    tree = checkout.git("ls-tree", "-r", "--name-only", "HEAD").split()
    assert not any(name.startswith(".git/") for name in tree)


def test_the_agents_own_commits_do_not_hide_its_changes(checkout):
    git = ["git", "-C", str(checkout.work_tree), "-c", "user.name=a", "-c", "user.email=a@b"]
    (checkout.work_tree / "hello.py").write_text("agent committed this\n")
    subprocess.run([*git, "commit", "-qam", "agent"], check=True)
    assert checkout.changed_files() == ["hello.py"]


def test_a_submodule_the_agent_fills_in_never_runs_its_config_on_the_host(checkout, tmp_path):
    # The repository has a submodule `sub`, which the clone leaves empty; the agent makes it a
    # repository of its own whose config runs a command when git looks at a changed file.
    marker = tmp_path / "pwned"
    nested = checkout.work_tree / "sub"
    nested.mkdir()
    git = ["git", "-C", str(nested), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run([*git, "init", "-q"], check=True)
    (nested / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    host = [
        "git",
        f"--git-dir={checkout.git_dir}",
        f"--work-tree={checkout.work_tree}",
        "-c",
        "user.name=a",
        "-c",
        "user.email=a@b",
    ]
    subprocess.run(
        [*host, "update-index", "--add", "--cacheinfo", f"160000,{sha.strip()},sub"], check=True
    )
    (checkout.work_tree / ".gitmodules").write_text(
        '[submodule "sub"]\n\tpath = sub\n\turl = ../x\n'
    )
    subprocess.run([*host, "add", ".gitmodules"], check=True)
    subprocess.run([*host, "commit", "-qm", "add a submodule"], check=True)
    subprocess.run([*git, "config", "filter.evil.clean", f"touch {marker}; cat"], check=True)
    (nested / ".gitattributes").write_text("* filter=evil\n")
    os.utime(nested / "a.txt", (1, 1))  # same size, new time: git must hash it, filtered
    (checkout.work_tree / "more").mkdir()
    (checkout.work_tree / "more" / ".git").symlink_to(nested / ".git")

    assert sorted(checkout.forget_nested_repositories()) == ["more/.git", "sub/.git"]
    (checkout.work_tree / "README.md").write_text("changed too\n")
    assert checkout.changed_files() == ["README.md"]  # what is in a submodule is not ours
    checkout.commit_all("after the agent", BOT)
    assert not marker.exists()
    assert (checkout.work_tree / ".git").is_dir()  # the agent's own copy at the top stays
