"""Agent loop benchmark: harness overhead per step against mini-swe-agent's, and condensation.

Usage: .venv/bin/python bench/agent.py [--steps 60] [--rounds 5]
Prints one `name: value unit` line per figure. Targets: Wrench's overhead under 10 ms a step,
at most mini-swe-agent's (ratio <= 1.0), and condensation cutting the prompt tokens of the
run by at least half.

Overhead is a step's wall time minus the time inside `litellm.completion` (the model) and
minus the time inside the command runner (the command): what is left is the harness itself.

How the comparison is kept fair:
- Same model transport: both harnesses call the real `litellm.completion` over HTTP against
  the same instant fake OpenAI server in this process, under the same model name (one litellm
  has a price for, so both compute cost the normal way). Model time is measured at the same
  boundary in both: around the `litellm.completion` call alone (mini: its `_query`).
- Same commands: the server's script chooses the command from the step number, so both run the
  same 60 commands, and both stop at their step limit after 60 model calls. Command time is
  measured around each harness's command runner (Wrench: `Sandbox.run` of a LocalSandbox; mini:
  `LocalEnvironment.execute`) and subtracted, so neither harness's way of running commands
  counts; mini's `execute` includes a few microseconds of its own bookkeeping (in its favour).
- Same duties: each persists its trajectory after every step as it does in production (Wrench:
  an appended, redacted JSONL line per event; mini: its JSON file via `output_path`).
- Same machine and moment: both run in this one process, alternating, after a warm-up call;
  the median over the rounds is reported.

The commands are trivial (`seq`), but print about 1.2 KB like a typical agent observation (a
file view, a short test run): masking old outputs saves nothing when outputs are a few bytes,
so that case is printed too, on `echo`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a file, bench/ would come first on sys.path and bench/sandbox.py would shadow
    # the `sandbox` package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

MODEL = "openai/gpt-4o-mini"
KEY = "sk-bench-not-a-real-key-0123456789"
TASK = "Print the numbers the server asks for."
Command = Callable[[int], str]


def seq(step: int) -> str:
    return f"seq {step} {step + 300}"


def echo(step: int) -> str:
    return f"echo step {step}"


@dataclass
class Figures:
    """One run: where its time went, and how many prompt tokens it sent."""

    total_s: float
    model_s: float
    command_s: float
    steps: int
    prompt_tokens: int

    @property
    def overhead_ms(self) -> float:
        return (self.total_s - self.model_s - self.command_s) / self.steps * 1000


def server_script(command: Command) -> Callable[[dict], Any]:
    from tests.fakes.openai_server import tool_call

    def answer(body: dict) -> Any:
        step = 1 + sum(message["role"] == "assistant" for message in body["messages"])
        return tool_call("bash", {"command": command(step)})

    return answer


class TimedSandbox:
    """A Sandbox adding up the time its commands take."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.workspace, self.seconds = inner, inner.workspace, 0.0

    def run(self, command: str, timeout: float | None = None) -> Any:
        start = time.perf_counter()
        try:
            return self.inner.run(command, timeout)
        finally:
            self.seconds += time.perf_counter() - start

    def read_file(self, path: str) -> bytes:
        return self.inner.read_file(path)

    def write_file(self, path: str, data: bytes) -> None:
        self.inner.write_file(path, data)

    def close(self) -> None:
        self.inner.close()


def run_wrench(url: str, steps: int, keep: int | None, tokens: Callable[[], int]) -> Figures:
    from sandbox.local import LocalSandbox
    from worker.agent import (
        Agent,
        AgentConfig,
        AgentController,
        EventStream,
        LiteLLMModel,
        LLMConfig,
        ModelReply,
        StopReason,
        TrajectoryWriter,
    )
    from wrench.secrets import Redactor

    llm = LiteLLMModel(LLMConfig(model=MODEL, api_key=KEY, base_url=url))
    config = AgentConfig(max_steps=steps, keep_recent_observations=keep)
    redactor = Redactor([KEY, "webhook-secret-for-the-bench"])
    sandbox = TimedSandbox(LocalSandbox())
    before = tokens()
    with tempfile.TemporaryDirectory() as tmp:
        with TrajectoryWriter(Path(tmp) / "trajectory.jsonl", redactor) as writer:
            stream = EventStream([writer])
            controller = AgentController(Agent(llm, config), sandbox, stream, redactor)
            start = time.perf_counter()
            result = controller.run(TASK)
            total = time.perf_counter() - start
    sandbox.close()
    assert result.reason is StopReason.MAX_STEPS and result.steps == steps, result
    model = sum(e.duration_s for e in stream.events if isinstance(e, ModelReply))
    return Figures(total, model, sandbox.seconds, steps, tokens() - before)


