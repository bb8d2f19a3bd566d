"""What the agent is asked to do: the issue or pull request, its discussion and the request."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from worker.github import GitHubRepo, Json
from wrench.jobs import JobSpec, Trigger

_HTML_COMMENT = re.compile(r"<!--.*?(-->|\Z)", re.DOTALL)
# The prompt fences untrusted text with these tags: the text must not close the fence.
_FENCE = re.compile(r"<\s*/?\s*untrusted\s*>", re.IGNORECASE)
MAX_TEXT_CHARS = 6000
MAX_COMMENTS = 30
TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    undefined=StrictUndefined,
    keep_trailing_newline=True,
)


def sanitize(text: str | None, limit: int = MAX_TEXT_CHARS) -> str:
    """Untrusted text without what a reader cannot see but a model can: HTML comments,
    zero-width and bidi controls, Unicode tag characters and other format or control codes."""
    text = _FENCE.sub("[fence]", _HTML_COMMENT.sub("", text or ""))
    kept = "".join(
        ch
        for ch in text
        if ch in "\n\t" or unicodedata.category(ch) not in {"Cf", "Cc", "Co", "Cn"}
    )
    kept = kept.strip()
    return kept if len(kept) <= limit else kept[:limit] + "\n[... cut ...]"


@dataclass(frozen=True)
class ReviewTarget:
    """The line of a pull request's diff a review comment is attached to."""

    path: str
    line: int | None
    diff_hunk: str


@dataclass(frozen=True)
class TaskContext:
    """Everything the task prompt shows, already sanitized."""

    repository: str
    number: int | None
    """None for a task on the default branch."""
    is_pull_request: bool
    title: str
    body: str
    request: str
    requester: str
    comments: list[tuple[str, str]] = field(default_factory=list)
    review: ReviewTarget | None = None

    def render(self) -> str:
        return TEMPLATES.get_template("task.md.j2").render(task=self)


def gather(github: GitHubRepo, spec: JobSpec, bot_login: str) -> TaskContext:
    """Read the issue or pull request, its comments and the triggering text from GitHub."""
    issue = github.issue(spec.number)
    comments = [
        (c["user"]["login"], sanitize(c.get("body")))
        for c in github.issue_comments(spec.number)
        if c["user"]["login"] != bot_login and c.get("id") != spec.comment_id
    ][-MAX_COMMENTS:]
    review = None
    if spec.trigger == Trigger.REVIEW_COMMENT and spec.comment_id:
        review = _review_target(github.review_comment(spec.comment_id))
    return TaskContext(
        repository=spec.repository,
        number=spec.number,
        is_pull_request=spec.is_pull_request,
        title=sanitize(issue.get("title"), 300),
        body=sanitize(issue.get("body")),
        request=sanitize(spec.instruction),
        requester=spec.requester,
        comments=comments,
        review=review,
    )


def task_only(spec: JobSpec) -> TaskContext:
    """A task on the default branch (Slack or a schedule): the request is all there is."""
    request = sanitize(spec.instruction)
    title = request.splitlines()[0][:72] if request else "Task"
    return TaskContext(spec.repository, None, False, title, "", request, spec.requester)


def _review_target(comment: Json) -> ReviewTarget:
    return ReviewTarget(
        path=sanitize(comment.get("path"), 500),
        line=comment.get("line") or comment.get("original_line"),
        diff_hunk=sanitize(comment.get("diff_hunk")),
    )
