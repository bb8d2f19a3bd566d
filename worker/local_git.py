"""Host git on a checkout on this machine, hardened: its files, a disposable `.git`, a diff stat.

Host git only ever uses the checkout's own git directory, which the agent never touches; the
agent gets a copy of it (see `copy_git_dir`) to spoil as it likes, and that copy is thrown away
with the sandbox, so nothing it writes there (hooks, `core.fsmonitor`, filters) runs on the host.
Work trees may be the sandbox's workspace: git reads their `.gitignore` files, nothing more.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from worker.git import HARDENING, GitError

LIST_TIMEOUT_S = 120
# Never copied into the sandbox: what could run code (hooks), other checkouts' state
# (worktrees, modules), large stores the agent does not need, and locks.
NOT_FOR_THE_AGENT = shutil.ignore_patterns(
    "hooks", "worktrees", "modules", "lfs", "*.lock", "fsmonitor--daemon*", "config"
)


def _env() -> dict[str, str]:
    """As `worker.git`'s, but with the user's HOME, so that their global excludes apply."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/nonexistent"),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        # Reading must not rewrite the user's index (as root, it would then belong to root).
        "GIT_OPTIONAL_LOCKS": "0",
        # Paths are file names, never pathspec magic such as `:(exclude)`.
        "GIT_LITERAL_PATHSPECS": "1",
        "LANG": "C",
        "GIT_CONFIG_COUNT": str(len(HARDENING)),
    }
    for index, (key, value) in enumerate(HARDENING.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def _git(args: list[str], ok: tuple[int, ...] = (0,), timeout: float = LIST_TIMEOUT_S) -> str:
    try:
        proc = subprocess.run(
            ["git", *args], env=_env(), capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {_subcommand(args)} took longer than {timeout:g} s") from None
    if proc.returncode not in ok:
        message = proc.stderr.decode(errors="replace").strip()
        raise GitError(f"git {_subcommand(args)} failed: {message}")
    return proc.stdout.decode(errors="surrogateescape")


def _subcommand(args: list[str]) -> str:
    rest = args[2:] if args[0] == "-C" else args
    return next(arg for arg in rest if not arg.startswith("-"))


@dataclass(frozen=True)
class LocalRepo:
    """A checkout on this machine: its work tree and its trusted git directories."""

    work_tree: Path
    git_dir: Path
    """This work tree's git directory (a linked worktree has its own, beside the common one)."""
    common_dir: Path
    """Objects, refs and config shared by all of the repository's work trees."""

    @classmethod
    def find(cls, path: Path) -> LocalRepo:
        """The checkout `path` lies in; GitError when it lies in none."""
        out = _git(
            [
                "-C",
                str(path),
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--git-dir",
                "--git-common-dir",
            ]
        )
        top, git_dir, common = out.splitlines()[:3]
        return cls(Path(top), Path(git_dir), Path(common))

    def git(self, *args: str, work_tree: Path | None = None, ok: tuple[int, ...] = (0,)) -> str:
        """git with this repository's git directory over its own work tree or another one."""
        tree = work_tree or self.work_tree
        return _git([f"--git-dir={self.git_dir}", f"--work-tree={tree}", *args], ok)

    def files(self) -> list[str]:
        """Tracked files and untracked ones that are not ignored, as git lists them."""
        return _paths(self.git("ls-files", "-z", "--cached", "--others", "--exclude-standard"))

    def tracked(self) -> set[str]:
        return set(_paths(self.git("ls-files", "-z", "--cached")))

    def untracked(self, work_tree: Path) -> list[str]:
        """Files of another work tree (the agent's) that this repository neither tracks nor
        ignores; a nested repository shows as its directory, with a trailing `/`."""
        listing = self.git("ls-files", "-z", "--others", "--exclude-standard", work_tree=work_tree)
        return _paths(listing)

    def copy_git_dir(self, target: Path) -> None:
        """A `.git` at `target` for the agent's own `git diff` and `git status`: objects, refs,
        this work tree's HEAD and index, and a config holding only the repository format, so
        that no remote URL, credential or hook of the user's reaches the sandbox."""
        shutil.copytree(self.common_dir, target, symlinks=True, ignore=NOT_FOR_THE_AGENT)
        for name in ("HEAD", "index"):
            if (self.git_dir / name).is_file():
                shutil.copyfile(self.git_dir / name, target / name)
        (target / "config").write_text(self._format_config())

    def _format_config(self) -> str:
        version = self.git("config", "--get", "core.repositoryformatversion", ok=(0, 1)).strip()
        lines = ["[core]", f"\trepositoryformatversion = {version or '0'}", "\tbare = false"]
        extensions = self.git("config", "--get-regexp", r"^extensions\.", ok=(0, 1))
        if extensions.strip():
            lines.append("[extensions]")
            for line in extensions.splitlines():
                key, _, value = line.partition(" ")
                lines.append(f"\t{key.removeprefix('extensions.')} = {value}")
        return "\n".join(lines) + "\n"

    def diff_stat(self, paths: list[str]) -> str:
        """`git diff --stat` of the work tree against the index, for these paths only."""
        if not paths:
            return ""
        args = ["diff", "--stat", "--no-color", "--no-ext-diff", "--no-textconv", "--"]
        return self.git(*args, *paths)


def _paths(listing: str) -> list[str]:
    # A conflicted file is listed once per stage.
    return sorted({path for path in listing.split("\0") if path})
