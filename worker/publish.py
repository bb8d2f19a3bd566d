"""Publishing from the host: a pull request, a commit on one, or an answer; never a secret."""

from __future__ import annotations

from dataclasses import dataclass

from worker.git import Checkout, Identity
from worker.github import GitHubRepo
from wrench.secrets import Redactor

MAX_DIFF_IN_COMMENT = 30_000


class PublishRefused(RuntimeError):
    """What would be published holds something that looks like a secret."""


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
    identity: Identity,
    redactor: Redactor,
) -> Outcome:
    """Turn the work tree's changes into a pull request, a commit, or an answer."""
    checkout.forget_nested_repositories()
    if not checkout.changed_files():
        if work.finished:
            return Outcome(work.message)
        return Outcome(STOPPED.format(reason=work.message), kind="stopped")
    base = checkout.head()
    checkout.commit_all(_commit_message(target, work), identity)
    diff = checkout.diff(base)
    _refuse_secrets(redactor, diff, work.message)
    if not target.push_allowed:
        return Outcome(_with_diff(work.message, diff), kind="diff")
    if not work.finished:
        branch = _incomplete_branch(github, target)
        checkout.push(branch)
        return Outcome(INCOMPLETE.format(reason=work.message, branch=branch), kind="incomplete")
    checkout.push(target.branch)
    if target.is_pull_request:
        sha = checkout.head()[:7]
        return Outcome(PUSHED.format(sha=sha, message=work.message), kind="pushed")
    return _open_or_update_pull(github, target, work)


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


def _refuse_secrets(redactor: Redactor, *texts: str) -> None:
    for text in texts:
        if found := redactor.find(text):
            raise PublishRefused(f"the changes contain {found[0]}")


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
FORK = (
    "{message}\n\nThis pull request comes from a fork, which Wrench cannot push to. "
    "Here is the change to apply:\n\n<details><summary>diff</summary>\n\n```diff\n{diff}\n```\n"
    "</details>"
)
