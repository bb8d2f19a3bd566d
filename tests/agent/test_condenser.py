"""ObservationMasker: what it keeps, what it masks, and that it never changes the history."""

from __future__ import annotations

import json

from worker.agent.condenser import LONG_ARGUMENT, NoCondenser, ObservationMasker
from worker.agent.llm import Message
from worker.agent.scripted import call

FILE = "line of a file\n" * 100


def conversation(turns: int) -> list[Message]:
    messages = [Message("system", "sys"), Message("user", "task")]
    for i in range(turns):
        reply = call(
            "str_replace_editor", {"command": "create", "path": f"f{i}.py", "file_text": FILE}
        )
        messages += [reply, Message("tool", f"output {i} " + "x" * 200, (), reply.tool_calls[0].id)]
    return messages


def test_only_the_most_recent_outputs_are_kept_verbatim():
    messages = conversation(5)

    condensed = ObservationMasker(keep_recent=2).condense(messages)

    outputs = [m.content for m in condensed if m.role == "tool"]
    assert outputs[:3] == ["[old output omitted: 209 chars]"] * 3
    assert outputs[3:] == [m.content for m in messages if m.role == "tool"][3:]
    assert condensed[:2] == messages[:2]
    assert [m.tool_call_id for m in condensed] == [m.tool_call_id for m in messages]


def test_long_arguments_of_old_calls_are_cut_and_stay_valid_json():
    messages = conversation(4)

    condensed = ObservationMasker(keep_recent=1).condense(messages)

    calls = [m.tool_calls[0] for m in condensed if m.tool_calls]
    old = [json.loads(c.arguments) for c in calls[:3]]
    assert all(
        len(a["file_text"]) < LONG_ARGUMENT + 40 and "omitted" in a["file_text"] for a in old
    )
    assert all(a["path"] == f"f{i}.py" for i, a in enumerate(old))
    assert json.loads(calls[3].arguments)["file_text"] == FILE
    assert [c.id for c in calls] == [m.tool_calls[0].id for m in messages if m.tool_calls]


def test_masking_leaves_the_history_itself_untouched():
    messages = conversation(4)
    before = list(messages)

    ObservationMasker(keep_recent=1).condense(messages)

    assert messages == before


def test_short_outputs_and_malformed_arguments_are_kept_as_they_are():
    reply = call("bash", "{" + "x" * 1000)
    messages = [reply, Message("tool", "ok", (), reply.tool_calls[0].id)] * 3

    condensed = ObservationMasker(keep_recent=1).condense(messages)

    assert condensed == messages


def test_no_condenser_sends_everything():
    messages = conversation(3)

    assert NoCondenser().condense(messages) == messages
