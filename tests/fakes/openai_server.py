"""A fake OpenAI-compatible chat server on 127.0.0.1 that replays a script and records requests."""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHARS_PER_TOKEN = 4
"""The fake's tokenizer: one token per four characters of JSON, rounded up."""


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status, a JSON body (usage is filled in) and a delay before it."""

    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Request:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)
    """When it arrived, as a `time.monotonic()` instant."""


def tool_call(name: str, arguments: dict[str, Any] | str, **kwargs: Any) -> Reply:
    """A reply calling one tool; a `str` for arguments is sent as is (to script malformed JSON)."""
    return tool_calls((name, arguments), **kwargs)


def tool_calls(*calls: tuple[str, dict[str, Any] | str], content: str | None = None) -> Reply:
    """A reply calling several tools at once, with optional text beside the calls."""
    wire = [
        {
            "id": f"call_{next(_ids)}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for name, args in calls
    ]
    message = {"role": "assistant", "content": content, "tool_calls": wire}
    return Reply(_completion(message, "tool_calls"))


def text(content: str) -> Reply:
    """A reply with text and no tool call."""
    return Reply(_completion({"role": "assistant", "content": content}, "stop"))


def error(status: int, retry_after: float | None = None, message: str = "scripted error") -> Reply:
    """An HTTP error in OpenAI's error format, with a Retry-After header when given."""
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    body = {"error": {"message": message, "type": "server_error", "code": str(status)}}
    return Reply(body, status=status, headers=headers)


def slow(reply: Reply, delay_s: float) -> Reply:
    """The same reply, sent only after `delay_s` seconds."""
    return Reply(reply.body, reply.status, reply.headers, delay_s)


_ids = itertools.count(1)


def _completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }


def count_tokens(value: Any) -> int:
    """The fake's token count of any JSON value."""
    return math.ceil(len(json.dumps(value)) / CHARS_PER_TOKEN)


class FakeOpenAI:
    """`POST /v1/chat/completions` answered from a script; every request body is kept."""

    def __init__(self, script: Iterable[Reply] | Callable[[dict[str, Any]], Reply] = ()) -> None:
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._script: Iterator[Reply] | None = None
        self._answer: Callable[[dict[str, Any]], Reply] | None = None
        if callable(script):
            self._answer = script
        else:
            self._script = iter(list(script))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL to give an OpenAI client, ending in `/v1`."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            rest = list(self._script or ())
            self._script = iter(rest + list(replies))

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON body of every request so far."""
        return [request.body for request in self.requests]

    def prompt_tokens(self) -> int:
        """Prompt tokens summed over every request so far, as this server counts them."""
        return sum(prompt_tokens_of(body) for body in self.bodies())

    def next_reply(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._answer:
                return self._answer(request.body)
            reply = next(self._script, None) if self._script else None
        return reply or error(500, message="fake server: the script has no more replies")


def prompt_tokens_of(body: dict[str, Any]) -> int:
    """The prompt tokens the server counts for one request: its messages and its tools."""
    return count_tokens(body.get("messages", [])) + count_tokens(body.get("tools", []))


def _with_usage(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    if reply.status != 200:
        return reply.body
    prompt = prompt_tokens_of(body)
    completion = count_tokens(reply.body["choices"][0]["message"])
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return {**reply.body, "model": body.get("model", "fake"), "usage": usage}


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: without this each request stalls ~40 ms.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:  # noqa: N802 (the name http.server dispatches to)
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                return
            reply = fake.next_reply(Request(self.path, dict(self.headers), body))
            if reply.delay_s:
                time.sleep(reply.delay_s)
            self._send(reply.status, _with_usage(reply, body), reply.headers)

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a scripted slow reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
