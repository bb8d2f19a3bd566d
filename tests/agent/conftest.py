"""Fixtures for the agent tests: real sandboxes, the fake OpenAI server, and a run helper."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sandbox.base import Sandbox
from sandbox.docker_sandbox import DockerSandbox
from sandbox.local import LocalSandbox
from tests.fakes.openai_server import FakeOpenAI
from worker.agent import (
    Agent,
    AgentConfig,
    AgentController,
    Event,
    EventStream,
    RunResult,
    TrajectoryWriter,
)
from worker.agent.events import Subscriber
from worker.agent.llm import LLM, LiteLLMModel, LLMConfig
from wrench.secrets import Redactor

FAKE_KEY = "sk-fake-test-key-0123456789abcdef"
E = TypeVar("E", bound=Event)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[LocalSandbox]:
    """A real local shell over an empty workspace directory (LocalSandbox isolates nothing)."""
    box = LocalSandbox(tmp_path / "workspace")
    yield box
    box.close()


@pytest.fixture(params=["local", "docker"])
def any_sandbox(request: pytest.FixtureRequest) -> LocalSandbox | DockerSandbox:
    """Each sandbox implementation in turn, with an empty workspace and the shell inside it."""
    if request.param == "local":
        return request.getfixturevalue("sandbox")
    box = request.getfixturevalue("docker_sandbox")
    reset = box.run(f"cd {box.workspace} && rm -rf -- ./* ./.[!.]*", timeout=30)
    assert reset.exit_code == 0, reset.output
    return box


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


@dataclass
class Run:
    """What a test run left behind."""

    result: RunResult
    events: list[Event]
    trajectory: Path

    def of(self, kind: type[E]) -> list[E]:
        return [event for event in self.events if isinstance(event, kind)]


def run_agent(
    llm: LLM,
    sandbox: Sandbox,
    trajectory: Path,
    task: str = "Fix the bug.",
    *,
    redactor: Redactor | None = None,
    cancelled: Callable[[], bool] | None = None,
    subscribers: Sequence[Subscriber] = (),
    **config: Any,
) -> Run:
    """Run the agent as the worker will: a trajectory file, subscribers, a redactor."""
    redactor = redactor or Redactor()
    with TrajectoryWriter(trajectory, redactor) as writer:
        stream = EventStream([writer, *subscribers])
        agent = Agent(llm, AgentConfig(**config))
        result = AgentController(agent, sandbox, stream, redactor, cancelled).run(task)
    return Run(result, stream.events, trajectory)