def run_mini(url: str, steps: int, tokens: Callable[[], int], save: bool = True) -> Figures:
    import yaml
    from minisweagent import package_dir
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_model import LitellmModel

    class TimedModel(LitellmModel):
        seconds = 0.0

        def _query(self, messages: list, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return super()._query(messages, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

    class TimedEnvironment(LocalEnvironment):
        seconds = 0.0

        def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
            start = time.perf_counter()
            try:
                return super().execute(action, cwd, timeout=timeout)
            finally:
                self.seconds += time.perf_counter() - start

    config = yaml.safe_load((package_dir / "config" / "mini.yaml").read_text())
    model_config = config["model"]
    kwargs = model_config.pop("model_kwargs") | {"api_base": url, "api_key": KEY}
    model = TimedModel(model_name=MODEL, model_kwargs=kwargs, **model_config)
    before = tokens()
    with tempfile.TemporaryDirectory() as tmp:
        env = TimedEnvironment(cwd=tmp, **config["environment"])
        agent_config = config["agent"] | {"step_limit": steps, "cost_limit": 0}
        output = Path(tmp) / "mini.traj.json" if save else None
        agent = DefaultAgent(model, env, **agent_config, output_path=output)
        start = time.perf_counter()
        exit_info = agent.run(TASK)
        total = time.perf_counter() - start
    assert exit_info["exit_status"] == "LimitsExceeded" and agent.n_calls == steps, exit_info
    return Figures(total, model.seconds, env.seconds, steps, tokens() - before)


def warm_up(url: str) -> None:
    """One call through litellm, so its first-call imports are timed in neither harness."""
    from worker.agent.llm import import_litellm

    import_litellm().completion(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], api_base=url, api_key=KEY
    )


def measure(steps: int, rounds: int) -> dict[str, list[Figures]]:
    from tests.fakes.openai_server import FakeOpenAI

    runs: dict[str, list[Figures]] = {"wrench": [], "mini": [], "mini_unsaved": []}
    with FakeOpenAI(server_script(seq)) as server:
        warm_up(server.url)
        for _ in range(rounds):
            runs["wrench"].append(run_wrench(server.url, steps, 6, server.prompt_tokens))
            runs["mini"].append(run_mini(server.url, steps, server.prompt_tokens))
            runs["mini_unsaved"].append(run_mini(server.url, steps, server.prompt_tokens, False))
        runs["wrench_uncondensed"] = [run_wrench(server.url, steps, None, server.prompt_tokens)]
    with FakeOpenAI(server_script(echo)) as server:
        runs["echo"] = [run_wrench(server.url, steps, 6, server.prompt_tokens)]
        runs["echo_uncondensed"] = [run_wrench(server.url, steps, None, server.prompt_tokens)]
    return runs


def report(runs: dict[str, list[Figures]], steps: int) -> None:
    def median(name: str, figure: Callable[[Figures], float]) -> float:
        return statistics.median(figure(run) for run in runs[name])

    wrench = median("wrench", lambda f: f.overhead_ms)
    mini = median("mini", lambda f: f.overhead_ms)
    print(f"steps: {steps} steps")
    print(f"wrench_overhead_per_step: {wrench:.2f} ms")
    print(f"minisweagent_overhead_per_step: {mini:.2f} ms")
    print(f"overhead_ratio_wrench_over_minisweagent: {wrench / mini:.2f}")
    # For transparency: mini without writing any trajectory (no duty Wrench gets to skip).
    unsaved = median("mini_unsaved", lambda f: f.overhead_ms)
    print(f"minisweagent_overhead_per_step_without_trajectory: {unsaved:.2f} ms")
    print(f"overhead_ratio_wrench_over_minisweagent_without_trajectory: {wrench / unsaved:.2f}")
    model = median("wrench", lambda f: f.model_s / f.steps * 1000)
    print(f"litellm_call_per_step: {model:.2f} ms")
    for label, condensed, full in (
        ("", "wrench", "wrench_uncondensed"),
        ("_echo", "echo", "echo_uncondensed"),
    ):
        with_, without = runs[condensed][0].prompt_tokens, runs[full][0].prompt_tokens
        print(f"prompt_tokens{label}_condensed: {with_} tokens")
        print(f"prompt_tokens{label}_uncondensed: {without} tokens")
        print(f"condensation{label}_token_reduction: {(1 - with_ / without) * 100:.1f} %")
    print(f"minisweagent_prompt_tokens: {runs['mini'][0].prompt_tokens} tokens")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    config_dir = tempfile.mkdtemp(prefix="bench-mini-")
    os.environ.update(MSWEA_SILENT_STARTUP="1", MSWEA_GLOBAL_CONFIG_DIR=config_dir)
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before mini imports litellm
    report(measure(args.steps, args.rounds), args.steps)


if __name__ == "__main__":
    main()
