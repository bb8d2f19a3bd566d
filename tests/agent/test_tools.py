"""How command results and actions are put into words for the model and for progress reports."""

from __future__ import annotations

from sandbox.base import ExecResult
from worker.agent.events import Action
from worker.agent.tools import clip, describe


def test_a_successful_command_is_just_its_output():
    assert describe(ExecResult("hello\n", 0), 60) == "hello\n"
    assert describe(ExecResult("", 0), 60) == "(no output)"


def test_how_a_command_ended_is_said_after_its_output():
    assert describe(ExecResult("boom\n", 2), 60) == "boom\n[exit code 2]"
    assert describe(ExecResult("", 1), 60) == "(no output)\n[exit code 1]"
    killed = describe(ExecResult("partial", None, timed_out=True, truncated_bytes=5), 30)
    assert killed.splitlines() == [
        "partial",
        "[5 bytes cut from the middle of the output]",
        "[the command ran past its 30 s timeout and was killed]",
    ]


def test_clip_keeps_head_and_tail_and_says_how_much_went():
    text = "a" * 100 + "b" * 100

    clipped = clip(text, 50)

    assert clipped == "a" * 25 + "\n[150 characters cut]\n" + "b" * 25
    assert clip(text, 500) == text


def test_an_action_summary_is_one_short_line():
    long = Action(
        step=1, tool="bash", arguments={"command": "pytest -q\n" + "x" * 200}, call_id="c"
    )
    edit = Action(
        step=1,
        tool="str_replace_editor",
        arguments={"command": "str_replace", "path": "src/app.py", "old_str": "a"},
        call_id="c",
    )

    assert len(long.summary()) == 80 and long.summary().startswith("bash: pytest -q x")
    assert "\n" not in long.summary()
    assert edit.summary() == "str_replace_editor: str_replace src/app.py"
