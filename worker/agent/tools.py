"""The tools offered to the model: their schemas, checking its calls, running them in a sandbox."""

from __future__ import annotations

import json
import time
from typing import Any

from sandbox.base import ExecResult, Sandbox
from worker.agent.editor import EditError, FileEditor
from worker.agent.events import Action, Observation
from worker.agent.llm import ToolCall


def _function(name: str, description: str, properties: dict, required: list[str]) -> dict:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


BASH = _function(
    "bash",
    "Run a bash command in a persistent shell (cwd and exported variables carry over). "
    "Output is stdout and stderr together, the middle cut when long.",
    {"command": {"type": "string", "description": "The command, e.g. `pytest -q tests/x.py`."}},
    ["command"],
)
EDITOR = _function(
    "str_replace_editor",
    "View, create and edit files. `view` shows a file with line numbers, or a directory's files "
    "two levels deep. `create` writes a whole file. `str_replace` replaces `old_str`, which must "
    "occur exactly once, with `new_str`. `insert` adds `new_str` after line `insert_line` "
    "(0 for the top). `undo_edit` reverts the last edit of the file. Paths are relative to the "
    "repository root or absolute.",
    {
        "command": {
            "type": "string",
            "enum": ["view", "create", "str_replace", "insert", "undo_edit"],
        },
        "path": {"type": "string"},
        "file_text": {"type": "string", "description": "`create`: the file's content."},
        "old_str": {"type": "string", "description": "`str_replace`: exact text to replace."},
        "new_str": {"type": "string", "description": "`str_replace`, `insert`: the new text."},
        "insert_line": {"type": "integer", "description": "`insert`: the line to insert after."},
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "`view`: [first, last] lines to show; last -1 means to the end.",
        },
    },
    ["command", "path"],
)
FINISH = _function(
    "finish",
    "End the task. Call it once the work is done and checked, or when it cannot be done.",
    {
        "message": {
            "type": "string",
            "description": "For the user: what changed and how it was checked, or why not.",
        }
    },
    ["message"],
)
TOOLS: tuple[dict[str, Any], ...] = (BASH, EDITOR, FINISH)
_SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
_TYPES: dict[str, type] = {"string": str, "integer": int, "array": list}


class FormatError(Exception):
    """A reply or tool call the model can correct; the message goes back to it."""


class Submitted(Exception):  # noqa: N818 (a signal, not an error)
    """The model called `finish`; carries its message to the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def parse_call(call: ToolCall, step: int) -> Action:
    """The call as an `Action`, or `FormatError` saying what is wrong with it."""
    schema = _SCHEMAS.get(call.name)
    if schema is None:
        raise FormatError(f"There is no tool {call.name!r}. The tools are: {', '.join(_SCHEMAS)}.")
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        raise FormatError(f"The arguments of {call.name} are not valid JSON ({exc}).") from None
    if not isinstance(arguments, dict):
        raise FormatError(f"The arguments of {call.name} must be a JSON object.")
    for name in schema["required"]:
        if name not in arguments:
            raise FormatError(f"{call.name} needs the argument {name!r}.")
    for name, value in arguments.items():
        expected = schema["properties"].get(name, {}).get("type")
        if expected and (not isinstance(value, _TYPES[expected]) or isinstance(value, bool)):
            raise FormatError(f"The argument {name!r} of {call.name} must be a JSON {expected}.")
    return Action(step=step, tool=call.name, arguments=arguments, call_id=call.id)


class Toolbox:
    """Runs checked actions against the sandbox and says what happened."""

    def __init__(self, sandbox: Sandbox, max_output_chars: int = 12_000) -> None:
        self.sandbox = sandbox
        self.editor = FileEditor(sandbox, max_output_chars)
        self.max_output_chars = max_output_chars

    def run(self, action: Action, timeout: float) -> Observation:
        """The observation of one action; raises `Submitted` for `finish`."""
        start = time.perf_counter()
        exit_code, error = None, False
        if action.tool == "finish":
            raise Submitted(action.arguments["message"])
        if action.tool == "bash":
            result = self.sandbox.run(action.arguments["command"], timeout=timeout)
            content = describe(result, timeout)
            exit_code, error = result.exit_code, result.exit_code != 0
        else:
            try:
                content = self.editor(action.arguments)
            except EditError as exc:
                content, error = f"Error: {exc}", True
        return Observation(
            step=action.step,
            content=clip(content, self.max_output_chars),
            call_id=action.call_id,
            tool=action.tool,
            error=error,
            exit_code=exit_code,
            duration_s=time.perf_counter() - start,
        )


def describe(result: ExecResult, timeout: float) -> str:
    """A command's output with what the model must know about how it ended."""
    notes = []
    if result.truncated_bytes:
        notes.append(f"[{result.truncated_bytes} bytes cut from the middle of the output]")
    if result.timed_out:
        notes.append(f"[the command ran past its {timeout:.0f} s timeout and was killed]")
    elif result.exit_code != 0:
        notes.append(f"[exit code {result.exit_code}]")
    output = result.output.rstrip("\n") if notes else result.output
    return "\n".join([output if output.strip() else "(no output)", *notes])


def clip(text: str, limit: int) -> str:
    """The text, its middle cut to fit `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[{len(text) - 2 * half} characters cut]\n{text[-half:]}"
