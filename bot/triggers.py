"""Which deliveries ask for work: the trigger label, or an @mention by someone with write access."""

from __future__ import annotations

from typing import Any

from bot.mentions import mentions
from bot.router import Decision, Delivery, Ignore, Router, TriggerConfig
from wrench.jobs import JobSpec, Trigger

router = Router()

# author_association values that can mean write access; the worker makes the real check.
WRITE_ASSOCIATIONS = {"OWNER", "MEMBER", "COLLABORATOR"}


class MalformedPayload(ValueError):
    """The payload lacks a field its event always carries."""


def field(payload: dict[str, Any], *path: str) -> Any:
    """`payload[path[0]][path[1]]...`, or MalformedPayload naming the missing field."""
    value: Any = payload
    for key in path:
        if not isinstance(value, dict) or key not in value:
            raise MalformedPayload(f"missing field {'.'.join(path)}")
        value = value[key]
    return value


def _refusal(delivery: Delivery, config: TriggerConfig) -> Ignore | None:
    """Why a delivery cannot start a job whatever its content, if it cannot."""
    sender = field(delivery.payload, "sender")
    if sender.get("type") == "Bot" or sender.get("login") == config.bot_login:
        return Ignore("sent by a bot")
    if not (delivery.payload.get("installation") or {}).get("id"):
        return Ignore("no installation in the payload: not a GitHub App delivery")
    return None


def _spec(delivery: Delivery, number: int, is_pr: bool, trigger: Trigger, **rest: Any) -> JobSpec:
    return JobSpec(
        repository=field(delivery.payload, "repository", "full_name"),
        installation_id=field(delivery.payload, "installation", "id"),
        number=number,
        is_pull_request=is_pr,
        trigger=trigger,
        requester=field(delivery.payload, "sender", "login"),
        delivery_id=delivery.id,
        **rest,
    )


def _labeled(delivery: Delivery, config: TriggerConfig, item: dict[str, Any], is_pr: bool):
    label = field(delivery.payload, "label", "name")
    if label.casefold() != config.trigger_label.casefold():
        return Ignore(f"label {label!r} is not the trigger label")
    return _refusal(delivery, config) or _spec(
        delivery, item["number"], is_pr, Trigger.LABEL, instruction=item.get("title") or ""
    )


def _mentioned(delivery: Delivery, config: TriggerConfig, text: dict[str, Any]) -> Ignore | None:
    """Why a comment or review does not ask the bot for work, if it does not."""
    if (refusal := _refusal(delivery, config)) is not None:
        return refusal
    if not mentions(text.get("body"), config.bot_name):
        return Ignore(f"does not mention @{config.bot_name}")
    if text.get("author_association") not in WRITE_ASSOCIATIONS:
        return Ignore(f"author association {text.get('author_association')} has no write access")
    return None


@router.register("issues", action="labeled")
def on_issue_labeled(delivery: Delivery, config: TriggerConfig) -> Decision:
    issue = field(delivery.payload, "issue")
    return _labeled(delivery, config, issue, "pull_request" in issue)


@router.register("pull_request", action="labeled")
def on_pull_request_labeled(delivery: Delivery, config: TriggerConfig) -> Decision:
    return _labeled(delivery, config, field(delivery.payload, "pull_request"), True)


@router.register("issue_comment", action="created")
def on_issue_comment_created(delivery: Delivery, config: TriggerConfig) -> Decision:
    comment, issue = field(delivery.payload, "comment"), field(delivery.payload, "issue")
    return _mentioned(delivery, config, comment) or _spec(
        delivery,
        issue["number"],
        "pull_request" in issue,
        Trigger.COMMENT,
        instruction=comment["body"],
        comment_id=comment["id"],
    )


def _on_pull_request_text(
    delivery: Delivery, config: TriggerConfig, key: str, trigger: Trigger
) -> Decision:
    """A review comment or a review: `key` names it in the payload."""
    text = field(delivery.payload, key)
    number = field(delivery.payload, "pull_request", "number")
    return _mentioned(delivery, config, text) or _spec(
        delivery, number, True, trigger, instruction=text["body"], comment_id=text["id"]
    )


@router.register("pull_request_review_comment", action="created")
def on_review_comment_created(delivery: Delivery, config: TriggerConfig) -> Decision:
    return _on_pull_request_text(delivery, config, "comment", Trigger.REVIEW_COMMENT)


@router.register("pull_request_review", action="submitted")
def on_review_submitted(delivery: Delivery, config: TriggerConfig) -> Decision:
    return _on_pull_request_text(delivery, config, "review", Trigger.REVIEW)
