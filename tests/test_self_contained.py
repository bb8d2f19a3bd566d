"""The repository is self-contained: no file in it refers to a path outside it.

A clone on its own (nothing beside it) must build, test and run. This walks every file git
would ship and resolves the paths they name relative to themselves: `../` paths in any text,
`$(dirname "$0")/..` in scripts, and paths Python builds from `__file__`.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# A relative path that climbs: `../x`, `../../x`, standing on its own (not inside `/a/../b`).
_CLIMB = re.compile(r"(?<![\w./~$-])((?:\.\./)+(?:[\w.-]+/?)*|\.\.(?=[\s\"'`)]|$))")
_SCRIPT_DIR = re.compile(r"\$\(dirname \"\$0\"\)((?:/\.\.)+)")


def shipped_files() -> list[Path]:
    """Files git tracks, plus new ones it would add (not ignored)."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [ROOT / name for name in sorted(set(listing.split("\0"))) if name]


def _outside(path: Path) -> bool:
    return not path.resolve().is_relative_to(ROOT)


def text_references(file: Path, text: str) -> list[str]:
    """`../` paths (and `$(dirname "$0")/..` in scripts) that resolve outside the repository."""
    found = [m for m in _CLIMB.findall(text) if _outside(file.parent / m)]
    found += [
        f"$(dirname $0){m}" for m in _SCRIPT_DIR.findall(text) if _outside(file.parent / m[1:])
    ]
    return found


class _FilePaths(ast.NodeVisitor):
    """Evaluates path expressions anchored at `__file__`, following module-level names."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.names: dict[str, Path] = {}
        self.outside: list[str] = []

    def visit_Assign(self, node: ast.Assign) -> None:  # noqa: N802 (ast's naming)
        value = self.evaluate(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name) and value is not None:
                self.names[target.id] = value
        self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.expr) and (path := self.evaluate(node)) is not None:
            if _outside(path):
                self.outside.append(ast.unparse(node))
                return
        super().generic_visit(node)

    def evaluate(self, node: ast.AST) -> Path | None:  # noqa: C901 (one case per shape)
        if isinstance(node, ast.Name):
            return self.file if node.id == "__file__" else self.names.get(node.id)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "Path" and node.args:
                return self.evaluate(node.args[0])
            if isinstance(func, ast.Attribute) and func.attr in ("resolve", "absolute"):
                return self.evaluate(func.value)
            return None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            base = self.evaluate(node.value)
            return base.parent if base is not None else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            base = self.evaluate(node.value.value) if node.value.attr == "parents" else None
            index = node.slice.value if isinstance(node.slice, ast.Constant) else None
            return base.parents[index] if base is not None and isinstance(index, int) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            base = self.evaluate(node.left)
            part = node.right.value if isinstance(node.right, ast.Constant) else None
            return base / part if base is not None and isinstance(part, str) else None
        return None


def python_references(file: Path, source: str) -> list[str]:
    """Expressions built from `__file__` that name a path outside the repository."""
    visitor = _FilePaths(file)
    visitor.visit(ast.parse(source))
    return visitor.outside


def references(file: Path) -> list[str]:
    try:
        text = file.read_text()
    except (UnicodeDecodeError, IsADirectoryError):
        return []
    found = text_references(file, text)
    if file.suffix == ".py":
        found += python_references(file, text)
    return found


def test_no_file_refers_to_a_path_outside_the_repository():
    # This file's own samples of bad paths are the one exception.
    files = [file for file in shipped_files() if file != Path(__file__).resolve()]
    assert len(files) > 100
    found = {str(f.relative_to(ROOT)): refs for f in files if (refs := references(f))}
    assert found == {}


@pytest.mark.parametrize(
    "where, text",
    [
        (
            "tests/conftest.py",
            'ROOT = Path(__file__).resolve().parents[1]\nX = ROOT.parent / "s"\n',
        ),
        ("bench/webhook.py", "P = Path(__file__).parents[2] / 'shared/x.json'\n"),
        ("tests/bot/x.py", "HERE = Path(__file__).parent\nY = HERE.parent.parent.parent\n"),
    ],
)
def test_python_paths_that_climb_out_are_found(where, text):
    assert python_references(ROOT / where, text)


@pytest.mark.parametrize(
    "where, text",
    [
        ("README.md", "payloads live in ../shared/fixtures"),
        ("scripts/run", 'cd "$(dirname "$0")/../.."'),
        ("tests/conftest.py", 'fixtures = "../../shared"'),
    ],
)
def test_text_paths_that_climb_out_are_found(where, text):
    assert text_references(ROOT / where, text)


@pytest.mark.parametrize(
    "where, text",
    [
        ("scripts/run", 'cd "$(dirname "$0")/.."'),
        ("tests/sandbox/x.py", 'read("../etc/passwd")  # the container\'s, inside the test tree'),
        ("tests/conftest.py", "ROOT = Path(__file__).resolve().parents[1]\nW = ROOT / 'tests'\n"),
        ("README.md", "a path inside a container: /workspace/../evil"),
    ],
)
def test_paths_inside_the_repository_are_fine(where, text):
    assert text_references(ROOT / where, text) == []
    if where.endswith(".py"):
        assert python_references(ROOT / where, text) == []
