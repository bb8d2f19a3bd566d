"""Host git on a checkout on this machine, hardened: its files, a disposable `.git`, a diff stat.

Host git only ever uses the checkout's own git directory and work tree, which the agent never
touches; the agent gets a copy of the git directory (see `add_git_dir`) to spoil as it likes,
thrown away with the sandbox, so nothing it writes there (hooks, `core.fsmonitor`, filters)
runs on the host.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sandbox.boundary import WorkspaceArchive
from worker.git import HARDENING, GitError

LIST_TIMEOUT_S = 120
# Never copied into the sandbox: what could run code (hooks), other checkouts' state
# (worktrees, modules), large stores the agent does not need, locks, and what we write.
NOT_FOR_THE_AGENT = ("hooks", "worktrees", "modules", "lfs", "*.lock", "fsmonitor--daemon*")
_WRITTEN = ("config", "HEAD", "index")


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


def _git(
    args: list[str],
    ok: tuple[int, ...] = (0,),
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
) -> str:
    try:
        proc = subprocess.run(
            ["git", *args],
            env=_env() | (env or {}),
            input=stdin,
            capture_output=True,
            timeout=LIST_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {_subcommand(args)} took longer than {LIST_TIMEOUT_S} s") from None
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

    def git(
        self,
        *args: str,
        ok: tuple[int, ...] = (0,),
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
    ) -> str:
        """git with this repository's git directory over its own work tree."""
        command = [f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}", *args]
        return _git(command, ok, stdin, env)

    def files(self) -> list[str]:
        """Tracked files and untracked ones that are not ignored, as git lists them."""
        return _paths(self.git("ls-files", "-z", "--cached", "--others", "--exclude-standard"))

    def tracked(self) -> set[str]:
        return set(_paths(self.git("ls-files", "-z", "--cached")))

    def head(self) -> str | None:
        """The commit checked out, or None in a repository without commits."""
        out = self.git("rev-parse", "--verify", "--quiet", "HEAD", ok=(0, 1)).strip()
        return out or None

    def ignored(self, paths: list[str]) -> set[str]:
        """Those of the paths the checkout's own ignore rules (its `.gitignore` files, info
        exclude and the user's global excludes) ignore."""
        # check-ignore refuses literal pathspecs; `./` keeps a leading `:` from being magic.
        listing = "".join(f"./{path}\0" for path in paths).encode("utf-8", "surrogateescape")
        args = ["check-ignore", "-z", "--stdin"]
        out = self.git(*args, ok=(0, 1), stdin=listing, env={"GIT_LITERAL_PATHSPECS": "0"})
        return {path.removeprefix("./") for path in _paths(out)}

    def add_git_dir(self, archive: WorkspaceArchive) -> None:
        """A `.git` in the archive for the agent's own `git diff` and `git status`: objects,
        refs, this work tree's HEAD and index, and a config holding only the repository format,
        so that no remote URL, credential or hook of the user's reaches the sandbox."""

        def skip(path: str) -> bool:
            name = posixpath.basename(path)
            return path in _WRITTEN or any(fnmatch.fnmatch(name, p) for p in NOT_FOR_THE_AGENT)

        archive.tree(self.common_dir, ".git", skip=skip)
        for name in ("HEAD", "index"):
            if (self.git_dir / name).is_file():
                archive.data(f".git/{name}", (self.git_dir / name).read_bytes())
        archive.data(".git/config", self._format_config().encode())

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
