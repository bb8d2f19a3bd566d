"""A fake GitHub on 127.0.0.1: the REST endpoints Wrench calls and real git repos over smart HTTP.

It checks credentials like GitHub does: the App's JWT (signed with the App's private key) for
App endpoints, an installation token scoped to the repository for everything else, including
`git fetch` and `git push`. Tests read what Wrench did from its recorded state.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import secrets
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt

from tests.fakes.git_http import read_body, serve_git

WRITE_PERMISSIONS = {"admin", "maintain", "write"}


@dataclass
class Token:
    value: str
    installation_id: int
    repositories: list[str] | None
    permissions: dict[str, str]
    expires_at: float


@dataclass
class Repo:
    owner: str
    name: str
    path: Path
    installation_id: int
    default_branch: str = "main"
    permissions: dict[str, str] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


class FakeGitHub:
    """The server and its state; use as a context manager."""

    def __init__(self, root: Path, app_id: int, public_key: str, slug: str = "wrench") -> None:
        self.root, self.app_id, self.public_key, self.slug = root, app_id, public_key, slug
        self.repos: dict[str, Repo] = {}
        self.tokens: dict[str, Token] = {}
        self.comments: dict[int, dict[str, Any]] = {}
        self.review_comments: dict[int, dict[str, Any]] = {}
        self.pulls: dict[tuple[str, int], dict[str, Any]] = {}
        self.reactions: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str, int]] = []
        # The App manifest flow: the code GitHub hands out, and the key it hands back.
        self.manifest_code: str | None = None
        # Paths answered with this HTTP status, to play GitHub having a bad day.
        self.failing: dict[str, int] = {}
        self.private_key = ""
        self._ids = itertools.count(9000)
        self._lock = threading.RLock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeGitHub:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- setting up the world -------------------------------------------------------------

    def add_repo(self, full_name: str, files: dict[str, str], installation_id: int = 4242) -> Repo:
        """A repository with one commit holding `files` on `main`."""
        owner, name = full_name.split("/")
        path = self.root / owner / f"{name}.git"
        work = self.root / "seed" / owner / name
        work.mkdir(parents=True)
        for rel, text in files.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
        git = ["git", "-C", str(work), "-c", "user.name=Seed", "-c", "user.email=seed@example.com"]
        subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "Initial commit"], check=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(work), str(path)], check=True)
        subprocess.run(
            ["git", "-C", str(path), "config", "uploadpack.allowFilter", "true"], check=True
        )
        repo = Repo(owner, name, path, installation_id)
        self.repos[full_name] = repo
        return repo

    def add_issue(self, full_name: str, number: int, title: str, body: str, **extra: Any) -> None:
        self.repos[full_name].issues[number] = {
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "user": {"login": "octocat", "type": "User"},
            "html_url": f"https://github.example/{full_name}/issues/{number}",
            **extra,
        }

    def add_pull(
        self,
        full_name: str,
        number: int,
        head: str,
        title: str,
        body: str = "",
        fork: str | None = None,
    ) -> dict[str, Any]:
        """An open pull request from branch `head` (of `fork`, when given) into main."""
        repo = self.repos[full_name]
        head_repo = fork or full_name
        pull = {
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "draft": False,
            "user": {"login": "octocat", "type": "User"},
            "head": {
                "ref": head,
                "sha": self.branch_sha(full_name, head) if not fork else "0" * 40,
                "repo": {
                    "full_name": head_repo,
                    "fork": bool(fork),
                    "clone_url": f"{self.url}/git/{head_repo}.git",
                },
            },
            "base": {"ref": repo.default_branch, "repo": {"full_name": full_name}},
            "html_url": f"https://github.example/{full_name}/pull/{number}",
        }
        self.pulls[full_name, number] = pull
        self.add_issue(full_name, number, title, body, pull_request={"url": "..."})
        return pull

    def add_comment(
        self,
        full_name: str,
        number: int,
        body: str,
        login: str = "octocat",
        association: str = "OWNER",
    ) -> dict[str, Any]:
        comment = {
            "id": next(self._ids),
            "body": body,
            "issue": (full_name, number),
            "user": {"login": login, "type": "User"},
            "author_association": association,
            "history": [body],
        }
        self.comments[comment["id"]] = comment
        return comment

    def add_review_comment(
        self, full_name: str, number: int, body: str, path: str, line: int, diff_hunk: str
    ) -> dict[str, Any]:
        comment = {
            "id": next(self._ids),
            "body": body,
            "path": path,
            "line": line,
            "diff_hunk": diff_hunk,
            "pull": (full_name, number),
            "user": {"login": "octocat", "type": "User"},
            "author_association": "OWNER",
        }
        self.review_comments[comment["id"]] = comment
        return comment

    def commit_to_branch(self, full_name: str, branch: str, files: dict[str, str]) -> str:
        """Push a commit with `files` on top of main to `branch`, as a contributor would."""
        work = self.root / "contrib" / secrets.token_hex(4)
        repo = self.repos[full_name]
        subprocess.run(["git", "clone", "-q", str(repo.path), str(work)], check=True)
        for rel, text in files.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
        git = ["git", "-C", str(work), "-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
        subprocess.run([*git, "checkout", "-q", "-B", branch], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", f"Work on {branch}"], check=True)
        subprocess.run([*git, "push", "-q", "origin", branch], check=True)
        return self.branch_sha(full_name, branch)

    def add_fork_pull(self, full_name: str, number: int, fork: str, files: dict[str, str]) -> str:
        """A pull request from a fork, whose head GitHub mirrors as `refs/pull/<n>/head`."""
        sha = self.commit_to_branch(full_name, "fork-head", files)
        git = ["git", "-C", str(self.repos[full_name].path)]
        subprocess.run([*git, "update-ref", f"refs/pull/{number}/head", sha], check=True)
        subprocess.run([*git, "update-ref", "-d", "refs/heads/fork-head"], check=True)
        self.add_pull(full_name, number, "patch-1", "From a fork", fork=fork)
        return sha

    # --- reading the world ----------------------------------------------------------------

    def branch_sha(self, full_name: str, branch: str) -> str | None:
        out = subprocess.run(
            [
                "git",
                "-C",
                str(self.repos[full_name].path),
                "rev-parse",
                "--verify",
                "-q",
                f"refs/heads/{branch}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        return out.stdout.strip() or None

    def read_file(self, full_name: str, ref: str, path: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.repos[full_name].path), "show", f"{ref}:{path}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def object_type(self, full_name: str, ref: str, path: str) -> str | None:
        """`blob`, `tree`, or None when nothing is at that path."""
        out = subprocess.run(
            ["git", "-C", str(self.repos[full_name].path), "cat-file", "-t", f"{ref}:{path}"],
            capture_output=True,
            text=True,
            check=False,
        )
        return out.stdout.strip() or None

    def commits(self, full_name: str, ref: str) -> list[dict[str, str]]:
        fmt = "%H%x00%an%x00%ae%x00%B%x1e"
        out = subprocess.run(
            ["git", "-C", str(self.repos[full_name].path), "log", f"--format={fmt}", ref],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        keys = ("sha", "author", "email", "message")
        return [
            dict(zip(keys, c.strip("\n").split("\0"), strict=True))
            for c in out.split("\x1e")
            if c.strip()
        ]

    def issue_comments(self, full_name: str, number: int) -> list[dict[str, Any]]:
        return [c for c in self.comments.values() if c["issue"] == (full_name, number)]

    def open_pulls(self, full_name: str) -> list[dict[str, Any]]:
        return [
            p for (name, _), p in self.pulls.items() if name == full_name and p["state"] == "open"
        ]

    # --- credentials ----------------------------------------------------------------------

    def check_jwt(self, header: str | None) -> bool:
        if not header or not header.startswith("Bearer "):
            return False
        try:
            claims = jwt.decode(header[7:], self.public_key, algorithms=["RS256"])
        except jwt.PyJWTError:
            return False
        return str(claims.get("iss")) == str(self.app_id)

    def token_for(self, header: str | None) -> Token | None:
        """The live installation token in an Authorization header (token, Bearer or Basic)."""
        if not header:
            return None
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "basic":
            value = base64.b64decode(value).decode().partition(":")[2]
        token = self.tokens.get(value)
        return token if token and token.expires_at > time.time() else None

    def mint_token(self, installation_id: int, body: dict[str, Any]) -> Token:
        token = Token(
            value="ghs_" + secrets.token_urlsafe(27).replace("-", "a").replace("_", "b")[:36],
            installation_id=installation_id,
            repositories=body.get("repositories"),
            permissions=body.get("permissions")
            or {"contents": "write", "issues": "write", "pull_requests": "write"},
            expires_at=time.time() + 3600,
        )
        self.tokens[token.value] = token
        return token

    def allows(self, token: Token | None, repo: Repo, permission: str, write: bool) -> bool:
        if token is None or token.installation_id != repo.installation_id:
            return False
        if token.repositories is not None and repo.name not in token.repositories:
            return False
        # Every installation token can read metadata, as on GitHub.
        granted = token.permissions.get(permission, "read" if permission == "metadata" else "none")
        return granted == "write" or (granted == "read" and not write)

    def next_id(self) -> int:
        return next(self._ids)


def _handler_for(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    from tests.fakes.github_api import route  # the REST endpoints, kept in their own module

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _dispatch(self) -> None:
            url = urlsplit(self.path)
            if url.path.startswith("/git/"):
                self._git(url.path[len("/git") :], url.query)
                return
            body = read_body(self) if self.command in {"POST", "PATCH", "PUT"} else b""
            data = json.loads(body) if body else {}
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            with fake._lock:
                if url.path in fake.failing:
                    status, payload = fake.failing[url.path], {"message": "Server Error"}
                else:
                    status, payload = route(fake, self, url.path, query, data)
            fake.requests.append((self.command, self.path, status))
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _git(self, path: str, query: str) -> None:
            match = re.match(r"/([^/]+)/([^/]+)\.git/", path)
            repo = fake.repos.get(f"{match[1]}/{match[2]}") if match else None
            push = "git-receive-pack" in path + query
            token = fake.token_for(self.headers.get("Authorization"))
            if repo is None or not fake.allows(token, repo, "contents", write=push):
                fake.requests.append((self.command, self.path, 401))
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="GitHub"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            fake.requests.append((self.command, self.path, 200))
            serve_git(self, fake.root, path, query)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _dispatch

    return Handler
