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

    number: int
    title: str
    is_pull_request: bool
    branch: str
    base: str
    push_allowed: bool
    draft: bool


@dataclass(frozen=True)
class Outcome:
    """The final tracking comment, and the pull request's URL when there is one."""

    comment: str
    url: str | None = None


def publish(
    checkout: Checkout,
    github: GitHubRepo,
    target: Target,
    work: Work,
    identity: Identity,
    redactor: Redactor,
) -> Outcome:
    """Turn the work tree's changes into a pull request, a commit, or an answer."""
    if not checkout.changed_files():
        return Outcome(work.message)
    base = checkout.head()
    checkout.commit_all(_commit_message(target, work), identity)
    diff = checkout.diff(base)
    _refuse_secrets(redactor, diff, work.message)
    if not target.push_allowed:
        return Outcome(_with_diff(work.message, diff))
    if not work.finished:
        branch = target.branch if not target.is_pull_request else f"wrench/pr-{target.number}"
        checkout.push(branch)
        return Outcome(INCOMPLETE.format(reason=work.message, branch=branch))
    checkout.push(target.branch)
    if target.is_pull_request:
        return Outcome(PUSHED.format(sha=checkout.head()[:7], message=work.message))
    return _open_or_update_pull(github, target, work)


def _open_or_update_pull(github: GitHubRepo, target: Target, work: Work) -> Outcome:
    body = PULL_BODY.format(number=target.number, message=work.message, summary=work.summary)
    existing = github.open_pull_for(target.branch)
    if existing:
        github.update_pull(existing["number"], body)
        return Outcome(UPDATED.format(number=existing["number"]), existing["html_url"])
    title = f"Fix #{target.number}: {target.title}"[:250]
    pull = github.create_pull(title, target.branch, target.base, body, target.draft)
    kind = "a draft pull request" if target.draft else "a pull request"
    return Outcome(OPENED.format(number=pull["number"], kind=kind), pull["html_url"])


def _commit_message(target: Target, work: Work) -> str:
    kind = "pull request" if target.is_pull_request else "issue"
    subject = f"Address #{target.number}" if target.is_pull_request else f"Fix #{target.number}"
    status = "" if work.finished else " (incomplete)"
    return (
        f"{subject}: {target.title}{status}"[:72]
        + f"\n\nWork by Wrench on {kind} #{target.number}."
    )


def _refuse_secrets(redactor: Redactor, *texts: str) -> None:
    for text in texts:
        if found := redactor.find(text):
            raise PublishRefused(f"the changes contain {found[0]}")


def _with_diff(message: str, diff: str) -> str:
    if len(diff) > MAX_DIFF_IN_COMMENT:
        diff = diff[:MAX_DIFF_IN_COMMENT] + "\n[... diff cut ...]"
    return FORK.format(message=message, diff=diff)


PULL_BODY = "Fixes #{number}\n\n{message}\n\n---\n<sub>{summary}</sub>"
OPENED = "opened #{number}, {kind} with the change."
UPDATED = "updated #{number} with the new changes."
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
