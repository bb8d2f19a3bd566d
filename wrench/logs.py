"""Logging: one line per event, text or JSON, tagged with delivery and job ids, secrets redacted."""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time

from wrench.secrets import Redactor
from wrench.settings import Settings

delivery_id = contextvars.ContextVar[str | None]("delivery_id", default=None)
job_id = contextvars.ContextVar[str | None]("job_id", default=None)


class RedactingFilter(logging.Filter):
    """Renders each record's message once, redacted, and attaches the current ids."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redactor.redact(record.exc_text)
        record.msg, record.args = self.redactor.redact(message), None
        record.delivery_id = delivery_id.get()
        record.job_id = job_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line, for log collectors."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "delivery_id": getattr(record, "delivery_id", None),
            "job_id": getattr(record, "job_id", None),
        }
        if record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps({k: v for k, v in entry.items() if v is not None})


class TextFormatter(logging.Formatter):
    """`time level logger [ids] message` for people."""

    def format(self, record: logging.LogRecord) -> str:
        ids = " ".join(
            f"{name}={value}"
            for name in ("delivery_id", "job_id")
            if (value := getattr(record, name, None))
        )
        record.ids = f" [{ids}]" if ids else ""
        return super().format(record)


def configure_logging(settings: Settings, level: int = logging.INFO) -> Redactor:
    """Send all logs to stderr through the redacting filter; returns the redactor in use."""
    redactor = Redactor(settings.named_secrets())
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactingFilter(redactor))
    if settings.LOG_FORMAT == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s%(ids)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # These libraries log every HTTP call at INFO: ours say what matters.
    for chatty in ("LiteLLM", "httpx", "docker"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    return redactor
