"""The fake GitHub's REST endpoints: one small function per endpoint Wrench calls."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

Answer = tuple[int, Any]
ROUTES: list[tuple[str, re.Pattern[str], str | None, bool, Callable[..., Answer]]] = []
NOT_FOUND = (404, {"message": "Not Found"})


def endpoint(method: str, pattern: str, permission: str | None = None, write: bool = False):
    """Register an endpoint; `permission` None means App (JWT) auth, else a scoped token."""

    def register(func: Callable[..., Answer]) -> Callable[..., Answer]:
        ROUTES.append((method, re.compile(f"^{pattern}$"), permission, write, func))
        return func

    return register


def route(fake, handler, path: str, query: dict[str, str], data: dict[str, Any]) -> Answer:
    auth = handler.headers.get("Authorization")
    for method, pattern, permission, write, func in ROUTES:
        match = pattern.match(path)
        if method != handler.command or not match:
            continue
        args = match.groupdict()
        if permission is None:
            if not fake.check_jwt(auth):
                return 401, {"message": "A JSON web token could not be decoded"}
            return func(fake, query=query, data=data, **args)
        if permission == "public":
            return func(fake, query=query, data=data, **args)
        if permission == "installation":
            token = fake.token_for(auth)
            if token is None:
                return 401, {"message": "Bad credentials"}
            return func(fake, token, query=query, data=data, **args)
        repo = fake.repos.get(f"{args.pop('owner')}/{args.pop('repo')}")
        if repo is None:
            return NOT_FOUND
        if not fake.allows(fake.token_for(auth), repo, permission, write):
            return 401 if fake.token_for(auth) is None else 403, {"message": "Bad credentials"}
        return func(fake, repo, query=query, data=data, **args)
    return NOT_FOUND


REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"


def page_of(items: list, query: dict[str, str]) -> list:
    """One page of a list, as GitHub's `per_page` and `page` ask (30 and 1 by default)."""
    size, page = int(query.get("per_page", 30)), int(query.get("page", 1))
    return items[(page - 1) * size : page * size]


def comment_json(fake, comment: dict[str, Any]) -> dict[str, Any]:
    public = {k: v for k, v in comment.items() if k not in {"history", "issue", "pull"}}
    return {**public, "html_url": f"https://github.example/comments/{comment['id']}"}


@endpoint("GET", "/app")
def get_app(fake, query, data) -> Answer:
    return 200, {"id": fake.app_id, "slug": fake.slug, "name": fake.slug.title()}


