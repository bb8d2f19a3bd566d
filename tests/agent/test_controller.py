"""The agent loop with the scripted model on a real local sandbox: edits, limits and stops."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import pytest

from tests.agent.conftest import run_agent
from worker.agent.controller import NO_TOOL_CALL
from worker.agent.events import Action, ModelReply, Observation, Progress, StopReason
from worker.agent.llm import ModelError
from worker.agent.scripted import ScriptedModel, call, calls, count_tokens, say
from wrench.secrets import REDACTED, Redactor

BUGGY = "def add(a, b):\n    return a - b\n"


def echoes(start: int = 1):
    """An endless script of distinct cheap commands."""
    return (call("bash", {"command": f"echo {i}"}) for i in itertools.count(start))


def edit(**arguments) -> object:
    return call("str_replace_editor", arguments)


def test_a_multi_step_edit_changes_the_files_and_the_model_sees_the_changed_code_run(
    sandbox, tmp_path
):
    workspace = Path(sandbox.workspace)
    (workspace / "calc.py").write_text(BUGGY)
    model = ScriptedModel(
        [
            edit(command="view", path="calc.py"),
            edit(command="str_replace", path="calc.py", old_str="a - b", new_str="a + b"),
            edit(
                command="create", path="check.py", file_text="import calc\nprint(calc.add(2, 3))\n"
            ),
            call("bash", {"command": "python3 check.py"}),
            call("finish", {"message": "add() now adds; check.py prints 5."}),
        ]
    )

    run = run_agent(model, sandbox, tmp_path / "t.jsonl")

    assert run.result.finished and run.result.reason is StopReason.FINISHED
    assert run.result.message == "add() now adds; check.py prints 5."
    assert run.result.steps == 5 == len(model.prompts)
    assert (workspace / "calc.py").read_text() == BUGGY.replace("a - b", "a + b")
    assert (workspace / "check.py").exists()
    bash = run.of(Observation)[-1]
    assert (bash.tool, bash.content.strip(), bash.exit_code) == ("bash", "5", 0)
    seen = model.prompts[4][-1]
    assert (seen.role, seen.content.strip()) == ("tool", "5")
    assert "return a - b" in model.prompts[1][-1].content


def test_the_step_limit_stops_the_run_before_one_call_too_many(sandbox, tmp_path):
    model = ScriptedModel(echoes())

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", max_steps=4)

    assert run.result.reason is StopReason.MAX_STEPS
    assert len(model.prompts) == run.result.steps == 4
    assert "limit of 4 steps" in run.result.detail


@pytest.mark.parametrize(("per_call", "limit"), [(0.3, 1.0), (0.25, 1.0), (0.4, 1.0), (0.7, 1.0)])
def test_the_cost_limit_is_never_overrun(sandbox, tmp_path, per_call, limit):
    model = ScriptedModel(echoes(), cost_per_call_usd=per_call)

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", max_cost_usd=limit)

    assert run.result.reason is StopReason.MAX_COST
    assert run.result.cost_usd <= limit
    assert run.result.cost_usd + per_call > limit  # it stopped only when it had to
    assert run.result.cost_usd == pytest.approx(per_call * len(model.prompts))


@pytest.mark.parametrize("limit", [0.004 + 0.0002 * i for i in range(25)])
def test_the_cost_limit_holds_while_prompts_and_so_calls_grow(sandbox, tmp_path, limit):
    model = ScriptedModel(echoes(), usd_per_mtok=1.0)

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", max_cost_usd=limit)

    assert run.result.reason is StopReason.MAX_COST
    assert run.result.cost_usd <= limit
    costs = [reply.cost_usd for reply in run.of(ModelReply)]
    assert all(a < b for a, b in itertools.pairwise(costs))  # each call dearer than the last


def test_the_time_limit_stops_the_run_without_overrunning(sandbox, tmp_path):
    model = ScriptedModel(call("bash", {"command": f"sleep 0.3; echo {i}"}) for i in range(100))
    start = time.monotonic()

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", max_duration_s=1.0)

    assert run.result.reason is StopReason.TIMEOUT
    assert 1.0 <= run.result.duration_s < 1.3
    assert time.monotonic() - start < 1.5
    assert 3 <= len(model.prompts) <= 4


def test_a_command_is_cut_short_to_end_by_the_time_limit(sandbox, tmp_path):
    model = ScriptedModel(itertools.chain([call("bash", {"command": "sleep 30"})], echoes()))

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", max_duration_s=1.0)

    assert run.result.reason is StopReason.TIMEOUT
    assert run.result.duration_s < 1.5
    (observation,) = run.of(Observation)
    assert "killed" in observation.content and observation.exit_code is None


def test_repeating_the_same_action_with_the_same_result_warns_then_stops(sandbox, tmp_path):
    model = ScriptedModel(call("bash", {"command": "echo same"}) for _ in range(10))

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", stuck_after=4)

    assert run.result.reason is StopReason.STUCK
    assert len(model.prompts) == 4
    warning = model.prompts[3][-1]
    assert warning.role == "user" and "same thing 3 times in a row" in warning.content
    assert all("same thing" not in m.content for m in model.prompts[2])


def test_the_same_command_with_a_changing_result_is_not_stuck(sandbox, tmp_path):
    model = ScriptedModel(call("bash", {"command": "date +%s%N"}) for _ in range(10))

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", stuck_after=3, max_steps=6)

    assert run.result.reason is StopReason.MAX_STEPS


def test_malformed_replies_go_back_to_the_model_and_several_in_a_row_end_the_run(sandbox, tmp_path):
    no_tool, unknown, bad_json = say("I think it is fixed."), call("deploy"), call("bash", "{oops")
    model = ScriptedModel(itertools.chain([no_tool, unknown, bad_json], echoes()))

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", max_format_errors=3)

    assert run.result.reason is StopReason.FORMAT_ERRORS
    assert "3 replies in a row" in run.result.detail and "not valid JSON" in run.result.detail
    assert len(model.prompts) == 3
    told = model.prompts[1][-1]
    assert (told.role, told.content) == ("user", NO_TOOL_CALL)
    told = model.prompts[2][-1]
    assert told.role == "tool" and told.tool_call_id == unknown.tool_calls[0].id
    assert "There is no tool 'deploy'" in told.content
    assert run.result.message == "I think it is fixed."


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ("[1, 2]", "must be a JSON object"),
        ("{}", "needs the argument 'command'"),
        ('{"command": 42}', "'command' of bash must be a JSON string"),
        ('{"command": "view", "path": "x", "insert_line": "3"}', "insert_line"),
    ],
)
def test_bad_arguments_are_explained_to_the_model(sandbox, tmp_path, arguments, says):
    tool = "str_replace_editor" if "path" in arguments else "bash"
    model = ScriptedModel([call(tool, arguments), call("finish", {"message": "ok"})])

    run = run_agent(model, sandbox, tmp_path / "t.jsonl")

    assert run.result.finished
    assert says in model.prompts[1][-1].content and model.prompts[1][-1].role == "tool"


def test_a_valid_reply_resets_the_count_of_malformed_ones(sandbox, tmp_path):
    script = [say("a"), say("b"), call("bash", {"command": "true"}), say("c"), say("d")]
    model = ScriptedModel([*script, call("finish", {"message": "done"})])

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", max_format_errors=3)

    assert run.result.finished and run.result.steps == 6


def test_every_call_of_a_reply_is_answered_and_finish_stops_the_rest(sandbox, tmp_path):
    first = calls(("bash", {"command": "touch a"}), ("nope", {}), ("bash", {"command": "touch b"}))
    second = calls(
        ("bash", {"command": "touch c"}),
        ("finish", {"message": "m"}),
        ("bash", {"command": "touch d"}),
    )
    model = ScriptedModel([first, second])

    run = run_agent(model, sandbox, tmp_path / "t.jsonl")

    answered = [m.tool_call_id for m in model.prompts[1] if m.role == "tool"]
    assert answered == [c.id for c in first.tool_calls]
    made = sorted(p.name for p in Path(sandbox.workspace).iterdir())
    assert made == ["a", "b", "c"]
    assert run.result.finished


def test_a_model_failure_ends_the_run_with_the_reason(sandbox, tmp_path):
    model = ScriptedModel([call("bash", {"command": "echo hi"}), ModelError("provider is down")])

    run = run_agent(model, sandbox, tmp_path / "t.jsonl")

    assert run.result.reason is StopReason.MODEL_ERROR
    assert "provider is down" in run.result.detail
    assert run.result.steps == 1


def test_a_cancelled_run_stops_before_the_next_model_call(sandbox, tmp_path):
    model = ScriptedModel(echoes())

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", cancelled=lambda: len(model.prompts) >= 2)

    assert run.result.reason is StopReason.CANCELLED
    assert len(model.prompts) == 2


def test_subscribers_get_progress_after_every_step(sandbox, tmp_path):
    seen: list[Progress] = []
    model = ScriptedModel(echoes(), cost_per_call_usd=0.01)

    run_agent(
        model,
        sandbox,
        tmp_path / "t.jsonl",
        subscribers=[lambda e: isinstance(e, Progress) and seen.append(e)],
        max_steps=3,
    )

    assert [(p.step, p.max_steps, p.last_action) for p in seen] == [
        (1, 3, "bash: echo 1"),
        (2, 3, "bash: echo 2"),
        (3, 3, "bash: echo 3"),
    ]
    assert [p.cost_usd for p in seen] == pytest.approx([0.01, 0.02, 0.03])
    assert all(p.elapsed_s > 0 and p.prompt_tokens > 0 for p in seen)


def test_a_failing_subscriber_does_not_stop_the_work(sandbox, tmp_path):
    def broken(event):
        raise RuntimeError("GitHub is down")

    model = ScriptedModel([call("bash", {"command": "echo hi"}), call("finish", {"message": "ok"})])

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", subscribers=[broken])

    assert run.result.finished


class DeadSandbox:
    """A sandbox whose container has died under the agent: every command fails."""

    workspace = "/workspace"

    def run(self, command: str, timeout: float | None = None):
        raise ConnectionError("the container is gone")

    def read_file(self, path: str) -> bytes:
        raise FileNotFoundError(path)

    def write_file(self, path: str, data: bytes) -> None:
        raise ConnectionError("the container is gone")

    def close(self) -> None:
        pass


def test_a_broken_sandbox_ends_the_run_with_an_error_not_an_exception(tmp_path):
    model = ScriptedModel(itertools.chain([call("bash", {"command": "echo hi"})], echoes()))

    run = run_agent(model, DeadSandbox(), tmp_path / "t.jsonl")

    assert run.result.reason is StopReason.ERROR
    assert run.result.detail == "internal error: ConnectionError: the container is gone"
    assert run.result.steps == 1
    assert json.loads(run.trajectory.read_text().splitlines()[-1])["result"]["reason"] == "error"


def test_secrets_the_model_echoes_are_redacted_everywhere(sandbox, tmp_path):
    secret = "hunter2-very-secret-value"
    token = "ghp_" + "A1b2C3d4E5" * 4
    model = ScriptedModel(
        [
            call("bash", {"command": f"echo {secret} {token}"}, content=f"Printing {secret}"),
            call("finish", {"message": f"The secret was {secret}"}),
        ]
    )

    run = run_agent(model, sandbox, tmp_path / "t.jsonl", redactor=Redactor([secret]))

    written = run.trajectory.read_text()
    assert secret not in written and token not in written
    assert written.count(REDACTED) >= 4
    sent_back = model.prompts[1][-1]
    assert sent_back.content.strip() == f"{REDACTED} {REDACTED}"
    assert secret not in run.result.message and REDACTED in run.result.message


def test_the_trajectory_is_one_json_event_per_line_with_usage_cost_and_timing(sandbox, tmp_path):
    model = ScriptedModel(
        [call("bash", {"command": "echo hi"}), call("finish", {"message": "ok"})],
        cost_per_call_usd=0.002,
    )

    run = run_agent(model, sandbox, tmp_path / "t.jsonl")

    lines = run.trajectory.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == len(run.events)
    assert [r["kind"] for r in records] == [type(e).__name__ for e in run.events]
    assert records[0]["kind"] == "RunStarted" and records[-1]["kind"] == "RunEnded"
    assert records[-1]["result"]["reason"] == "finished" and records[-1]["result"]["finished"]
    replies = [r for r in records if r["kind"] == "ModelReply"]
    assert len(replies) == 2
    for reply in replies:
        assert reply["prompt_tokens"] > 0 and reply["completion_tokens"] > 0
        assert reply["cost_usd"] == 0.002 and reply["duration_s"] >= 0
    observation = next(r for r in records if r["kind"] == "Observation")
    assert observation["content"].strip() == "hi" and observation["duration_s"] > 0
    assert all(r["at"] > 0 and "step" in r for r in records)
    assert len(run.of(ModelReply)) == 2 and len(run.of(Action)) == 2


def test_the_repositorys_instructions_are_in_the_task_prompt(sandbox, tmp_path):
    workspace = Path(sandbox.workspace)
    (workspace / ".wrench").mkdir()
    (workspace / ".wrench" / "instructions.md").write_text("Always run `make check`.")
    (workspace / "AGENTS.md").write_text("Use tabs. " + "x" * 500)
    model = ScriptedModel([call("finish", {"message": "ok"})])

    run_agent(model, sandbox, tmp_path / "t.jsonl", max_instruction_chars=100)

    task = model.prompts[0][1].content
    assert "Fix the bug." in task
    assert "Always run `make check`." in task and 'file=".wrench/instructions.md"' in task
    assert "Use tabs." in task and "x" * 91 not in task and "the rest of this file was cut" in task


def test_without_instruction_files_the_prompt_has_no_instructions(sandbox, tmp_path):
    model = ScriptedModel([call("finish", {"message": "ok"})])

    run_agent(model, sandbox, tmp_path / "t.jsonl")

    assert "<instructions" not in model.prompts[0][1].content
    assert sandbox.workspace in model.prompts[0][0].content
    tools = [tool["function"]["name"] for tool in model.tools]
    assert tools == ["bash", "str_replace_editor", "finish"]


def test_masking_old_observations_halves_the_prompt_tokens_and_keeps_recent_ones(sandbox, tmp_path):
    def script():
        # Outputs of about 1 KB, like a short test run or a small file viewed.
        return [call("bash", {"command": f"seq {i} {i + 250}"}) for i in range(30)]

    full = ScriptedModel(script())
    masked = ScriptedModel(script())

    run_agent(full, sandbox, tmp_path / "full.jsonl", max_steps=30, keep_recent_observations=None)
    run_agent(masked, sandbox, tmp_path / "masked.jsonl", max_steps=30, keep_recent_observations=3)

    full_tokens = sum(count_tokens(prompt) for prompt in full.prompts)
    masked_tokens = sum(count_tokens(prompt) for prompt in masked.prompts)
    assert masked_tokens < full_tokens / 2
    last = [m.content for m in masked.prompts[-1] if m.role == "tool"]
    assert [c.startswith("[old output omitted") for c in last] == [True] * 26 + [False] * 3
    assert last[-1] == full.prompts[-1][-1].content
