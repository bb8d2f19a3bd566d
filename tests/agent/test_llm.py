"""LiteLLMModel: the real litellm client over HTTP against the fake server, failures included."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.agent.conftest import FAKE_KEY, litellm_model
from tests.fakes.openai_server import count_tokens, error, slow, text, tool_call
from worker.agent.llm import DeadlineReached, LLMConfig, Message, ModelError, import_litellm
from worker.agent.tools import TOOLS
from wrench.settings import Settings

CONVERSATION = [Message("system", "You are a test."), Message("user", "List the files.")]


def test_a_tool_call_comes_back_typed_with_its_usage_and_the_configured_price(fake_openai):
    fake_openai.add(tool_call("bash", {"command": "ls -la"}))
    model = litellm_model(fake_openai, input_usd_per_mtok=2.0, output_usd_per_mtok=10.0)

    reply = model.complete(CONVERSATION, TOOLS)

    (call,) = reply.message.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("bash", {"command": "ls -la"})
    body = fake_openai.bodies()[0]
    assert reply.prompt_tokens == count_tokens(body["messages"]) + count_tokens(body["tools"])
    assert reply.completion_tokens > 0
    expected = (reply.prompt_tokens * 2.0 + reply.completion_tokens * 10.0) / 1e6
    assert reply.cost_usd == pytest.approx(expected)
    assert reply.model == "openai/fake-model"
    assert 0 < reply.duration_s < 5


def test_a_model_litellm_knows_is_priced_by_litellm(fake_openai):
    fake_openai.add(text("hello"))
    model = litellm_model(fake_openai, model="openai/gpt-4o-mini", input_usd_per_mtok=1000.0)

    reply = model.complete(CONVERSATION, [])

    price = import_litellm().model_cost["gpt-4o-mini"]
    expected = (
        reply.prompt_tokens * price["input_cost_per_token"]
        + reply.completion_tokens * price["output_cost_per_token"]
    )
    assert reply.cost_usd == pytest.approx(expected)
    assert reply.message.content == "hello" and not reply.message.tool_calls


def test_the_request_carries_the_conversation_and_tools_and_the_key_only_in_its_header(fake_openai):
    fake_openai.add(text("ok"))

    litellm_model(fake_openai).complete(CONVERSATION, TOOLS)

    (request,) = fake_openai.requests
    assert request.body["model"] == "fake-model"
    assert request.body["messages"] == [m.to_openai() for m in CONVERSATION]
    names = [tool["function"]["name"] for tool in request.body["tools"]]
    assert names == ["bash", "str_replace_editor", "finish"]
    assert request.headers["Authorization"] == f"Bearer {FAKE_KEY}"
    assert FAKE_KEY not in json.dumps(request.body)


def test_a_429_is_retried_after_the_servers_retry_after(fake_openai):
    fake_openai.add(error(429, retry_after=0.4), tool_call("finish", {"message": "done"}))

    reply = litellm_model(fake_openai, max_backoff_s=5).complete(CONVERSATION, TOOLS)

    assert reply.message.tool_calls[0].name == "finish"
    first, second = fake_openai.requests
    assert second.at - first.at >= 0.4


def test_retry_after_is_capped_by_max_backoff(fake_openai):
    fake_openai.add(error(429, retry_after=30), text("ok"))
    start = time.monotonic()

    litellm_model(fake_openai, max_backoff_s=0.2).complete(CONVERSATION, [])

    assert time.monotonic() - start < 5
    assert len(fake_openai.requests) == 2


def test_5xx_errors_exhausting_the_retries_raise_a_model_error_saying_so(fake_openai):
    fake_openai.add(error(500), error(502), error(503), text("too late"))

    with pytest.raises(ModelError, match=r"after 2 retries") as raised:
        litellm_model(fake_openai, max_retries=2).complete(CONVERSATION, [])

    assert "openai/fake-model" in str(raised.value)
    assert len(fake_openai.requests) == 3  # no hidden retries inside litellm or the SDK


def test_an_error_retrying_cannot_fix_is_not_retried(fake_openai):
    fake_openai.add(error(400, message="bad request"), text("never asked for"))

    with pytest.raises(ModelError, match="BadRequestError"):
        litellm_model(fake_openai, max_retries=3).complete(CONVERSATION, [])

    assert len(fake_openai.requests) == 1


def test_a_reply_slower_than_the_timeout_is_abandoned_and_retried(fake_openai):
    fake_openai.add(slow(text("slow"), 3.0), text("quick"))
    start = time.monotonic()

    reply = litellm_model(fake_openai, timeout_s=0.5).complete(CONVERSATION, [])

    assert reply.message.content == "quick"
    assert time.monotonic() - start < 2.5
    assert len(fake_openai.requests) == 2


def test_the_fallback_is_not_tried_once_the_deadline_has_passed(fake_openai):
    fake_openai.add(slow(text("slow"), 3.0), text("from the fallback"))
    model = litellm_model(fake_openai, max_retries=0, fallback_model="openai/backup-model")

    with pytest.raises(DeadlineReached):
        model.complete(CONVERSATION, [], deadline=time.monotonic() + 0.5)

    assert [b["model"] for b in fake_openai.bodies()] == ["fake-model"]


def test_the_fallback_model_answers_when_the_main_one_keeps_failing(fake_openai):
    fake_openai.add(error(500), error(500), text("from the fallback"))
    model = litellm_model(fake_openai, max_retries=1, fallback_model="openai/backup-model")

    reply = model.complete(CONVERSATION, [])

    assert reply.message.content == "from the fallback"
    assert reply.model == "openai/backup-model"
    assert [b["model"] for b in fake_openai.bodies()] == ["fake-model"] * 2 + ["backup-model"]


def test_both_failures_are_reported_when_the_fallback_fails_too(fake_openai):
    fake_openai.add(error(500), error(401, message="no such key"))
    model = litellm_model(fake_openai, max_retries=0, fallback_model="openai/backup-model")

    with pytest.raises(ModelError) as raised:
        model.complete(CONVERSATION, [])

    message = str(raised.value)
    assert "openai/fake-model: InternalServerError" in message
    assert "openai/backup-model: AuthenticationError" in message


def test_a_call_never_outlives_the_deadline(fake_openai):
    fake_openai.add(slow(text("slow"), 3.0), slow(text("slow"), 3.0))
    start = time.monotonic()

    with pytest.raises(DeadlineReached):
        litellm_model(fake_openai, timeout_s=30).complete(CONVERSATION, [], deadline=start + 0.6)

    assert time.monotonic() - start < 1.0


def test_a_call_cut_short_by_the_deadline_is_reported_as_the_deadline_even_without_retries(
    fake_openai,
):
    fake_openai.add(slow(text("slow"), 3.0))

    with pytest.raises(DeadlineReached, match="Timeout"):
        litellm_model(fake_openai, max_retries=0).complete(
            CONVERSATION, [], deadline=time.monotonic() + 0.5
        )


def test_no_call_is_made_once_the_deadline_has_passed(fake_openai):
    with pytest.raises(DeadlineReached, match="no time left"):
        litellm_model(fake_openai).complete(CONVERSATION, [], deadline=time.monotonic() - 1)

    assert fake_openai.requests == []


def test_the_config_comes_from_the_operators_settings():
    settings = Settings(
        _env_file=None,
        LLM_MODEL="openai/some-model",
        LLM_API_KEY="sk-settings-key-0123456789",
        LLM_BASE_URL="http://127.0.0.1:1/v1",
        LLM_FALLBACK_MODEL="openai/other-model",
        LLM_TIMEOUT_S=12,
        LLM_INPUT_USD_PER_MTOK=0,
    )

    config = LLMConfig.from_settings(settings, max_retries=1)

    assert config.model == "openai/some-model"
    assert config.api_key and config.api_key.get_secret_value() == "sk-settings-key-0123456789"
    assert (config.base_url, config.fallback_model) == (
        "http://127.0.0.1:1/v1",
        "openai/other-model",
    )
    assert (config.timeout_s, config.input_usd_per_mtok, config.max_retries) == (12, 0, 1)
    with pytest.raises(ValueError, match="LLM_MODEL"):
        LLMConfig.from_settings(Settings(_env_file=None))


def test_importing_the_agent_package_does_not_import_litellm_or_docker():
    code = "import sys, worker.agent; print(sorted({'litellm', 'docker'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_fake_server_also_answers_without_the_v1_prefix(fake_openai):
    fake_openai.add(text("ok"))
    bare = fake_openai.url.removesuffix("/v1")

    reply = litellm_model(fake_openai, base_url=bare).complete(CONVERSATION, [])

    assert reply.message.content == "ok"
    assert [r.path for r in fake_openai.requests] == ["/chat/completions"]
