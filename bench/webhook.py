"""Web tier benchmark: gunicorn on loopback answering signed 25 KB `issue_comment` deliveries.

Prints ack latency at a paced 200 req/s (p50, p99), sustained requests per second under wrk,
the web workers' RSS and the time from spawn to the first answer.
Every delivery is a real trigger (an @mention by the owner), so each one is verified,
routed, de-duplicated and enqueued in a private Redis, exactly as in production.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.signatures import github_signature  # noqa: E402
from tests.conftest import free_port, start_redis  # noqa: E402

SECRET = "bench-webhook-secret"
PAYLOAD = ROOT / "tests/fixtures/github-webhooks/issue_comment/created.payload.json"
BODY_BYTES = 25 * 1024


def delivery_body() -> bytes:
    """A 25 KB comment that @mentions the bot, as an App delivery."""
    payload = json.loads(PAYLOAD.read_text())
    payload["installation"] = {"id": 1}
    payload["comment"]["body"] = "@wrench please fix this\n"
    padding = BODY_BYTES - len(json.dumps(payload))
    payload["comment"]["body"] += "x" * padding
    return json.dumps(payload).encode()


def request_bytes(port: int, body: bytes, signature: str) -> bytes:
    head = (
        f"POST /api/github/webhooks HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"X-GitHub-Event: issue_comment\r\nX-Hub-Signature-256: {signature}\r\n"
        f"X-GitHub-Delivery: {uuid.uuid4()}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def send(port: int, data: bytes) -> float:
    """One request on a fresh connection (gunicorn's sync workers close after each answer)."""
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(data)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    elapsed = time.perf_counter() - start
    if not reply.startswith(b"HTTP/1.1 202"):
        raise RuntimeError(reply[:200].decode(errors="replace"))
    return elapsed


def start_web(redis_url: str, port: int, workdir: str) -> tuple[subprocess.Popen, float]:
    env = {**os.environ, "WEBHOOK_SECRET": SECRET, "BOT_NAME": "wrench", "REDIS_URL": redis_url}
    wrench = str(Path(sys.executable).with_name("wrench"))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [wrench, "web", "--port", str(port)], env=env, cwd=workdir, stderr=subprocess.DEVNULL
    )
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if sock.recv(64).startswith(b"HTTP/1.1 200"):
                    return proc, time.perf_counter() - start
        except OSError:
            time.sleep(0.005)


def paced(port: int, body: bytes, signature: str, rate: int, seconds: float) -> list[float]:
    """Latencies of requests sent at a fixed rate from one client."""
    latencies, interval = [], 1.0 / rate
    next_at = time.perf_counter()
    for _ in range(int(rate * seconds)):
        next_at += interval
        latencies.append(send(port, request_bytes(port, body, signature)))
        time.sleep(max(0.0, next_at - time.perf_counter()))
    return latencies


WRK_SCRIPT = """
wrk.method = "POST"
local f = io.open("{body}", "rb"); wrk.body = f:read("*a"); f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-GitHub-Event"] = "issue_comment"
wrk.headers["X-Hub-Signature-256"] = "{signature}"
local n = 0
request = function()
  n = n + 1
  wrk.headers["X-GitHub-Delivery"] = "wrk-{run}-" .. n
  return wrk.format(nil, "/api/github/webhooks")
end
done = function(summary, latency, requests)
  print("non_2xx=" .. summary.errors.status)
end
"""


def sustained(port: int, body: bytes, signature: str, workdir: Path, seconds: int) -> float:
    """Requests per second from wrk (8 connections; a C client leaves the CPU to the server),
    each delivery with its own id so every one is verified, routed and enqueued."""
    (workdir / "body.json").write_bytes(body)
    script = workdir / "deliveries.lua"
    script.write_text(
        WRK_SCRIPT.format(body=workdir / "body.json", signature=signature, run=uuid.uuid4().hex[:8])
    )
    out = subprocess.run(
        ["wrk", "-t1", "-c8", f"-d{seconds}s", "-s", str(script), f"http://127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "non_2xx=0" not in out:
        raise RuntimeError(f"some deliveries were not accepted:\n{out}")
    return float(out.split("Requests/sec:")[1].split()[0])


def worker_rss_mb(master_pid: int) -> float:
    """The largest resident set among gunicorn's worker processes, in MB."""
    children = subprocess.run(["pgrep", "-P", str(master_pid)], capture_output=True, text=True)
    sizes = []
    for pid in children.stdout.split():
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                sizes.append(int(line.split()[1]) / 1024)
    return max(sizes)


def restart(redis_url: str, workdir: str) -> float:
    """Spawn to first answer of one more web process, stopped at once."""
    web, startup = start_web(redis_url, free_port(), workdir)
    web.terminate()
    web.wait()
    return startup


def import_floor() -> float:
    """What importing the web tier's libraries alone costs in a fresh interpreter."""
    code = (
        "import time; t = time.perf_counter(); import flask, redis, rq, pydantic_settings;"
        " print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout)


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        redis, redis_url = start_redis(Path(workdir))
        port = free_port()
        web, startup = start_web(redis_url, port, workdir)
        body = delivery_body()
        signature = github_signature(SECRET.encode(), body)
        try:
            paced(port, body, signature, rate=200, seconds=2)  # warm up
            latencies = sorted(paced(port, body, signature, rate=200, seconds=10))
            rate = sustained(port, body, signature, Path(workdir), seconds=10)
            rss = worker_rss_mb(web.pid)
        finally:
            web.terminate()
            web.wait()
        startups = sorted([startup, *(restart(redis_url, workdir) for _ in range(4))])
        redis.terminate()
    print(f"body_size: {len(body) / 1024:.1f} KB")
    print(f"ack_latency_p50_at_200rps: {statistics.median(latencies) * 1000:.2f} ms")
    print(f"ack_latency_p99_at_200rps: {latencies[int(len(latencies) * 0.99)] * 1000:.2f} ms")
    print(f"sustained_throughput: {rate:.0f} req/s")
    print(f"web_worker_rss: {rss:.1f} MB")
    print(f"startup_to_first_answer_p50: {statistics.median(startups) * 1000:.0f} ms")
    print(f"import_floor_flask_redis_rq_pydantic: {import_floor() * 1000:.0f} ms")


if __name__ == "__main__":
    main()
