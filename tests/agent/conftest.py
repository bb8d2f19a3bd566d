"""Fixtures for the agent tests: the fake OpenAI server and real litellm pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAI
from worker.agent.llm import LiteLLMModel, LLMConfig

FAKE_KEY = "sk-fake-test-key-0123456789abcdef"


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server; tests add replies with `fake_openai.add(...)`."""
    with FakeOpenAI() as server:
        yield server


def litellm_model(
    server: FakeOpenAI, model: str = "openai/fake-model", **config: Any
) -> LiteLLMModel:
    """The real litellm client talking HTTP to the fake server, with quick retries."""
    values: dict[str, Any] = {
        "model": model,
        "api_key": FAKE_KEY,
        "base_url": server.url,
        "backoff_s": 0.01,
        "timeout_s": 10,
    }
    return LiteLLMModel(LLMConfig(**(values | config)))
