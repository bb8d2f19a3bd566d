"""Publishing from the host: a pull request, a commit on one, or an answer; never a secret.

The agent's changes arrive as a checked `ChangeSet` (the sandbox is gone by then); they become a
commit on the host's own clone, after the secret scan has read every blob that will be pushed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.boundary import Change, ChangeSet
from worker.git import Checkout, Identity
from worker.github import GitHubRepo
from worker.publish.scan import scan
from wrench.secrets import Redactor

MAX_DIFF_IN_COMMENT = 30_000
MAX_LEFT_OUT_LISTED = 20


class PublishRefused(RuntimeError):
    """What would be published holds a secret; the message says where and what kind."""


@dataclass(frozen=True)
class Work:
    """What the agent left behind, in the terms publishing needs."""

    finished: bool
    """Whether the agent called `finish` (rather than hitting a limit or failing)."""
    message: str
    """The agent's final message, or why it stopped."""
    summary: str
    """One line of figures: steps, cost, time."""


@dataclass(frozen=True)
class Target:
    """Where the work goes."""

    number: int | None
    """The issue or pull request; None for a task on the default branch."""
    title: str
    is_pull_request: bool
    branch: str
    base: str
    push_allowed: bool
    draft: bool

    @property
    def subject(self) -> str:
        """How the commit and the pull request's title start."""
        if self.number is None:
            return self.title
        verb = "Address" if self.is_pull_request else "Fix"
        return f"{verb} #{self.number}: {self.title}"


@dataclass(frozen=True)
class Outcome:
    """The final report, the pull request's URL when there is one, and a word for metrics."""

    comment: str
    url: str | None = None
    kind: str = "answer"


def publish(  # noqa: PLR0913
    checkout: Checkout,
    github: GitHubRepo,
    target: Target,
    work: Work,
    changes: ChangeSet,
    identity: Identity,
    redactor: Redactor,
) -> Outcome:
    """Turn the agent's changes into a pull request, a commit, or an answer."""
    work = Work(work.finished, work.message + _left_out(changes), work.summary)
    effective = checkout.effective(changes.changes)
    if not effective:
        if work.finished:
            return Outcome(work.message)
        return Outcome(STOPPED.format(reason=work.message), kind="stopped")
    message = _commit_message(target, work)
    _refuse_secrets(redactor, effective, message, work.message)
    commit = checkout.commit(effective, message, identity)
    if not target.push_allowed:
        diff = checkout.diff(checkout.base, commit)
        return Outcome(_with_diff(work.message, diff), kind="diff")
    if not work.finished:
        branch = _incomplete_branch(github, target)
        checkout.push(commit, branch)
        return Outcome(INCOMPLETE.format(reason=work.message, branch=branch), kind="incomplete")
    checkout.push(commit, target.branch)
    if target.is_pull_request:
        return Outcome(PUSHED.format(sha=commit[:7], message=work.message), kind="pushed")
    return _open_or_update_pull(github, target, work)


def _left_out(changes: ChangeSet) -> str:
    """A note on the paths that were refused at the sandbox boundary, if any."""
    refused = changes.refused
    if not refused:
        return ""
    lines = [f"- `{shown(path)}`: {why}" for path, why in refused[:MAX_LEFT_OUT_LISTED]]
    if len(refused) > MAX_LEFT_OUT_LISTED:
        lines.append(f"- and {len(refused) - MAX_LEFT_OUT_LISTED} more")
    return LEFT_OUT.format(paths="\n".join(lines))


def shown(path: str) -> str:
    """A path the sandbox named, safe inside Markdown code: no backtick, no control character
    (a newline could start a line that mentions people), at most 200 characters."""
    clean = "".join("?" if ch == "`" or not ch.isprintable() else ch for ch in path)
    return clean if len(clean) <= 200 else clean[:199] + "…"


def _incomplete_branch(github: GitHubRepo, target: Target) -> str:
    """Where unfinished work goes: never onto a branch an open pull request shows."""
    if target.is_pull_request:
        return f"wrench/pr-{target.number}"
    if github.open_pull_for(target.branch):
        return f"{target.branch}-incomplete"
    return target.branch


def _open_or_update_pull(github: GitHubRepo, target: Target, work: Work) -> Outcome:
    fixes = f"Fixes #{target.number}\n\n" if target.number else ""
    body = PULL_BODY.format(fixes=fixes, message=work.message, summary=work.summary)
    existing = github.open_pull_for(target.branch)
    if existing:
        github.update_pull(existing["number"], body)
        number, url = existing["number"], existing["html_url"]
        return Outcome(UPDATED.format(number=number, url=url), url, kind="updated")
    pull = github.create_pull(target.subject[:250], target.branch, target.base, body, target.draft)
    kind = "a draft pull request" if target.draft else "a pull request"
    text = OPENED.format(number=pull["number"], kind=kind, url=pull["html_url"])
    return Outcome(text, pull["html_url"], kind="pull_request")


def _commit_message(target: Target, work: Work) -> str:
    status = "" if work.finished else " (incomplete)"
    return f"{target.subject}{status}"[:72] + "\n\nMade by Wrench."


def _refuse_secrets(redactor: Redactor, changes: list[Change], *texts: str) -> None:
    """Refuse when any blob to be pushed, or any text to be posted, holds a secret."""
    blobs = [(f"`{shown(c.path)}`", c.content) for c in changes if c.content is not None]
    blobs += [("the message", text.encode()) for text in texts]
    if found := scan(redactor, blobs):
        raise PublishRefused("; ".join(str(finding) for finding in found))


def _with_diff(message: str, diff: str) -> str:
    if len(diff) > MAX_DIFF_IN_COMMENT:
        diff = diff[:MAX_DIFF_IN_COMMENT] + "\n[... diff cut ...]"
    return FORK.format(message=message, diff=diff)


PULL_BODY = "{fixes}{message}\n\n---\n<sub>{summary}</sub>"
OPENED = "opened #{number}, {kind} with the change: {url}"
UPDATED = "updated #{number} with the new changes: {url}"
STOPPED = "stopped before finishing: {reason}. Nothing was changed."
PUSHED = "pushed {sha} to this pull request.\n\n{message}"
INCOMPLETE = (
    "stopped before finishing: {reason}\n\nThe work so far is on branch `{branch}`; it is "
    "incomplete, so no pull request was opened."
)
LEFT_OUT = (
    "\n\nWrench left these paths out, as the sandbox boundary refuses them:\n{paths}"
)
FORK = (
    "{message}\n\nThis pull request comes from a fork, which Wrench cannot push to. "
    "Here is the change to apply:\n\n<details><summary>diff</summary>\n\n```diff\n{diff}\n```\n"
    "</details>"
)
