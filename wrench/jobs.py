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


class JobSpec(BaseModel):
    """Everything a worker needs to start a job; the rest it asks GitHub for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repository: str
    """`owner/name` of the repository to work on."""
    installation_id: int
    """The App installation that grants access to the repository."""
    number: int
    """The issue or pull request number."""
    is_pull_request: bool
    """Whether `number` is a pull request."""
    trigger: Trigger
    """What asked for the job."""
    instruction: str
    """The text that asked: the comment or review body, or the issue title for a label."""
    requester: str
    """Login of the person who asked; the worker checks their permission."""
    delivery_id: str
    """The GitHub delivery that caused the job, for logs and de-duplication."""
    comment_id: int | None = None
    """The triggering comment or review, to react to and to read its context."""

    def describe(self) -> str:
        """`owner/repo#12 (comment) by login`, for job lists and logs."""
        return f"{self.repository}#{self.number} ({self.trigger}) by {self.requester}"
