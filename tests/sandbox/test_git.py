"""Host-side clone: the token reaches the server as a header and is stored nowhere."""

from __future__ import annotations

import base64
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from sandbox.git import clone

TOKEN = "ghs_" + "a1" * 18


class RecordingHandler(BaseHTTPRequestHandler):
    """Answers every request 404 after recording its Authorization header."""

    seen: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        RecordingHandler.seen.append(self.headers.get("Authorization"))
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    RecordingHandler.seen = []
    httpd = HTTPServer(("127.0.0.1", 0), RecordingHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/owner/repo.git"
    httpd.shutdown()


def test_the_token_travels_as_a_header_only(server: str, tmp_path: Path) -> None:
    with pytest.raises(subprocess.CalledProcessError) as failed:
        clone(server, tmp_path, token=TOKEN)  # the fake server has no repository
    expected = "Basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert RecordingHandler.seen and set(RecordingHandler.seen) == {expected}
    assert TOKEN not in " ".join(failed.value.cmd)  # not in argv, where `ps` shows it
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and TOKEN in p.read_text("latin-1")]
    assert leftovers == []


def test_without_a_token_no_header_is_sent(server: str, tmp_path: Path) -> None:
    with pytest.raises(subprocess.CalledProcessError):
        clone(server, tmp_path)
    assert RecordingHandler.seen and set(RecordingHandler.seen) == {None}
