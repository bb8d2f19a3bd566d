"""The whole loop end to end: real litellm over HTTP to the fake server, real sandboxes."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import pytest

from tests.agent.conftest import FAKE_KEY, litellm_model, run_agent
from tests.fakes.openai_server import FakeOpenAI, error, prompt_tokens_of, slow, text, tool_call
from worker.agent import AgentConfig, LiteLLMModel, LLMConfig
from worker.agent.events import ModelReply, StopReason
from worker.agent.llm import import_litellm
from wrench.secrets import REDACTED, Redactor
from wrench.settings import Settings

BUGGY = b"def add(a, b):\n    return a - b\n"


def editor(**arguments):
    return tool_call("str_replace_editor", arguments)


def tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def echo_forever(body: dict):
    """A server script that never ends: a new `echo` per request, numbered by the history."""
    return tool_call("bash", {"command": f"echo step {len(body['messages'])}"})


def test_a_multi_step_edit_over_http_changes_the_files(any_sandbox, fake_openai, tmp_path):
    any_sandbox.write_file("calc.py", BUGGY)
    any_sandbox.write_file("AGENTS.md", b"Check changes with python3.")
    fake_openai.add(
        editor(command="view", path="calc.py"),
        editor(command="str_replace", path="calc.py", old_str="a - b", new_str="a + b"),
        editor(command="create", path="check.py", file_text="import calc\nprint(calc.add(2, 3))\n"),
        tool_call("bash", {"command": "python3 check.py"}),
        tool_call("finish", {"message": "Fixed add()."}),
    )

    settings = Settings(
        _env_file=None,
        LLM_MODEL="openai/fake-model",
        LLM_BASE_URL=fake_openai.url,
        LLM_API_KEY=FAKE_KEY,
        MAX_STEPS=10,
    )
    llm = LiteLLMModel(LLMConfig.from_settings(settings))
    config = AgentConfig.from_settings(settings).model_dump()

    run = run_agent(llm, any_sandbox, tmp_path / "t.jsonl", **config)

    assert run.result.finished and run.result.message == "Fixed add()."
    assert any_sandbox.read_file("calc.py") == BUGGY.replace(b"a - b", b"a + b")
    bodies = fake_openai.bodies()
    assert len(bodies) == run.result.steps == 5
    system, task = bodies[0]["messages"]
    assert system["role"] == "system" and any_sandbox.workspace in system["content"]
    assert "Fix the bug." in task["content"] and "Check changes with python3." in task["content"]
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == [
        "bash",
        "str_replace_editor",
        "finish",
    ]
    ran = tool_messages(bodies[4])[-1]
    assert ran["content"].strip() == "5"
    assert ran["tool_call_id"] == bodies[4]["messages"][-2]["tool_calls"][0]["id"]
    assert run.result.prompt_tokens == fake_openai.prompt_tokens()
    assert all(FAKE_KEY not in json.dumps(body) for body in bodies)


def test_malformed_arguments_from_the_server_are_sent_back_as_an_error(
    sandbox, fake_openai, tmp_path
):
    fake_openai.add(tool_call("bash", '{"command": "ls'), tool_call("finish", {"message": "ok"}))

    run = run_agent(litellm_model(fake_openai), sandbox, tmp_path / "t.jsonl")

    assert run.result.finished
    bad_call = fake_openai.bodies()[1]["messages"][-2]["tool_calls"][0]
    (answer,) = tool_messages(fake_openai.bodies()[1])
    assert answer["tool_call_id"] == bad_call["id"]
    assert "not valid JSON" in answer["content"]


def test_a_rate_limit_mid_run_is_waited_out(sandbox, fake_openai, tmp_path):
    fake_openai.add(
        tool_call("bash", {"command": "echo one"}),
        error(429, retry_after=0.2),
        tool_call("finish", {"message": "done"}),
    )

    run = run_agent(litellm_model(fake_openai), sandbox, tmp_path / "t.jsonl")

    assert run.result.finished and run.result.steps == 2
    assert len(fake_openai.requests) == 3
    assert fake_openai.requests[2].at - fake_openai.requests[1].at >= 0.2


def test_server_errors_exhausting_the_retries_end_the_run_cleanly(sandbox, fake_openai, tmp_path):
    fake_openai.add(tool_call("bash", {"command": "echo one"}), *[error(500)] * 3)

    run = run_agent(litellm_model(fake_openai, max_retries=2), sandbox, tmp_path / "t.jsonl")

    assert run.result.reason is StopReason.MODEL_ERROR
    assert "InternalServerError after 2 retries" in run.result.detail
    assert run.result.steps == 1 and len(fake_openai.requests) == 4
    last = json.loads(run.trajectory.read_text().splitlines()[-1])
    assert last["kind"] == "RunEnded" and last["result"]["reason"] == "model_error"


def test_the_fallback_model_takes_over_and_the_trajectory_says_so(sandbox, fake_openai, tmp_path):
    fake_openai.add(error(503), tool_call("finish", {"message": "from backup"}))
    model = litellm_model(fake_openai, max_retries=0, fallback_model="openai/backup-model")

    run = run_agent(model, sandbox, tmp_path / "t.jsonl")

    assert run.result.message == "from backup"
    assert [reply.model for reply in run.of(ModelReply)] == ["openai/backup-model"]


def test_a_reply_slower_than_the_time_left_does_not_overrun_the_time_limit(
    sandbox, fake_openai, tmp_path
):
    fake_openai.add(tool_call("bash", {"command": "echo one"}), slow(text("late"), 5.0))
    start = time.monotonic()

    run = run_agent(litellm_model(fake_openai), sandbox, tmp_path / "t.jsonl", max_duration_s=1.5)

    assert run.result.reason is StopReason.TIMEOUT
    assert time.monotonic() - start < 1.8
    assert run.result.steps == 1


def test_the_cost_limit_holds_with_litellms_own_prices(sandbox, tmp_path):
    with FakeOpenAI(echo_forever) as server:
        model = litellm_model(server, model="openai/gpt-4o-mini")
        run = run_agent(model, sandbox, tmp_path / "t.jsonl", max_cost_usd=0.001)

    assert run.result.reason is StopReason.MAX_COST
    assert 0.0008 < run.result.cost_usd <= 0.001
    price = import_litellm().model_cost["gpt-4o-mini"]
    replies = run.of(ModelReply)
    expected = sum(
        r.prompt_tokens * price["input_cost_per_token"]
        + r.completion_tokens * price["output_cost_per_token"]
        for r in replies
    )
    assert run.result.cost_usd == pytest.approx(expected)
    assert len(server.requests) == len(replies) == run.result.steps


def test_condensation_halves_the_tokens_the_server_receives(sandbox, tmp_path):
    def seq_forever(body: dict):
        n = len(body["messages"])
        return tool_call("bash", {"command": f"seq {n} {n + 250}"})

    tokens = {}
    for keep in (None, 4):
        with FakeOpenAI(seq_forever) as server:
            run = run_agent(
                litellm_model(server),
                sandbox,
                tmp_path / f"{keep}.jsonl",
                max_steps=30,
                keep_recent_observations=keep,
            )
        assert run.result.reason is StopReason.MAX_STEPS
        assert run.result.prompt_tokens == server.prompt_tokens()
        tokens[keep] = server.prompt_tokens()

    assert tokens[4] < tokens[None] / 2


def test_a_secret_in_the_workspace_never_reaches_the_model_or_the_trajectory(
    sandbox, fake_openai, tmp_path
):
    secret = "db-password-7f3a9c2e"
    sandbox.write_file(".env", f"PASSWORD={secret}\n".encode())
    fake_openai.add(
        tool_call("bash", {"command": "cat .env"}),
        tool_call("finish", {"message": f"The password is {secret}"}),
    )

    run = run_agent(
        litellm_model(fake_openai),
        sandbox,
        tmp_path / "t.jsonl",
        redactor=Redactor([secret, FAKE_KEY]),
    )

    assert tool_messages(fake_openai.bodies()[1])[0]["content"].strip() == f"PASSWORD={REDACTED}"
    assert all(secret not in json.dumps(body) for body in fake_openai.bodies())
    assert secret not in run.trajectory.read_text() and FAKE_KEY not in run.trajectory.read_text()
    assert run.result.message == f"The password is {REDACTED}"


def test_the_trajectory_records_every_http_call_with_usage_and_timing(sandbox, tmp_path):
    with FakeOpenAI(echo_forever) as server:
        run = run_agent(litellm_model(server), sandbox, tmp_path / "t.jsonl", max_steps=3)

    records = [json.loads(line) for line in Path(run.trajectory).read_text().splitlines()]
    replies = [r for r in records if r["kind"] == "ModelReply"]
    assert [r["prompt_tokens"] for r in replies] == [prompt_tokens_of(b) for b in server.bodies()]
    assert all(r["duration_s"] > 0 and r["cost_usd"] > 0 for r in replies)
    kinds = [r["kind"] for r in records]
    assert kinds[:3] == ["RunStarted", "Prompt", "Prompt"] and kinds[-1] == "RunEnded"
    assert kinds.count("Action") == kinds.count("Observation") == 3
    assert all(a <= b for a, b in itertools.pairwise(r["at"] for r in records))
