"""Copying a checkout in and the agent's changes back, on real directories: what the way back
refuses to do with a workspace that untrusted code controlled."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from worker import checkout_copy
from worker.checkout_copy import copy_back, copy_in

FILES = {"a.txt": "a\n", "docs/guide.md": "guide\n", "docs/deep/x.md": "x\n"}


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    checkout, workspace = tmp_path / "checkout", tmp_path / "workspace"
    workspace.mkdir()
    for name, text in FILES.items():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(text)
    return checkout, workspace


def copied(trees: tuple[Path, Path]):
    checkout, workspace = trees
    return copy_in(checkout, sorted(FILES), workspace)


def test_a_link_the_agent_put_in_place_of_a_directory_is_never_followed(
    trees: tuple[Path, Path], tmp_path: Path
) -> None:
    checkout, workspace = trees
    snapshot = copied(trees)
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "guide.md").write_text("host secret\n")
    (outside / "deep/x.md").write_text("host secret\n")
    os.rename(workspace / "docs", tmp_path / "moved")
    os.symlink(outside, workspace / "docs")

    changes = copy_back(workspace, checkout, snapshot, ["docs"], None)

    # As git sees it: the files under docs/ are gone and docs is now a link.
    assert sorted(changes.deleted) == ["docs/deep/x.md", "docs/guide.md"]
    assert changes.added == ["docs"]
    assert os.readlink(checkout / "docs") == str(outside)
    assert (outside / "guide.md").read_text() == "host secret\n"  # nothing read, nothing written


def test_a_fifo_is_skipped_without_waiting_on_it(trees: tuple[Path, Path]) -> None:
    checkout, workspace = trees
    snapshot = copied(trees)
    (workspace / "a.txt").unlink()
    os.mkfifo(workspace / "a.txt")
    result = []

    worker = threading.Thread(
        target=lambda: result.append(copy_back(workspace, checkout, snapshot, [], None))
    )
    worker.start()
    worker.join(10)

    assert result, "copying back waited on a FIFO"
    assert result[0].skipped == [("a.txt", "not a regular file or a link")]
    assert (checkout / "a.txt").read_text() == "a\n"


def test_a_file_the_user_changed_during_the_run_is_left_alone(trees: tuple[Path, Path]) -> None:
    checkout, workspace = trees
    snapshot = copied(trees)
    (workspace / "a.txt").write_text("the agent's\n")
    (checkout / "a.txt").write_text("the user's\n")

    changes = copy_back(workspace, checkout, snapshot, [], None)

    assert changes.skipped == [("a.txt", "it changed in the checkout during the run")]
    assert (checkout / "a.txt").read_text() == "the user's\n"


def test_nothing_under_git_and_no_oversized_file_comes_back(
    trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout, workspace = trees
    snapshot = copied(trees)
    monkeypatch.setattr(checkout_copy, "MAX_FILE_BYTES", 1024)
    (workspace / "big.bin").write_bytes(b"x" * 2048)
    (workspace / ".git/hooks").mkdir(parents=True)
    (workspace / ".git/hooks/pre-commit").write_text("evil\n")

    changes = copy_back(workspace, checkout, snapshot, ["big.bin", ".git/hooks/pre-commit"], None)

    assert dict(changes.skipped) == {
        "big.bin": "larger than 1024 bytes",
        ".git/hooks/pre-commit": "inside a .git directory",
    }
    assert not (checkout / "big.bin").exists() and not (checkout / ".git").exists()


def test_a_directory_emptied_by_deletions_goes_and_a_file_may_take_its_place(
    trees: tuple[Path, Path],
) -> None:
    checkout, workspace = trees
    snapshot = copied(trees)
    (workspace / "docs/deep/x.md").unlink()
    (workspace / "docs/deep").rmdir()
    (workspace / "docs/deep").write_text("now a file\n")

    changes = copy_back(workspace, checkout, snapshot, ["docs/deep"], None)

    assert changes.deleted == ["docs/deep/x.md"] and changes.added == ["docs/deep"]
    assert (checkout / "docs/deep").read_text() == "now a file\n"
    assert (checkout / "docs/guide.md").read_text() == "guide\n"


def test_a_vanished_workspace_copies_nothing_back(trees: tuple[Path, Path]) -> None:
    checkout, workspace = trees
    snapshot, new = copied(trees), []
    workspace.rename(workspace.with_name("gone"))
    with pytest.raises(FileNotFoundError, match="workspace"):
        copy_back(workspace, checkout, snapshot, new, None)
    assert sorted(
        str(p.relative_to(checkout)) for p in checkout.rglob("*") if p.is_file()
    ) == sorted(FILES)
