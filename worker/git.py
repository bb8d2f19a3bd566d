"""Git on the host: a clone no sandbox ever sees, with the token only in a per-command header.

The clone is bare: objects and refs, no work tree. The sandbox's workspace is made from its
objects (`Checkout.archive`), and the agent's changes come back as checked data, which become a
commit through `git fast-import`: file bytes go into blobs verbatim, so no attribute, filter,
hook or nested repository of the repository's has any say in what the host runs or commits.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sandbox.boundary import Change, WorkspaceArchive

GIT_TIMEOUT_S = 300
# Settings that keep git from running anything the repository could influence.
HARDENING = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.attributesFile": "/dev/null",
    "protocol.allow": "never",
    "protocol.https.allow": "always",
    "protocol.http.allow": "always",
    "safe.directory": "*",
    "credential.helper": "",
    "advice.detachedHead": "false",
    "diff.ignoreSubmodules": "all",
    "submodule.recurse": "false",
    "status.submoduleSummary": "false",
}
FILE, EXECUTABLE, LINK, GITLINK = "100644", "100755", "120000", "160000"
# Never given to the agent: what could run code, our remote's settings, and what we write.
_NOT_FOR_THE_AGENT = {"hooks", "config", "HEAD", "index", "FETCH_HEAD", "logs", "info"}
_AGENT_CONFIG = b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"


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


def blob_id(content: bytes) -> str:
    """The id git gives a blob of these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()  # noqa: S324


def entry_of(change: Change) -> tuple[str, str] | None:
    """(mode, blob id) the change gives its path in a tree; None for a deletion."""
    if change.content is None:
        return None
    mode = LINK if change.link else EXECUTABLE if change.executable else FILE
    return mode, blob_id(change.content)


class Checkout:
    """A bare clone on the host and the commit (`base`) the job's work starts from."""

    def __init__(self, git_dir: Path, token: str, base: str, branch: str | None) -> None:
        self.git_dir, self.base, self.branch = git_dir, base, branch
        self._token = token

    @classmethod
    def clone(cls, url: str, branch: str, git_dir: Path, token: str) -> Checkout:
        """Shallow-clone `branch`, objects only: nothing is checked out on the host."""
        config = {**HARDENING, "http.extraHeader": auth_header(token)}
        options = ["--quiet", "--bare", "--depth=1", "--single-branch", f"--branch={branch}"]
        _run(["git", "clone", *options, url, str(git_dir)], config, token)
        checkout = cls(git_dir, token, "", branch)
        checkout.base = checkout.git("rev-parse", "HEAD").strip()
        return checkout

    def git(self, *args: str, network: bool = False, **options: object) -> str:
        """Run git on the clone and return its output as text (see `git_bytes`)."""
        return self.git_bytes(*args, network=network, **options).decode(errors="surrogateescape")

    def git_bytes(
        self,
        *args: str,
        network: bool = False,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
    ) -> bytes:
        """Run git on the clone, hardened; the token goes in a header only when `network`."""
        config = dict(HARDENING)
        if network:
            config["http.extraHeader"] = auth_header(self._token)
        command = ["git", f"--git-dir={self.git_dir}", *args]
        return _run(command, config, self._token, stdin, env)

    def check_out(self, ref: str) -> None:
        """Fetch `ref` (e.g. `refs/pull/7/head`, a fork's pull request) and work from it."""
        self.git("fetch", "--quiet", "--depth=1", "origin", ref, network=True)
        self.base = self.git("rev-parse", "FETCH_HEAD").strip()
        self.branch = None

    def tree(self, commit: str | None = None) -> dict[str, tuple[str, str]]:
        """Every path of a commit (`base` by default): its mode and object id."""
        listing = self.git("ls-tree", "-r", "-z", "--full-tree", commit or self.base)
        tree = {}
        for item in filter(None, listing.split("\0")):
            meta, _, path = item.partition("\t")
            mode, _, object_id = meta.split(" ")
            tree[path] = (mode, object_id)
        return tree

    def file(self, path: str) -> bytes | None:
        """The bytes of a regular file at `base`; None when there is none (or it is a link)."""
        entry = self.tree().get(path)
        if entry is None or entry[0] not in (FILE, EXECUTABLE):
            return None
        return self.git_bytes("cat-file", "blob", entry[1])

    def archive(self, owner: tuple[int, int]) -> BinaryIO:
        """The workspace to give the sandbox: `base`'s files as git stores them, and a `.git`
        of the agent's own (objects, refs, an index; no hooks, remote or credentials)."""
        archive = WorkspaceArchive(owner)
        tree = self.tree()
        for path, (mode, _) in tree.items():
            if mode == GITLINK:
                archive.directory(path)  # a submodule, left empty as a clone leaves it
        _blobs_into(archive, self.git_dir, {p: e for p, e in tree.items() if e[0] != GITLINK})
        archive.tree(self.git_dir, ".git", skip=lambda path: path in _NOT_FOR_THE_AGENT)
        head = f"ref: refs/heads/{self.branch}\n" if self.branch else f"{self.base}\n"
        archive.data(".git/HEAD", head.encode())
        archive.data(".git/config", _AGENT_CONFIG)
        archive.data(".git/index", self._index())
        return archive.finish()

    def _index(self) -> bytes:
        """An index of `base` for the agent's `git status`, made without any work tree."""
        with tempfile.TemporaryDirectory(prefix="wrench-index-") as scratch:
            self.git("read-tree", self.base, env={"GIT_INDEX_FILE": f"{scratch}/index"})
            return Path(scratch, "index").read_bytes()

    def effective(self, changes: tuple[Change, ...]) -> list[Change]:
        """The changes that make a difference to `base` (and never touch a submodule)."""
        tree = self.tree()
        return [
            change
            for change in changes
            if (old := tree.get(change.path)) != entry_of(change)
            and (old is None or old[0] != GITLINK)
            and (old is not None or change.content is not None)
        ]

    def commit(self, changes: list[Change], message: str, identity: Identity) -> str:
        """A commit of `changes` on top of `base`, made without a work tree; its id."""
        ref = "refs/wrench/commit"
        stream = _fast_import_stream(ref, self.base, changes, message, identity)
        self.git("fast-import", "--quiet", "--force", stdin=stream)
        return self.git("rev-parse", ref).strip()

    def diff(self, old: str, new: str) -> str:
        """The text of the change between two commits, whatever the repository's attributes."""
        return self.git("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--text", old, new)

    def push(self, commit: str, branch: str) -> None:
        self.git("push", "--quiet", "origin", f"{commit}:refs/heads/{branch}", network=True)


