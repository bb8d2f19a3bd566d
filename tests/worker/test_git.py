"""Host-side git over the fake GitHub's smart HTTP: tokens in headers only, no work tree, and
commits made from checked data whatever the repository's own files say."""

from __future__ import annotations

import io
import subprocess
import tarfile

import pytest

from sandbox.boundary import Change
from tests.worker.conftest import REPO
from worker.git import Checkout, GitError, Identity

BOT = Identity("wrench[bot]", "41898282+wrench[bot]@users.noreply.github.com")


@pytest.fixture
def token(fake_github):
    return fake_github.mint_token(4242, {"repositories": ["hello"]}).value


@pytest.fixture
def checkout(fake_github, token, tmp_path):
    return Checkout.clone(f"{fake_github.url}/git/{REPO}.git", "main", tmp_path / "git", token)


def members(checkout: Checkout) -> dict[str, tarfile.TarInfo]:
    with checkout.archive((1000, 1000)) as packed:
        archive = io.BytesIO(packed.read())
    with tarfile.open(fileobj=archive) as tar:
        return {member.name: member for member in tar}


def test_the_clone_has_no_work_tree_and_keeps_the_token_out_of_every_file(
    checkout, token, tmp_path
):
    assert not (tmp_path / "git" / "hello.py").exists()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    assert "extraheader" not in (tmp_path / "git" / "config").read_text().lower()


def test_the_workspace_archive_holds_the_files_and_a_git_of_the_agents_own(checkout):
    found = members(checkout)
    assert {"README.md", "hello.py", ".git/HEAD", ".git/index", ".git/config"} <= set(found)
    assert not any(name.startswith(".git/hooks") for name in found)
    assert {(m.uid, m.gid) for m in found.values()} == {(1000, 1000)}
    with checkout.archive((1000, 1000)) as packed, tarfile.open(fileobj=packed) as tar:
        config = tar.extractfile(".git/config").read().decode()
        head = tar.extractfile(".git/HEAD").read()
    assert "url" not in config and "bare = false" in config
    assert head == b"ref: refs/heads/main\n"


def test_clone_without_a_valid_token_fails_with_the_token_redacted(fake_github, tmp_path):
    url = f"{fake_github.url}/git/{REPO}.git"
    token = "ghs_" + "not-a-real-token-0123456789"
    with pytest.raises(GitError) as error:
        Checkout.clone(url, "main", tmp_path / "g", token)
    assert "not-a-real-token" not in str(error.value)
    assert "clone failed" in str(error.value)


def test_a_change_set_becomes_one_commit_by_the_bot_and_is_pushed(fake_github, checkout):
    base = checkout.base
    changes = (
        Change("hello.py", b'def greet(name):\n    return f"Hello, {name}!"\n'),
        Change("docs/new.md", b"new\n"),
        Change("README.md", None),
        Change("run.sh", b"#!/bin/sh\necho hi\n", executable=True),
        Change("link", b"docs/new.md", link=True),
        Change("data.bin", bytes(range(256))),
        Change('odd "name"\nwith newline', b"x"),
    )
    effective = checkout.effective(changes)
    assert [c.path for c in effective] == [c.path for c in changes]
    commit = checkout.commit(effective, "Punctuate greetings", BOT)
    assert '+    return f"Hello, {name}!"' in checkout.diff(base, commit)
    checkout.push(commit, "wrench/issue-1")

    [pushed, _] = fake_github.commits(REPO, "wrench/issue-1")
    assert (pushed["author"], pushed["message"]) == (BOT.name, "Punctuate greetings")
    tree = checkout.tree(commit)
    assert tree["run.sh"][0] == "100755" and tree["link"][0] == "120000"
    assert "README.md" not in tree and 'odd "name"\nwith newline' in tree
    assert fake_github.read_file(REPO, "wrench/issue-1", "link") == "docs/new.md"
    assert fake_github.branch_sha(REPO, "main") == base


def test_changes_that_change_nothing_are_dropped(checkout):
    same = Change("hello.py", checkout.file("hello.py"))
    gone_already = Change("never-there.txt", None)
    assert checkout.effective((same, gone_already)) == []
    assert checkout.effective((Change("hello.py", checkout.file("hello.py"), executable=True),))


def test_a_file_may_replace_a_directory_and_a_directory_a_file(checkout):
    first = checkout.commit([Change("docs/a.md", b"a\n")], "a dir", BOT)
    checkout.base = first
    changes = [Change("docs/a.md", None), Change("docs", b"now a file\n")]
    second = checkout.commit(checkout.effective(tuple(changes)), "a file", BOT)
    assert checkout.tree(second)["docs"][0] == "100644"
    checkout.base = second
    back = [Change("docs", None), Change("docs/b.md", b"b\n")]
    third = checkout.commit(checkout.effective(tuple(back)), "a dir again", BOT)
    assert "docs/b.md" in checkout.tree(third)


def test_the_repositorys_attributes_never_change_what_is_committed(checkout):
    # A filter or an encoding in .gitattributes would rewrite (or run code on) what git adds;
    # fast-import stores the bytes the agent left, as they are.
    attributes = Change(".gitattributes", b"* filter=evil working-tree-encoding=UTF-16 -diff\n")
    planted = Change("notes.txt", b"plain text\r\n")
    commit = checkout.commit([attributes, planted], "attributes", BOT)
    blob = checkout.tree(commit)["notes.txt"][1]
    assert checkout.git_bytes("cat-file", "blob", blob) == b"plain text\r\n"
    assert "+plain text" in checkout.diff(checkout.base, commit)  # not "Binary files differ"


def test_a_token_without_the_repository_cannot_push(fake_github, checkout):
    other = fake_github.mint_token(4242, {"repositories": ["elsewhere"]}).value
    foreign = Checkout(checkout.git_dir, other, checkout.base, "main")
    commit = foreign.commit([Change("x.txt", b"x")], "x", BOT)
    with pytest.raises(GitError, match="push failed"):
        foreign.push(commit, "wrench/issue-1")
    assert fake_github.branch_sha(REPO, "wrench/issue-1") is None


def test_a_configuration_file_that_is_a_link_is_never_read(fake_github, tmp_path, token):
    work = tmp_path / "contrib"
    subprocess.run(["git", "clone", "-q", str(fake_github.repos[REPO].path), str(work)], check=True)
    (work / ".github").mkdir()
    (work / ".github" / "wrench.yml").symlink_to("/etc/passwd")
    git = ["git", "-C", str(work), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "link"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD:linked"], check=True)
    url = f"{fake_github.url}/git/{REPO}.git"
    linked = Checkout.clone(url, "linked", tmp_path / "linked.git", token)
    assert linked.file(".github/wrench.yml") is None
    assert linked.file("hello.py").startswith(b"def greet")
