"""Serving bare git repositories over smart HTTP through `git http-backend`, as GitHub does."""

from __future__ import annotations

import subprocess
from http.server import BaseHTTPRequestHandler
from pathlib import Path


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, plain or chunked (git sends large pushes chunked)."""
    if handler.headers.get("Transfer-Encoding", "").lower() != "chunked":
        return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    body = bytearray()
    while size := int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16):
        body += handler.rfile.read(size)
        handler.rfile.readline()
    handler.rfile.readline()
    return bytes(body)


def serve_git(handler: BaseHTTPRequestHandler, root: Path, path_info: str, query: str) -> None:
    """Run `git http-backend` as CGI for one request and relay its answer."""
    body = read_body(handler) if handler.command == "POST" else b""
    env = {
        "GIT_PROJECT_ROOT": str(root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": path_info,
        "QUERY_STRING": query,
        "REQUEST_METHOD": handler.command,
        "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
        "CONTENT_LENGTH": str(len(body)),
        "REMOTE_USER": "x-access-token",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_CONTENT_ENCODING": handler.headers.get("Content-Encoding", ""),
        "GIT_PROTOCOL": handler.headers.get("Git-Protocol", ""),
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.run(
        ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
    )
    head, _, payload = proc.stdout.partition(b"\r\n\r\n")
    status, headers = 200, []
    for line in head.decode().split("\r\n"):
        name, _, value = line.partition(": ")
        if name.lower() == "status":
            status = int(value.split()[0])
        elif name:
            headers.append((name, value))
    handler.send_response(status)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
