"""Scheduled maintenance: which schedule runs are due, each enqueued exactly once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import BaseModel, ConfigDict, Field, field_validator

# A scheduler that was down catches up on runs missed within this window, one run each.
CATCH_UP = timedelta(hours=24)


class Schedule(BaseModel):
    """One recurring task, as written under `schedules:` in `.github/wrench.yml`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,40}$")
    """A short name, unique in the repository; the branch is `wrench/schedule-<name>`."""
    cron: str
    """Five-field cron expression (minute hour day-of-month month day-of-week)."""
    timezone: str = "UTC"
    """IANA time zone the cron expression is read in, e.g. `Europe/Berlin`."""
    task: str = Field(min_length=1)
    """What the agent should do."""

    @field_validator("cron")
    @classmethod
    def _five_fields(cls, value: str) -> str:
        if len(value.split()) != 5 or not croniter.is_valid(value):
            raise ValueError(f"{value!r} is not a five-field cron expression")
        return value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not a known time zone") from None
        return value

    def latest_due(self, after: datetime, until: datetime) -> datetime | None:
        """The last time in (after, until] the schedule fires, in its own time zone."""
        zone = ZoneInfo(self.timezone)
        it = croniter(self.cron, after.astimezone(zone))
        latest = None
        while (due := it.get_next(datetime)) <= until:
            latest = due
        return latest

    def run_key(self, repository: str, due: datetime) -> str:
        """The idempotency key of one run: the local wall-clock time, so the hour repeated
        when clocks go back runs once, as in cron."""
        local = due.astimezone(ZoneInfo(self.timezone)).replace(tzinfo=None)
        return f"wrench:schedule-run:{repository}:{self.name}:{local.isoformat()}"


def utc_now() -> datetime:
    return datetime.now(UTC)
