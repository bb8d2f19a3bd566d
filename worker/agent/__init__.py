"""The agent loop: a model calling tools in a sandbox until the task is done or a limit is hit."""

from worker.agent.agent import Agent
from worker.agent.config import AgentConfig
from worker.agent.controller import AgentController
from worker.agent.events import (
    Action,
    Event,
    EventStream,
    ModelReply,
    Observation,
    Progress,
    RunEnded,
    RunResult,
    StopReason,
    TrajectoryWriter,
)
from worker.agent.llm import LLM, LiteLLMModel, LLMConfig, ModelError

__all__ = [
    "LLM",
    "Action",
    "Agent",
    "AgentConfig",
    "AgentController",
    "Event",
    "EventStream",
    "LLMConfig",
    "LiteLLMModel",
    "ModelError",
    "ModelReply",
    "Observation",
    "Progress",
    "RunEnded",
    "RunResult",
    "StopReason",
    "TrajectoryWriter",
]
