"""Git on the host: clone, commit and push, with the token only in a per-command header.

The repository's git directory stays on the host, outside the sandbox; the sandbox gets the
work tree and a disposable copy of `.git` for the agent's own `git diff`. Publishing reads
only the work tree through the host's git directory, so nothing the agent writes into `.git`
(hooks, `core.fsmonitor`, filters) ever runs on the host.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 300
# Settings that keep git from running anything the work tree could influence.
HARDENING = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "protocol.allow": "never",
    "protocol.https.allow": "always",
    "protocol.http.allow": "always",
    "safe.directory": "*",
    "credential.helper": "",
    "advice.detachedHead": "false",
    # Never look inside (submodule) repositories below the work tree: their config is not ours.
    "diff.ignoreSubmodules": "all",
    "submodule.recurse": "false",
    "status.submoduleSummary": "false",
}


class GitError(RuntimeError):
    """A git command failed; the message holds its redacted output."""


@dataclass(frozen=True)
class Identity:
    """Who commits: the App's bot user."""

    name: str
    email: str


def _env(config: dict[str, str]) -> dict[str, str]:
    """git configuration passed through the environment, which other users cannot read."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "LANG": "C",
    }
    env["GIT_CONFIG_COUNT"] = str(len(config))
    for index, (key, value) in enumerate(config.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def auth_header(token: str) -> str:
    """The header git sends to GitHub for an installation token."""
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return f"Authorization: Basic {basic}"


class Checkout:
    """A clone whose git directory (`git_dir`) is trusted and whose `work_tree` is not."""

    def __init__(self, git_dir: Path, work_tree: Path, token: str) -> None:
        self.git_dir, self.work_tree = git_dir, work_tree
        self._token = token

    def git(self, *args: str, network: bool = False, identity: Identity | None = None) -> str:
        config = dict(HARDENING)
        if network:
            config["http.extraHeader"] = auth_header(self._token)
        if identity:
            config.update({"user.name": identity.name, "user.email": identity.email})
        command = ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}", *args]
        return _run(command, config, self._token)

    @classmethod
    def clone(cls, url: str, branch: str, git_dir: Path, work_tree: Path, token: str) -> Checkout:
        """Shallow-clone `branch` into `work_tree`, keeping the git directory at `git_dir`.

        Call `give_work_tree_a_copy()` once the work tree holds what the agent should see.
        """
        config = {**HARDENING, "http.extraHeader": auth_header(token)}
        command = [
            "git",
            "clone",
            "--quiet",
            "--depth=1",
            "--single-branch",
            f"--branch={branch}",
            f"--separate-git-dir={git_dir}",
            url,
            str(work_tree),
        ]
        _run(command, config, token)
        return cls(git_dir, work_tree, token)

    def check_out(self, ref: str) -> None:
        """Fetch `ref` (e.g. `refs/pull/7/head`, a fork's pull request) and check it out."""
        self.git("fetch", "--quiet", "--depth=1", "origin", ref, network=True)
        self.git("checkout", "--quiet", "--detach", "FETCH_HEAD")

    def give_work_tree_a_copy(self) -> None:
        """Replace the work tree's `.git` pointer with a copy the agent may use and spoil."""
        (self.work_tree / ".git").unlink()
        shutil.copytree(
            self.git_dir,
            self.work_tree / ".git",
            symlinks=True,
            ignore=shutil.ignore_patterns("hooks"),
        )

    def forget_nested_repositories(self) -> list[str]:
        """Remove every `.git` below the work tree's top (a submodule the agent filled in, or a
        repository it made), without following links: git would otherwise run commands from
        their config, which the agent wrote. Returns the paths removed."""
        removed = []
        for directory, dirnames, filenames in os.walk(self.work_tree):
            if Path(directory) == self.work_tree:
                dirnames[:] = [d for d in dirnames if d != ".git"]  # the agent's own copy
                continue
            if ".git" in dirnames + filenames:
                path = Path(directory) / ".git"
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
                dirnames[:] = [d for d in dirnames if d != ".git"]
                removed.append(str(path.relative_to(self.work_tree)))
        return removed

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def changed_files(self) -> list[str]:
        """Paths the work tree adds, changes or deletes relative to HEAD (untracked included)."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all")
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3]

    def commit_all(self, message: str, identity: Identity) -> str:
        self.git("add", "--all")
        self.git("commit", "--quiet", "--no-verify", "-m", message, identity=identity)
        return self.head()

    def diff(self, base: str) -> str:
        return self.git("diff", "--no-color", "--no-ext-diff", "--no-textconv", base, "HEAD")

    def push(self, branch: str) -> None:
        self.git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", network=True)


def _run(command: list[str], config: dict[str, str], token: str) -> str:
    proc = subprocess.run(
        command,
        env=_env(config),
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        output = (proc.stderr or proc.stdout).strip().replace(token, "[REDACTED]")
        action = next(arg for arg in command[1:] if not arg.startswith("-"))
        raise GitError(f"git {action} failed: {output}")
    return proc.stdout
