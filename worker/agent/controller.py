"""`AgentController`: the loop that checks limits, steps the agent, runs its actions, and stops."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from sandbox.base import Sandbox
from worker.agent.agent import Agent
from worker.agent.events import (
    Action,
    Event,
    EventStream,
    ModelReply,
    Observation,
    Progress,
    Prompt,
    RunEnded,
    RunResult,
    RunStarted,
    StopReason,
)
from worker.agent.llm import DeadlineReached, ModelError, Reply, ToolCall
from worker.agent.state import State
from worker.agent.tools import FormatError, Submitted, Toolbox, parse_call
from wrench.secrets import Redactor

log = logging.getLogger(__name__)

NO_TOOL_CALL = (
    "Your reply called no tool. Use the tools to make progress, and call `finish` with a "
    "message for the user when the task is done."
)
STUCK_WARNING = (
    "You have done the same thing {n} times in a row and got the same result each time. "
    "Doing it again will not help: try something different. One more identical step ends the task."
)


class Stop(Exception):  # noqa: N818 (a signal, not an error)
    """Ends the run: why, in a sentence for people, and the model's message if it finished."""

    def __init__(self, reason: StopReason, detail: str, message: str = "") -> None:
        super().__init__(detail)
        self.reason, self.detail, self.message = reason, detail, message