def _fast_import_stream(
    ref: str, base: str, changes: list[Change], message: str, identity: Identity
) -> bytes:
    """Commands for `git fast-import`: deletions first, so a file may replace a directory."""
    when = f"{int(time.time())} +0000"
    who = f"{identity.name} <{identity.email}> {when}"
    text = message.encode()
    out = [f"feature done\ncommit {ref}\nauthor {who}\ncommitter {who}\n".encode()]
    out += [b"data %d\n" % len(text), text, f"\nfrom {base}\n".encode()]
    ordered = sorted(changes, key=lambda change: change.content is not None)
    for change in ordered:
        path = _quote(change.path)
        if (entry := entry_of(change)) is None:
            out.append(b"D " + path + b"\n")
            continue
        assert change.content is not None
        out += [f"M {entry[0]} inline ".encode() + path + b"\n", b"data %d\n" % len(change.content)]
        out += [change.content, b"\n"]
    out.append(b"done\n")
    return b"".join(out)


def _quote(path: str) -> bytes:
    """A path in C-style quotes, as fast-import accepts any path."""
    raw = path.encode("utf-8", "surrogateescape")
    escaped = b"".join(
        b"\\%03o" % byte if byte < 0x20 or byte in (0x22, 0x5C, 0x7F) else bytes([byte])
        for byte in raw
    )
    return b'"' + escaped + b'"'


def _blobs_into(archive: WorkspaceArchive, git_dir: Path, tree: dict[str, tuple[str, str]]) -> None:
    """Stream every blob of `tree` from one `git cat-file --batch` into the archive."""
    command = ["git", f"--git-dir={git_dir}", "cat-file", "--batch"]
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_env(HARDENING)
    )
    assert proc.stdin and proc.stdout
    ids = "".join(f"{object_id}\n" for _, object_id in tree.values()).encode()
    writer = threading.Thread(target=_feed, args=(proc.stdin, ids), daemon=True)
    writer.start()
    try:
        for path, (mode, _) in tree.items():
            size = int(proc.stdout.readline().split()[2])
            if mode == LINK:
                archive.link(path, proc.stdout.read(size).decode("utf-8", "surrogateescape"))
            else:
                archive.file(path, proc.stdout, size, executable=mode == EXECUTABLE)
            proc.stdout.read(1)  # the newline after each object
    finally:
        proc.stdout.close()
        proc.wait(GIT_TIMEOUT_S)
        writer.join()


def _feed(pipe: BinaryIO, data: bytes) -> None:
    try:
        pipe.write(data)
    finally:
        pipe.close()


def _run(
    command: list[str],
    config: dict[str, str],
    token: str,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
) -> bytes:
    proc = subprocess.run(
        command,
        env=_env(config) | (env or {}),
        input=stdin,
        capture_output=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        output = (proc.stderr or proc.stdout).decode(errors="replace").strip()
        action = next(arg for arg in command[1:] if not arg.startswith("-"))
        raise GitError(f"git {action} failed: {output.replace(token, '[REDACTED]')}")
    return proc.stdout
