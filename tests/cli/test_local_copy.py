"""Copying a checkout into a sandbox and the agent's changes back, on real directories: what
the way back refuses to do with a change set that untrusted code wrote."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from sandbox.boundary import Change, ChangeSet, WorkspaceArchive
from worker.local.copy import Destination, Snapshot, copy_back, copy_in

FILES = {"a.txt": "a\n", "docs/guide.md": "guide\n", "docs/deep/x.md": "x\n"}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def copied(checkout: Path) -> Snapshot:
    return copy_in(checkout, sorted(FILES), WorkspaceArchive((1000, 1000)))


def to(checkout: Path, ignored: frozenset[str] = frozenset()) -> Destination:
    aside = checkout.parent / "left-out"
    return Destination(checkout, None, lambda paths: set(paths) & ignored, aside)


def test_copy_in_archives_the_files_and_remembers_what_it_saw(checkout: Path) -> None:
    (checkout / "tool").write_text("#!/bin/sh\n")
    (checkout / "tool").chmod(0o755)
    os.symlink("docs/guide.md", checkout / "link")
    archive = WorkspaceArchive((1000, 1000))
    snapshot = copy_in(checkout, [*sorted(FILES), "tool", "link", "missing"], archive)
    with archive.finish() as packed, tarfile.open(fileobj=io.BytesIO(packed.read())) as tar:
        names = {m.name: m for m in tar}
    assert set(snapshot) == {*FILES, "tool", "link"}
    assert names["tool"].mode == 0o755 and names["link"].linkname == "docs/guide.md"
    assert snapshot["tool"].executable and snapshot["link"].link


def test_a_link_then_a_file_through_it_never_writes_outside(checkout: Path, tmp_path: Path):
    snapshot = copied(checkout)
    outside = tmp_path / "outside"
    outside.mkdir()
    (checkout / "escape").symlink_to(outside)  # a link the user's checkout already has
    changes = ChangeSet(
        (
            Change("docs/guide.md", None),
            Change("docs/deep/x.md", None),
            Change("docs", b"escape", link=True),
            Change("docs/planted", b"pwned\n"),
            Change("escape/planted", b"pwned\n"),
        )
    )
    result = copy_back(changes, snapshot, to(checkout))
    assert list(outside.iterdir()) == []
    assert os.readlink(checkout / "docs") == "escape"
    assert "a link or a file, not a directory" in dict(result.skipped)["escape/planted"]
    assert "a link or a file, not a directory" in dict(result.skipped)["docs/planted"]


def test_a_file_the_user_changed_during_the_run_is_left_alone(checkout: Path) -> None:
    snapshot = copied(checkout)
    (checkout / "a.txt").write_text("the user's\n")
    result = copy_back(ChangeSet((Change("a.txt", b"the agent's\n"),)), snapshot, to(checkout))
    assert result.skipped == [("a.txt", "it changed in the checkout during the run")]
    assert (checkout / "a.txt").read_text() == "the user's\n"


def test_refused_paths_are_reported_and_nothing_under_git_is_written(checkout: Path) -> None:
    snapshot = copied(checkout)
    changes = ChangeSet(
        (Change(".git/hooks/pre-commit", b"evil\n"),),
        (("big.bin", "larger than 50 MiB"),),
    )
    result = copy_back(changes, snapshot, to(checkout))
    assert dict(result.skipped) == {
        "big.bin": "larger than 50 MiB",
        ".git/hooks/pre-commit": "inside a .git directory",
    }
    assert not (checkout / ".git").exists()


def test_a_directory_emptied_by_deletions_goes_and_a_file_may_take_its_place(checkout: Path):
    snapshot = copied(checkout)
    changes = ChangeSet((Change("docs/deep/x.md", None), Change("docs/deep", b"now a file\n")))
    result = copy_back(changes, snapshot, to(checkout))
    assert result.deleted == ["docs/deep/x.md"] and result.added == ["docs/deep"]
    assert (checkout / "docs/deep").read_text() == "now a file\n"
    assert (checkout / "docs/guide.md").read_text() == "guide\n"


def test_unchanged_paths_are_not_touched(checkout: Path) -> None:
    snapshot = copied(checkout)
    before = (checkout / "a.txt").stat().st_mtime_ns
    result = copy_back(ChangeSet((Change("a.txt", b"a\n"),)), snapshot, to(checkout))
    assert result.applied() == [] and (checkout / "a.txt").stat().st_mtime_ns == before


def test_a_new_path_the_checkout_ignores_is_set_aside_never_applied(checkout: Path) -> None:
    """The `.pth` attack: a file dropped into a git-ignored virtualenv runs the next time its
    Python starts; it must never reach the user's venv."""
    venv = checkout / ".venv/lib/python3.11/site-packages"
    venv.mkdir(parents=True)
    pth = ".venv/lib/python3.11/site-packages/x.pth"
    changes = ChangeSet(
        (
            Change(pth, b"import os; os.system('touch /tmp/pwned')\n"),
            Change(".venv/bin/python", b"/usr/bin/evil", link=True),
            Change("docs/new.md", b"fine\n"),
        )
    )
    ignored = frozenset({pth, ".venv/bin/python"})
    result = copy_back(changes, copied(checkout), to(checkout, ignored))
    assert list(venv.iterdir()) == [] and not (checkout / ".venv/bin").exists()
    assert result.added == ["docs/new.md"]
    why = dict(result.skipped)
    saved = checkout.parent / "left-out" / pth
    assert why[pth] == (
        f"new, and your checkout ignores it (saved in {saved}: copy it yourself if you want it)"
    )
    assert saved.read_bytes().startswith(b"import os") and saved.stat().st_mode & 0o777 == 0o600
    assert why[".venv/bin/python"] == "a new link to `/usr/bin/evil`, and your checkout ignores it"
