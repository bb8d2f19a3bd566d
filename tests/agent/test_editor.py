"""The file editor tool on both real sandboxes: every command, and every way it refuses."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import pytest

from worker.agent.editor import EditError, FileEditor

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def sandbox(any_sandbox):
    """Every test here runs on LocalSandbox and on DockerSandbox."""
    return any_sandbox


@pytest.fixture
def editor(sandbox) -> FileEditor:
    return FileEditor(sandbox, max_view_chars=2000)


@dataclass(frozen=True)
class Seen:
    """A path in the workspace, read back through the sandbox itself (no host directory)."""

    sandbox: object
    path: str = ""

    def __truediv__(self, name: str) -> Seen:
        return Seen(self.sandbox, f"{self.path}/{name}".lstrip("/"))

    def read_bytes(self) -> bytes:
        return self.sandbox.read_file(self.path)

    def read_text(self) -> str:
        return self.read_bytes().decode()

    def exists(self) -> bool:
        return self.sandbox.run(f"test -e {shlex.quote(self.path)}").exit_code == 0


@pytest.fixture
def workspace(sandbox) -> Seen:
    """The workspace's files, with calc.py in it."""
    sandbox.write_file("calc.py", SOURCE.encode())
    return Seen(sandbox)


def test_view_numbers_the_lines_of_a_file(editor, workspace):
    shown = editor({"command": "view", "path": "calc.py"})

    assert shown.splitlines() == [f"{n:6}\t{line}" for n, line in enumerate(SOURCE.splitlines(), 1)]


def test_view_range_shows_only_those_lines_and_minus_one_means_to_the_end(editor, workspace):
    assert editor({"command": "view", "path": "calc.py", "view_range": [5, 6]}).splitlines() == [
        "     5\tdef sub(a, b):",
        "     6\t    return a - b",
    ]
    assert editor({"command": "view", "path": "calc.py", "view_range": [6, -1]}).count("\n") == 0
    with pytest.raises(EditError, match=r"within 1\.\.6"):
        editor({"command": "view", "path": "calc.py", "view_range": [3, 60]})


def test_a_long_file_is_cut_with_a_hint_to_use_view_range(editor, workspace, sandbox):
    sandbox.write_file("long.txt", b"x" * 50 + b"\n" * 400)

    shown = editor({"command": "view", "path": "long.txt"})

    assert len(shown) < 2100
    assert shown.startswith("     1\t" + "x" * 50 + "\n     2\t\n")
    last = shown.splitlines()[-1]
    assert re.fullmatch(r"\[lines \d+-400 not shown: use view_range to see them\]", last)


def test_view_of_a_directory_lists_files_two_levels_deep_without_hidden_ones(
    editor, workspace, sandbox
):
    sandbox.run("mkdir -p pkg/sub/third .git && touch pkg/mod.py .git/config")

    listing = editor({"command": "view", "path": "."})

    root = sandbox.workspace
    assert f"{root}/calc.py" in listing
    assert f"{root}/pkg/mod.py" in listing and f"{root}/pkg/sub" in listing
    assert "third" not in listing and ".git" not in listing


def test_str_replace_changes_the_one_match_and_shows_the_result(editor, workspace):
    shown = editor(
        {
            "command": "str_replace",
            "path": "calc.py",
            "old_str": "add(a, b):\n    return a - b",
            "new_str": "add(a, b):\n    return a + b",
        }
    )

    assert (workspace / "calc.py").read_text() == SOURCE.replace("return a - b", "return a + b", 1)
    assert "     2\t    return a + b" in shown


@pytest.mark.parametrize(
    ("old_str", "says"),
    [
        ("return a * b", "does not occur"),
        ("return a - b", r"occurs 2 times in .*calc.py \(lines \[2, 6\]\)"),
    ],
)
def test_str_replace_without_exactly_one_match_changes_nothing_and_says_why(
    editor, workspace, old_str, says
):
    with pytest.raises(EditError, match=says):
        editor({"command": "str_replace", "path": "calc.py", "old_str": old_str, "new_str": "x"})

    assert (workspace / "calc.py").read_text() == SOURCE