class AgentController:
    """Runs one task: before each model call it checks the limits, then acts on the reply."""

    def __init__(
        self,
        agent: Agent,
        runtime: Sandbox,
        stream: EventStream | None = None,
        redactor: Redactor | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.agent = agent
        self.config = agent.config
        self.runtime = runtime
        self.stream = stream or EventStream()
        self.redactor = redactor or Redactor()
        self.cancelled = cancelled or (lambda: False)
        self.tools = Toolbox(runtime, self.config.max_observation_chars)

    def run(self, task: str) -> RunResult:
        """Work on the task until the model finishes or a limit stops it; never raises."""
        state = State(task=task)
        try:
            self._start(state)
            while True:
                self._check_limits(state)
                self._step(state)
        except Stop as stop:
            result = self._result(state, stop.reason, stop.detail, stop.message or state.last_said)
        except Exception as exc:  # a broken sandbox or a bug: report it rather than vanish
            log.exception("the agent run failed")
            detail = f"internal error: {type(exc).__name__}: {exc}"
            result = self._result(state, StopReason.ERROR, detail, state.last_said)
        self._emit(RunEnded(step=state.steps, result=result))
        return result

    def _start(self, state: State) -> None:
        limits = self.config.limits()
        self._emit(RunStarted(step=0, task=state.task, model=self.agent.llm.model, limits=limits))
        for message in self.agent.prompts(state.task, self.runtime):
            message = replace(message, content=self.redactor.redact(message.content))
            state.messages.append(message)
            self._emit(Prompt(step=0, role=message.role, content=message.content))

    def _check_limits(self, state: State) -> None:
        config = self.config
        if self.cancelled():
            raise Stop(StopReason.CANCELLED, "the run was cancelled")
        if state.steps >= config.max_steps:
            raise Stop(StopReason.MAX_STEPS, f"it reached the limit of {config.max_steps} steps")
        if state.cost_usd + state.next_call_usd() > config.max_cost_usd:
            raise Stop(
                StopReason.MAX_COST,
                f"another model call could pass the cost limit of ${config.max_cost_usd:.2f} "
                f"(${state.cost_usd:.4f} spent, the next call ~${state.next_call_usd():.4f})",
            )
        if self._time_left(state) <= 0:
            raise Stop(StopReason.TIMEOUT, self._timeout_detail())

    def _step(self, state: State) -> None:
        reply = self._ask(state)
        state.add_reply(reply)
        self._emit(_model_reply(state.steps, reply))
        calls = reply.message.tool_calls
        if calls:
            self._check_stuck(state, self._act(state, calls))
        else:
            self._observe(Observation(step=state.steps, content=NO_TOOL_CALL, error=True), state)
            self._count_bad_reply(state, "no tool call")
        self._emit(self._progress(state))

    def _ask(self, state: State) -> Reply:
        try:
            return self.agent.step(state, state.started + self.config.max_duration_s)
        except DeadlineReached as exc:
            raise Stop(StopReason.TIMEOUT, f"{self._timeout_detail()} ({exc})") from None
        except ModelError as exc:
            raise Stop(StopReason.MODEL_ERROR, f"the model failed: {exc}") from None

    def _act(self, state: State, calls: Sequence[ToolCall]) -> list[tuple[str, str, str]]:
        """Run the reply's calls in order; returns (tool, arguments, observation) of each."""
        done, problem = [], ""
        for call in calls:
            try:
                action = parse_call(call, state.steps)
            except FormatError as exc:
                problem = str(exc)
                observation = Observation(
                    step=state.steps,
                    content=f"Error: {exc}",
                    call_id=call.id,
                    tool=call.name,
                    error=True,
                )
                self._observe(observation, state)
                done.append((call.name, call.arguments, observation.content))
                continue
            self._emit(action)
            state.last_action = action.summary()
            observation = self._run(state, action)
            done.append(
                (action.tool, json.dumps(action.arguments, sort_keys=True), observation.content)
            )
        self._count_bad_reply(state, problem)
        return done

    def _run(self, state: State, action: Action) -> Observation:
        if self.cancelled():
            raise Stop(StopReason.CANCELLED, "the run was cancelled")
        left = self._time_left(state)
        if left <= 0:
            raise Stop(StopReason.TIMEOUT, self._timeout_detail())
        try:
            observation = self.tools.run(action, timeout=min(self.config.command_timeout_s, left))
        except Submitted as submitted:
            raise Stop(StopReason.FINISHED, "the model finished", submitted.message) from None
        return self._observe(observation, state)

    def _observe(self, observation: Observation, state: State) -> Observation:
        # Known secrets never reach the model, nor the trajectory.
        observation = replace(observation, content=self.redactor.redact(observation.content))
        state.add_observation(observation)
        self._emit(observation)
        return observation

    def _count_bad_reply(self, state: State, problem: str) -> None:
        state.bad_replies = state.bad_replies + 1 if problem else 0
        if state.bad_replies >= self.config.max_format_errors:
            raise Stop(
                StopReason.FORMAT_ERRORS,
                f"the model sent {state.bad_replies} replies in a row without a valid tool call "
                f"(the last: {problem})",
            )

    def _check_stuck(self, state: State, done: list[tuple[str, str, str]]) -> None:
        repeats = state.note_step(tuple(done))
        if repeats >= self.config.stuck_after:
            raise Stop(
                StopReason.STUCK,
                f"the model did the same thing with the same result {repeats} times in a row",
            )
        if repeats == self.config.stuck_after - 1:
            warning = STUCK_WARNING.format(n=repeats)
            self._observe(Observation(step=state.steps, content=warning, error=True), state)

    def _progress(self, state: State) -> Progress:
        return Progress(
            step=state.steps,
            max_steps=self.config.max_steps,
            last_action=self.redactor.redact(state.last_action),
            cost_usd=state.cost_usd,
            max_cost_usd=self.config.max_cost_usd,
            prompt_tokens=state.prompt_tokens,
            completion_tokens=state.completion_tokens,
            elapsed_s=state.elapsed(),
        )

    def _time_left(self, state: State) -> float:
        return self.config.max_duration_s - state.elapsed()

    def _timeout_detail(self) -> str:
        return f"it reached the time limit of {self.config.max_duration_s:g} s"

    def _result(self, state: State, reason: StopReason, detail: str, message: str) -> RunResult:
        return RunResult(
            reason=reason,
            message=self.redactor.redact(message),
            detail=self.redactor.redact(detail),
            steps=state.steps,
            prompt_tokens=state.prompt_tokens,
            completion_tokens=state.completion_tokens,
            cost_usd=state.cost_usd,
            duration_s=state.elapsed(),
        )

    def _emit(self, event: Event) -> None:
        self.stream.add(event)


def _model_reply(step: int, reply: Reply) -> ModelReply:
    return ModelReply(
        step=step,
        message=reply.message,
        model=reply.model,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        cost_usd=reply.cost_usd,
        duration_s=reply.duration_s,
    )
