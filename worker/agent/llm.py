"""The model seam: typed chat messages, the `LLM` protocol, and `LiteLLMModel` for litellm."""

from __future__ import annotations

import importlib
import logging
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SecretStr

if TYPE_CHECKING:
    from wrench.settings import Settings

log = logging.getLogger(__name__)

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """A function call as the model wrote it."""

    id: str
    name: str
    arguments: str
    """The raw JSON text of the arguments, possibly malformed: checking it is the tools' job."""


@dataclass(frozen=True)
class Message:
    """One chat message in OpenAI's shape, typed."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    """For a `tool` message: the call it answers."""

    def to_openai(self) -> dict[str, Any]:
        """The message as the OpenAI chat API (and so litellm) takes it."""
        if self.role == "tool":
            return {"role": "tool", "tool_call_id": self.tool_call_id, "content": self.content}
        if not self.tool_calls:
            return {"role": self.role, "content": self.content}
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in self.tool_calls
        ]
        return {"role": self.role, "content": self.content or None, "tool_calls": calls}


@dataclass(frozen=True)
class Reply:
    """What one model call returned and what it cost."""

    message: Message
    model: str
    """The model that answered: the configured one or its fallback."""
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    duration_s: float
    """Time spent in the model call itself (the transport), for overhead accounting."""


class ModelError(Exception):
    """The model gave no answer: a non-retryable error, or retries and the fallback exhausted."""


class DeadlineReached(ModelError):
    """The model gave no answer before the run's deadline."""


class LLM(Protocol):
    """Anything that answers a conversation with a reply that may call tools."""

    model: str
    """The model's name, for the trajectory."""

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        deadline: float | None = None,
    ) -> Reply:
        """The model's next reply; gives up by `deadline` (a `time.monotonic()` instant)."""
        ...


class LLMConfig(BaseModel):
    """How to reach the model and what to do when it fails."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    model: str
    """Any litellm model name, e.g. `openai/gpt-4.1` or `anthropic/claude-sonnet-4-5`."""
    api_key: SecretStr | None = None
    """Key for the provider; None lets litellm use the provider's usual environment variable."""
    base_url: str | None = None
    """Base URL of an OpenAI-compatible server, when not the provider's default."""
    fallback_model: str | None = None
    """Model tried, with the same key and URL, when the main one fails for good."""
    timeout_s: float = Field(180.0, gt=0)
    """Limit on one call, in seconds; the run's deadline shortens it when nearer."""
    max_retries: int = Field(4, ge=0)
    """Retries of a call that failed with 429, a 5xx, a timeout or a lost connection."""
    backoff_s: float = Field(1.0, ge=0)
    """Wait before the first retry; it doubles with each retry (plus up to a quarter of jitter)."""
    max_backoff_s: float = Field(60.0, ge=0)
    """Longest wait before a retry, even when the server's Retry-After asks for more."""
    input_usd_per_mtok: float = Field(3.0, ge=0)
    """Price of a million prompt tokens, for models litellm has no price for."""
    output_usd_per_mtok: float = Field(15.0, ge=0)
    """Price of a million completion tokens, for models litellm has no price for."""
    completion_kwargs: dict[str, Any] = {}
    """Extra arguments for `litellm.completion`, e.g. `temperature` or `max_tokens`."""

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> LLMConfig:
        """The model configuration the operator set (`LLM_*` settings)."""
        if not settings.LLM_MODEL:
            raise ValueError("LLM_MODEL is not set: name a litellm model, e.g. openai/gpt-4.1")
        values: dict[str, Any] = {
            "model": settings.LLM_MODEL,
            "api_key": settings.LLM_API_KEY,
            "base_url": settings.LLM_BASE_URL,
            "fallback_model": settings.LLM_FALLBACK_MODEL,
            "timeout_s": settings.LLM_TIMEOUT_S,
            "input_usd_per_mtok": settings.LLM_INPUT_USD_PER_MTOK,
            "output_usd_per_mtok": settings.LLM_OUTPUT_USD_PER_MTOK,
        }
        return cls(**(values | overrides))


def import_litellm() -> Any:
    """litellm, imported on first use and told to use its bundled price map.

    Without `LITELLM_LOCAL_MODEL_COST_MAP` the import fetches prices from the internet, which
    hangs on a machine without it. The import takes seconds, so the web tier must never get here.
    """
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True
    return litellm


# What litellm imports on its first completion rather than at import (about two seconds here).
FIRST_CALL_IMPORTS = ("litellm.responses.mcp.chat_completions_handler", "openai.resources")


def preload_litellm() -> None:
    """litellm and what its first completion would import, so that processes forked afterwards
    (rq's work horses) start every job's first model call warm."""
    import_litellm()
    for module in FIRST_CALL_IMPORTS:
        try:
            importlib.import_module(module)
        except ImportError:  # another litellm release: the first call pays for it, no more
            log.info("litellm no longer has %s to preload", module)


