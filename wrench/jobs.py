"""The job spec: what the web tier hands the worker through the queue, as plain JSON."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Trigger(StrEnum):
    """How a job was asked for."""

    LABEL = "label"
    COMMENT = "comment"
    REVIEW_COMMENT = "review_comment"
    REVIEW = "review"
    SLACK = "slack"
    SCHEDULE = "schedule"


class SlackReply(BaseModel):
    """Where a Slack command's progress and result go, and who asked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    response_url: str
    """Slack's URL for up to five replies within 30 minutes."""
    user_id: str
    """The Slack user who typed the command."""
    channel_id: str
    """The channel it was typed in."""


class JobSpec(BaseModel):
    """Everything a worker needs to start a job; the rest it asks GitHub for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repository: str
    """`owner/name` of the repository to work on."""
    installation_id: int | None
    """The App installation that grants access; None when the worker must look it up."""
    number: int | None
    """The issue or pull request number; None for a task on the default branch."""
    is_pull_request: bool
    """Whether `number` is a pull request, as far as the trigger knows."""
    trigger: Trigger
    """What asked for the job."""
    instruction: str
    """The text that asked: the comment or review body, or the issue title for a label."""
    requester: str
    """Who asked: a GitHub login, or a Slack user id for Slack commands."""
    delivery_id: str
    """The delivery (GitHub) or request (Slack) that caused the job, for logs and de-duplication."""
    comment_id: int | None = None
    """The triggering comment or review, to react to and to read its context."""
    slack: SlackReply | None = None
    """For Slack commands: where to report."""
    schedule: str | None = None
    """For scheduled runs: the schedule's name."""

    def describe(self) -> str:
        """`owner/repo#12 (comment) by login`, for job lists and logs."""
        target = f"#{self.number}" if self.number else " (task)"
        return f"{self.repository}{target} ({self.trigger}) by {self.requester}"