def test_create_writes_a_new_file_with_its_directories(editor, workspace):
    message = editor({"command": "create", "path": "pkg/new.py", "file_text": "A = 1\nB = 2\n"})

    assert (workspace / "pkg" / "new.py").read_text() == "A = 1\nB = 2\n"
    assert message.startswith("Created") and "2 lines" in message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (0, "# top\n" + SOURCE),
        (2, SOURCE.replace("a - b\n", "a - b\n# top\n", 1)),
        (6, SOURCE + "# top\n"),
    ],
)
def test_insert_puts_the_text_after_the_given_line(editor, workspace, line, expected):
    editor({"command": "insert", "path": "calc.py", "insert_line": line, "new_str": "# top"})

    assert (workspace / "calc.py").read_text() == expected


def test_insert_after_a_last_line_without_newline_keeps_lines_apart(editor, workspace, sandbox):
    sandbox.write_file("f.txt", b"one")

    editor({"command": "insert", "path": "f.txt", "insert_line": 1, "new_str": "two\n"})

    assert (workspace / "f.txt").read_text() == "one\ntwo\n"


def test_insert_past_the_end_is_refused(editor, workspace):
    with pytest.raises(EditError, match="from 0 to 6"):
        editor({"command": "insert", "path": "calc.py", "insert_line": 7, "new_str": "x"})


def test_undo_edit_walks_back_through_each_edit_of_the_file(editor, workspace):
    edits = [
        {"command": "str_replace", "path": "calc.py", "old_str": "def add", "new_str": "def plus"},
        {"command": "insert", "path": "calc.py", "insert_line": 0, "new_str": "import os"},
    ]
    versions = [SOURCE]
    for edit in edits:
        editor(edit)
        versions.append((workspace / "calc.py").read_text())
    assert versions[2] != versions[1] != versions[0]

    for expected in (versions[1], versions[0]):
        editor({"command": "undo_edit", "path": "calc.py"})
        assert (workspace / "calc.py").read_text() == expected
    with pytest.raises(EditError, match="no edit of .*calc.py to undo"):
        editor({"command": "undo_edit", "path": "calc.py"})


def test_undoing_a_create_removes_the_file_and_undoing_an_overwrite_restores_it(editor, workspace):
    editor({"command": "create", "path": "fresh.txt", "file_text": "new"})
    editor({"command": "create", "path": "calc.py", "file_text": "replaced"})

    editor({"command": "undo_edit", "path": "fresh.txt"})
    editor({"command": "undo_edit", "path": "calc.py"})

    assert not (workspace / "fresh.txt").exists()
    assert (workspace / "calc.py").read_text() == SOURCE


def test_paths_are_relative_to_the_workspace_even_after_the_shell_moved(editor, workspace, sandbox):
    sandbox.run("mkdir elsewhere && cd elsewhere")

    editor({"command": "create", "path": "made.txt", "file_text": "x"})
    editor({"command": "undo_edit", "path": "made.txt"})

    assert sandbox.run("pwd").output.strip().endswith("elsewhere")
    assert not (workspace / "made.txt").exists()
    assert not (workspace / "elsewhere" / "made.txt").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"command": "view", "path": "missing.py"}, "does not exist"),
        ({"command": "str_replace", "path": "missing.py", "old_str": "a"}, "does not exist"),
        ({"command": "str_replace", "path": "calc.py", "old_str": ""}, "old_str is empty"),
        ({"command": "str_replace", "path": "calc.py"}, "needs `old_str`"),
        ({"command": "create", "path": "x.py"}, "needs `file_text`"),
        ({"command": "view", "path": "calc.py", "view_range": [1]}, "two line numbers"),
        ({"command": "delete", "path": "calc.py"}, "unknown command 'delete'"),
        ({"command": "str_replace", "path": ".", "old_str": "a"}, "is a directory"),
    ],
)
def test_bad_requests_are_refused_with_a_reason(editor, workspace, args, says):
    with pytest.raises(EditError, match=says):
        editor(args)


def test_a_binary_file_is_not_edited(editor, workspace, sandbox):
    sandbox.write_file("blob.bin", b"\xff\xfe\x00a")

    with pytest.raises(EditError, match="not UTF-8"):
        editor({"command": "str_replace", "path": "blob.bin", "old_str": "a", "new_str": "b"})

    assert (workspace / "blob.bin").read_bytes() == b"\xff\xfe\x00a"