class LiteLLMModel:
    """Any litellm model, with a per-call timeout, retries with backoff, a fallback and cost."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.model = config.model
        self._litellm = import_litellm()
        self._unpriced: set[str] = set()

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        deadline: float | None = None,
    ) -> Reply:
        payload = [message.to_openai() for message in messages]
        failures = []
        for model in filter(None, (self.config.model, self.config.fallback_model)):
            try:
                return self._with_retries(model, payload, list(tools), deadline)
            except DeadlineReached as exc:
                raise DeadlineReached("; ".join([*failures, f"{model}: {exc}"])) from exc
            except ModelError as exc:
                failures.append(f"{model}: {exc}")
        raise ModelError("; ".join(failures))

    def _with_retries(
        self, model: str, payload: list[dict], tools: list[dict], deadline: float | None
    ) -> Reply:
        attempt = 0
        while True:
            timeout = self._timeout(deadline)
            start = time.perf_counter()
            try:
                response = self._litellm.completion(
                    **self._arguments(model, payload, tools, timeout)
                )
            except Exception as exc:  # litellm raises many types; _retry_wait sorts them
                wait = self._retry_wait(exc, attempt)
                if _time_up(deadline, wait or 0.0):
                    message = f"{_describe(exc, attempt)}; the run's time is up"
                    raise DeadlineReached(message) from exc
                if wait is None or attempt >= self.config.max_retries:
                    raise ModelError(_describe(exc, attempt)) from exc
                log.warning(
                    "model %s failed (%s); retry %d in %.1fs", model, exc, attempt + 1, wait
                )
                time.sleep(wait)
                attempt += 1
                continue
            return self._reply(model, response, time.perf_counter() - start)

    def _timeout(self, deadline: float | None) -> float:
        if deadline is None:
            return self.config.timeout_s
        if _time_up(deadline):
            raise DeadlineReached("no time left for a model call")
        # Rounded down to a tenth: litellm caches one HTTP client per distinct timeout.
        return min(self.config.timeout_s, int((deadline - time.monotonic()) * 10) / 10)

    def _arguments(
        self, model: str, payload: list[dict], tools: list[dict], timeout: float
    ) -> dict:
        arguments: dict[str, Any] = {
            "model": model,
            "messages": payload,
            "timeout": timeout,
            # Retries are ours (with the deadline in mind), never the SDK's or litellm's.
            "max_retries": 0,
            "num_retries": 0,
            **self.config.completion_kwargs,
        }
        if tools:
            arguments["tools"] = tools
        if self.config.api_key:
            arguments["api_key"] = self.config.api_key.get_secret_value()
        if self.config.base_url:
            arguments["api_base"] = self.config.base_url
        return arguments

    def _retry_wait(self, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None when retrying cannot help."""
        status = getattr(exc, "status_code", None)
        connection = isinstance(exc, self._litellm.APIConnectionError | self._litellm.Timeout)
        if not (connection or status == 429 or (isinstance(status, int) and status >= 500)):
            return None
        backoff = self.config.backoff_s * 2**attempt
        backoff += random.uniform(0, backoff / 4)
        return min(max(backoff, _retry_after(exc)), self.config.max_backoff_s)

    def _reply(self, model: str, response: Any, duration_s: float) -> Reply:
        choice = response.choices[0].message
        calls = tuple(
            ToolCall(call.id, call.function.name or "", call.function.arguments or "")
            for call in choice.tool_calls or ()
        )
        usage = getattr(response, "usage", None)
        prompt = getattr(usage, "prompt_tokens", 0) or 0
        completion = getattr(usage, "completion_tokens", 0) or 0
        return Reply(
            message=Message("assistant", choice.content or "", calls),
            model=model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=self._cost(model, response, prompt, completion),
            duration_s=duration_s,
        )

    def _cost(self, model: str, response: Any, prompt: int, completion: int) -> float:
        """litellm's price when it has one for the model, else tokens times the configured price."""
        if model not in self._unpriced:
            try:
                return float(
                    self._litellm.completion_cost(completion_response=response, model=model)
                )
            except Exception:  # litellm raises several types for "no price for this model"
                log.info(
                    "litellm has no price for %s: counting tokens at the configured price", model
                )
                self._unpriced.add(model)
        config = self.config
        return (prompt * config.input_usd_per_mtok + completion * config.output_usd_per_mtok) / 1e6


def _time_up(deadline: float | None, wait: float = 0.0) -> bool:
    """Whether less than a tenth of a second would be left for a call after waiting `wait`."""
    return deadline is not None and deadline - time.monotonic() - wait < 0.1


def _retry_after(exc: Exception) -> float:
    """The server's Retry-After in seconds (0 when absent or given as a date)."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        return max(0.0, float(headers.get("retry-after", 0)))
    except (TypeError, ValueError):
        return 0.0


def _describe(exc: Exception, attempt: int) -> str:
    retried = f" after {attempt} retries" if attempt else ""
    return f"{type(exc).__name__}{retried}: {str(exc)[:500]}"
