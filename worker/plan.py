"""Deciding where a job works: which branch to clone, which to push, whether it may push."""

from __future__ import annotations

from dataclasses import dataclass

from worker.github import GitHubRepo, Json
from wrench.jobs import JobSpec


@dataclass(frozen=True)
class Plan:
    """The branches of one job."""

    clone_branch: str
    """What to clone: the branch the work continues from."""
    fetch_ref: str | None
    """A ref to fetch and check out after cloning (a fork's pull request), if any."""
    branch: str
    """Where finished work is pushed."""
    base: str
    """What a new pull request merges into."""
    is_pull_request: bool
    push_allowed: bool


def plan(github: GitHubRepo, spec: JobSpec, repository: Json, job_id: str) -> Plan:
    """Branches for an issue (`wrench/issue-<n>`), a pull request (its own branch), or a task
    on the default branch (`wrench/schedule-<name>` or `wrench/task-<job>`)."""
    default = repository["default_branch"]
    if spec.number is None:
        name = f"schedule-{spec.schedule}" if spec.schedule else f"task-{job_id[:8]}"
        return _continuing(github, f"wrench/{name}", default)
    issue = github.issue(spec.number)
    if "pull_request" not in issue:
        return _continuing(github, f"wrench/issue-{spec.number}", default)
    pull = github.pull(spec.number)
    head, base = pull["head"], pull["base"]["ref"]
    if (head.get("repo") or {}).get("full_name") != spec.repository:
        # Wrench cannot push to a fork: work on the PR's head as GitHub mirrors it here.
        return Plan(base, f"refs/pull/{spec.number}/head", head["ref"], base, True, False)
    return Plan(head["ref"], None, head["ref"], base, True, True)


def _continuing(github: GitHubRepo, branch: str, default: str) -> Plan:
    """A Wrench branch: continue it when an earlier run left it, else start from default."""
    clone = branch if github.branch_exists(branch) else default
    return Plan(clone, None, branch, default, False, True)
