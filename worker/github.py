"""The worker's GitHub seam: the calls a job makes on one repository, over githubkit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from githubkit import GitHub, TokenAuthStrategy
from githubkit.exception import RequestFailed

Json = dict[str, Any]


class GitHubRepo(Protocol):
    """What a job asks of GitHub about the repository it works on."""

    full_name: str

    def repository(self) -> Json: ...
    def permission(self, login: str) -> str: ...
    def issue(self, number: int) -> Json: ...
    def issue_comments(self, number: int) -> list[Json]: ...
    def pull(self, number: int) -> Json: ...
    def review_comment(self, comment_id: int) -> Json: ...
    def react(self, target: str, target_id: int, content: str) -> None: ...
    def create_comment(self, number: int, body: str) -> int: ...
    def update_comment(self, comment_id: int, body: str) -> None: ...
    def branch_exists(self, branch: str) -> bool: ...
    def open_pull_for(self, branch: str) -> Json | None: ...
    def create_pull(self, title: str, head: str, base: str, body: str, draft: bool) -> Json: ...
    def update_pull(self, number: int, body: str) -> Json: ...
    def user_id(self, login: str) -> int: ...


PAGE = 100


def pages(github: GitHub, url: str, key: str | None = None) -> Iterator[dict[str, Any]]:
    """Every item of a paginated list endpoint (`key` names the list inside an object)."""
    page = 1
    while True:
        answer = github.request("GET", url, params={"per_page": PAGE, "page": page}).json()
        items = answer[key] if key else answer
        yield from items
        if len(items) < PAGE:
            return
        page += 1


def installation_client(api_url: str, token: str, timeout_s: float = 30) -> GitHub:
    """A githubkit client with an installation token; it retries on rate limits and 5xx."""
    return GitHub(TokenAuthStrategy(token), base_url=api_url, timeout=timeout_s, http_cache=False)


class GitHubKitRepo:
    """GitHubRepo over a githubkit client (enter the client's context to reuse connections)."""

    def __init__(self, github: GitHub, full_name: str) -> None:
        self.full_name = full_name
        self._owner, self._name = full_name.split("/")
        self._github = github

    def _get(self, path: str, **params: Any) -> Any:
        url = f"/repos/{self.full_name}{path}"
        return self._github.request("GET", url, params=params or None).json()

    def _send(self, method: str, path: str, body: Json) -> Any:
        url = f"/repos/{self.full_name}{path}"
        return self._github.request(method, url, json=body).json()

    def repository(self) -> Json:
        return self._get("")

    def permission(self, login: str) -> str:
        """The requester's role: admin, maintain, write, triage, read or none."""
        answer = self._get(f"/collaborators/{login}/permission")
        return answer.get("role_name") or answer["permission"]

    def issue(self, number: int) -> Json:
        return self._get(f"/issues/{number}")

    def issue_comments(self, number: int) -> list[Json]:
        """Every comment, oldest first."""
        return list(pages(self._github, f"/repos/{self.full_name}/issues/{number}/comments"))

    def pull(self, number: int) -> Json:
        return self._get(f"/pulls/{number}")

    def review_comment(self, comment_id: int) -> Json:
        return self._get(f"/pulls/comments/{comment_id}")

    def react(self, target: str, target_id: int, content: str) -> None:
        """React to an `issue`, an `issue_comment` or a `review_comment`."""
        path = {
            "issue": f"/issues/{target_id}/reactions",
            "issue_comment": f"/issues/comments/{target_id}/reactions",
            "review_comment": f"/pulls/comments/{target_id}/reactions",
        }[target]
        self._send("POST", path, {"content": content})

    def create_comment(self, number: int, body: str) -> int:
        return self._send("POST", f"/issues/{number}/comments", {"body": body})["id"]

    def update_comment(self, comment_id: int, body: str) -> None:
        self._send("PATCH", f"/issues/comments/{comment_id}", {"body": body})

    def branch_exists(self, branch: str) -> bool:
        try:
            self._get(f"/branches/{branch}")
        except RequestFailed as exc:
            if exc.response.status_code == 404:
                return False
            raise
        return True

    def open_pull_for(self, branch: str) -> Json | None:
        pulls = self._get("/pulls", state="open", head=f"{self._owner}:{branch}")
        return pulls[0] if pulls else None

    def create_pull(self, title: str, head: str, base: str, body: str, draft: bool) -> Json:
        data = {"title": title, "head": head, "base": base, "body": body, "draft": draft}
        return self._send("POST", "/pulls", data)

    def update_pull(self, number: int, body: str) -> Json:
        return self._send("PATCH", f"/pulls/{number}", {"body": body})

    def user_id(self, login: str) -> int:
        return self._github.request("GET", f"/users/{login}").json()["id"]