@endpoint("POST", r"/app/installations/(?P<installation>\d+)/access_tokens")
def create_token(fake, installation: str, query, data) -> Answer:
    token = fake.mint_token(int(installation), data)
    expires = datetime.fromtimestamp(token.expires_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return 201, {"token": token.value, "expires_at": expires, "permissions": token.permissions}


@endpoint("GET", r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/installation")
def get_installation(fake, owner: str, repo: str, query, data) -> Answer:
    found = fake.repos.get(f"{owner}/{repo}")
    return (200, {"id": found.installation_id}) if found else NOT_FOUND


@endpoint("GET", r"/users/(?P<login>[^/]+)", "installation")
def get_user(fake, token, login: str, query, data) -> Answer:
    return 200, {"login": login, "id": 41898282 if login.endswith("[bot]") else 1, "type": "Bot"}


@endpoint("GET", REPO, "metadata")
def get_repo(fake, repo, query, data) -> Answer:
    return 200, {
        "full_name": repo.full_name,
        "name": repo.name,
        "private": True,
        "default_branch": repo.default_branch,
        "owner": {"login": repo.owner},
        "clone_url": f"{fake.url}/git/{repo.full_name}.git",
    }


@endpoint("GET", REPO + r"/collaborators/(?P<login>[^/]+)/permission", "metadata")
def get_permission(fake, repo, login: str, query, data) -> Answer:
    role = repo.permissions.get(login, "none")
    permission = {"maintain": "write", "triage": "read"}.get(role, role)
    return 200, {"permission": permission, "role_name": role, "user": {"login": login}}


@endpoint("GET", REPO + r"/branches/(?P<branch>.+)", "contents")
def get_branch(fake, repo, branch: str, query, data) -> Answer:
    sha = fake.branch_sha(repo.full_name, branch)
    return (200, {"name": branch, "commit": {"sha": sha}}) if sha else NOT_FOUND


@endpoint("GET", REPO + r"/issues/(?P<number>\d+)", "issues")
def get_issue(fake, repo, number: str, query, data) -> Answer:
    issue = repo.issues.get(int(number))
    return (200, issue) if issue else NOT_FOUND


@endpoint("GET", REPO + r"/issues/(?P<number>\d+)/comments", "issues")
def list_comments(fake, repo, number: str, query, data) -> Answer:
    comments = fake.issue_comments(repo.full_name, int(number))
    return 200, page_of([comment_json(fake, c) for c in comments], query)


@endpoint("POST", REPO + r"/issues/(?P<number>\d+)/comments", "issues", write=True)
def create_comment(fake, repo, number: str, query, data) -> Answer:
    comment = fake.add_comment(
        repo.full_name, int(number), data["body"], login=f"{fake.slug}[bot]", association="NONE"
    )
    comment["user"]["type"] = "Bot"
    return 201, comment_json(fake, comment)


@endpoint("PATCH", REPO + r"/issues/comments/(?P<comment_id>\d+)", "issues", write=True)
def update_comment(fake, repo, comment_id: str, query, data) -> Answer:
    comment = fake.comments.get(int(comment_id))
    if comment is None:
        return NOT_FOUND
    comment["body"] = data["body"]
    comment["history"].append(data["body"])
    return 200, comment_json(fake, comment)


def _react(fake, subject: str, subject_id: int, content: str) -> Answer:
    reaction = {"id": fake.next_id(), "content": content, "subject": subject, "on": subject_id}
    fake.reactions.append(reaction)
    return 201, reaction


@endpoint("POST", REPO + r"/issues/(?P<number>\d+)/reactions", "issues", write=True)
def react_issue(fake, repo, number: str, query, data) -> Answer:
    return _react(fake, "issue", int(number), data["content"])


@endpoint("POST", REPO + r"/issues/comments/(?P<cid>\d+)/reactions", "issues", write=True)
def react_comment(fake, repo, cid: str, query, data) -> Answer:
    return _react(fake, "issue_comment", int(cid), data["content"])


@endpoint("POST", REPO + r"/pulls/comments/(?P<cid>\d+)/reactions", "pull_requests", write=True)
def react_review_comment(fake, repo, cid: str, query, data) -> Answer:
    return _react(fake, "review_comment", int(cid), data["content"])


@endpoint("GET", REPO + r"/pulls/comments/(?P<cid>\d+)", "pull_requests")
def get_review_comment(fake, repo, cid: str, query, data) -> Answer:
    comment = fake.review_comments.get(int(cid))
    return (200, comment_json(fake, comment)) if comment else NOT_FOUND


@endpoint("GET", REPO + r"/pulls/(?P<number>\d+)", "pull_requests")
def get_pull(fake, repo, number: str, query, data) -> Answer:
    pull = fake.pulls.get((repo.full_name, int(number)))
    return (200, pull) if pull else NOT_FOUND


@endpoint("GET", REPO + r"/pulls", "pull_requests")
def list_pulls(fake, repo, query, data) -> Answer:
    pulls = fake.open_pulls(repo.full_name) if query.get("state", "open") == "open" else []
    if "head" in query:
        owner, _, branch = query["head"].partition(":")
        pulls = [p for p in pulls if p["head"]["ref"] == branch and owner == repo.owner]
    return 200, page_of(pulls, query)


@endpoint("POST", REPO + r"/pulls", "pull_requests", write=True)
def create_pull(fake, repo, query, data) -> Answer:
    sha = fake.branch_sha(repo.full_name, data["head"])
    if sha is None:
        return 422, {"message": "Validation Failed", "errors": [{"field": "head"}]}
    if any(p["head"]["ref"] == data["head"] for p in fake.open_pulls(repo.full_name)):
        return 422, {"message": "A pull request already exists"}
    number = max([*repo.issues, 0]) + 1
    pull = fake.add_pull(repo.full_name, number, data["head"], data["title"], data.get("body", ""))
    pull.update(draft=bool(data.get("draft")), user={"login": f"{fake.slug}[bot]", "type": "Bot"})
    return 201, pull


@endpoint("PATCH", REPO + r"/pulls/(?P<number>\d+)", "pull_requests", write=True)
def update_pull(fake, repo, number: str, query, data) -> Answer:
    pull = fake.pulls.get((repo.full_name, int(number)))
    if pull is None:
        return NOT_FOUND
    pull.update({k: v for k, v in data.items() if k in {"title", "body", "state"}})
    return 200, pull


@endpoint("GET", r"/app/installations")
def list_installations(fake, query, data) -> Answer:
    ids = sorted({repo.installation_id for repo in fake.repos.values()})
    return 200, page_of([{"id": i, "account": {"login": f"account-{i}"}} for i in ids], query)


@endpoint("GET", r"/installation/repositories", "installation")
def list_installation_repos(fake, token, query, data) -> Answer:
    repos = [r for r in fake.repos.values() if r.installation_id == token.installation_id]
    listed = [
        {"full_name": r.full_name, "name": r.name, "default_branch": r.default_branch}
        for r in repos
        if token.repositories is None or r.name in token.repositories
    ]
    return 200, {"total_count": len(listed), "repositories": page_of(listed, query)}


@endpoint("GET", REPO + r"/contents/(?P<path>.+)", "contents")
def get_contents(fake, repo, path: str, query, data) -> Answer:
    ref = query.get("ref", repo.default_branch)
    kind = fake.object_type(repo.full_name, ref, path)
    if kind is None:
        return NOT_FOUND
    if kind == "tree":  # GitHub lists a directory's entries
        return 200, [
            {"type": "file", "path": f"{path}/{name}"}
            for name in fake.read_file(repo.full_name, ref, path).split("\n")[2:]
            if name
        ]
    text = fake.read_file(repo.full_name, ref, path)
    return 200, {
        "type": "file",
        "path": path,
        "encoding": "base64",
        "content": base64.b64encode(text.encode()).decode(),
    }


@endpoint("POST", r"/app-manifests/(?P<code>[\w-]+)/conversions", "public")
def convert_manifest(fake, code: str, query, data) -> Answer:
    if code != fake.manifest_code:
        return 404, {"message": "Not Found"}
    fake.manifest_code = None  # a code works once
    return 201, {
        "id": fake.app_id,
        "slug": fake.slug,
        "pem": fake.private_key,
        "webhook_secret": "whsec-from-github-0123456789",
        "html_url": f"https://github.example/apps/{fake.slug}",
    }
