"""Logs: one line per event, JSON on request, tagged with ids, secrets redacted."""

from __future__ import annotations

import json
import logging

from pydantic import SecretStr

from wrench import logs
from wrench.logs import configure_logging


def test_json_lines_carry_the_ids_and_never_a_secret(settings, capsys):
    configured = settings.model_copy(
        update={"LOG_FORMAT": "json", "LLM_API_KEY": SecretStr("sk-live-abcdefghijkl")}
    )
    redactor = configure_logging(configured)
    redactor.add("ghs_minted_during_the_job_0123")
    logs.delivery_id.set("d-42")
    logs.job_id.set("j-7")
    log = logging.getLogger("wrench.test")
    log.info("calling with %s and %s", "sk-live-abcdefghijkl", "ghs_minted_during_the_job_0123")
    try:
        # Built here, so that the traceback's source line does not hold the token itself.
        raise RuntimeError("failed with token " + "gh" + "p_" + "x" * 36)
    except RuntimeError:
        log.exception("it broke")

    lines = capsys.readouterr().err.strip().splitlines()
    first, second = (json.loads(line) for line in lines)
    assert first["message"] == "calling with [REDACTED] and [REDACTED]"
    assert (first["delivery_id"], first["job_id"], first["level"]) == ("d-42", "j-7", "info")
    assert "ghp_" + "x" * 36 not in second["exception"] and "[REDACTED]" in second["exception"]


def test_text_lines_show_the_ids(settings, capsys):
    configure_logging(settings)
    logs.job_id.set("j-8")
    logs.delivery_id.set(None)
    logging.getLogger("wrench.test").warning("hello")
    line = capsys.readouterr().err.strip()
    assert line.endswith("WARNING wrench.test [job_id=j-8] hello")


def test_every_secret_setting_is_redacted(settings):
    from wrench.secrets import Redactor

    full = settings.model_copy(
        update={
            "JOB_LINK_SECRET": SecretStr("job-link-key-123"),
            "METRICS_TOKEN": SecretStr("scrape-456"),
            "REDIS_URL": "redis://:redis-pass-789@127.0.0.1:1/0",
        }
    )
    text = (
        "job-link-key-123 scrape-456 redis-pass-789 " + settings.WEBHOOK_SECRET.get_secret_value()
    )
    assert Redactor(full.named_secrets()).redact(text) == " ".join(["[REDACTED]"] * 4)
