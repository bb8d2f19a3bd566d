"""End-to-end benchmark: a signed webhook to a pull request on the fake GitHub.

Usage: .venv/bin/python bench/e2e.py [--runs 10] [--image wrench-sandbox:latest]
Runs the real processes (gunicorn, `wrench worker` with a warm pool of one) against a fake
GitHub and an instant fake model on loopback, with the production sandbox image, and times a
10-step scripted fix per issue, from the webhook's POST to the job's end. Prints p50/p90 wall
time and the median of each stage the job records (queue wait, token, sandbox acquire, clone,
setup, agent, publish).

Anchor: OpenHands documents 15-60 s just for its runtime container to start. Target: p50 under
5 s with the warm pool.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])

from redis import Redis  # noqa: E402

from tests.conftest import free_port  # noqa: E402
from tests.e2e.conftest import (  # noqa: E402
    APP_ID,
    FILES,
    REPO,
    WRENCH,
    Model,
    Stack,
    _up,
    _worker_ready,
    issue_labeled,
    settings_env,
    start,
)
from tests.fakes.app_key import app_key_pair  # noqa: E402
from tests.fakes.github import FakeGitHub  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, tool_call  # noqa: E402
from wrench import events  # noqa: E402

STAGES = ("queue_wait", "token", "acquire", "clone", "setup", "agent", "publish")


def ten_steps() -> list:
    """Look around (eight steps), make the fix, finish: ten model calls."""
    looks = [
        tool_call("bash", {"command": command})
        for command in (
            "ls",
            "cat README.md",
            "cat hello.py",
            "grep -n def hello.py",
            "git status --short",
            "python3 -c 'import hello'",
            "wc -l hello.py",
            "git log --oneline | head -3",
        )
    ]
    fix = tool_call(
        "str_replace_editor",
        {
            "command": "str_replace",
            "path": "hello.py",
            "old_str": 'return "Hello, " + name',
            "new_str": 'return "Hello, " + name + "!"',
        },
    )
    return [*looks, fix, tool_call("finish", {"message": "Punctuated the greeting."})]


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def start_redis(workdir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except Exception:
            time.sleep(0.05)
    return proc, url


def measure(stack: Stack, runs: int) -> tuple[list[float], dict[str, list[float]]]:
    walls, stages = [], {name: [] for name in (*STAGES, "model_calls", "commands")}
    for number in range(1, runs + 1):
        stack.github.add_issue(REPO, number, f"Greeting {number}", "Punctuate `greet`.")
        time.sleep(1.5)  # let the pool refill between jobs, as between real triggers
        began = time.perf_counter()
        [job_id] = stack.deliver("issues", issue_labeled(number))["jobs"]
        job = stack.wait(job_id)
        walls.append(time.perf_counter() - began)
        assert job.return_value()["outcome"] == "pull_request", stack.log("worker")
        for name in STAGES:
            stages[name].append(job.meta["timings"].get(name, 0.0))
        records = events.read(stack.redis, job_id)
        stages["model_calls"].append(
            sum(r["duration_s"] for r in records if r["kind"] == "ModelReply")
        )
        stages["commands"].append(
            sum(r["duration_s"] for r in records if r["kind"] == "Observation")
        )
    return walls, stages


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--image", default="wrench-sandbox:latest")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="wrench-bench-e2e-"))
    redis_proc, redis_url = start_redis(workdir)
    model = Model(ten_steps())
    procs = []
    try:
        with (
            FakeGitHub(workdir / "github", APP_ID, app_key_pair()[1]) as github,
            FakeOpenAI(model) as llm,
        ):
            github.add_repo(REPO, FILES).permissions["octocat"] = "admin"
            env = settings_env(workdir, github.url, llm.url, redis_url, args.image, "bench-e2e")
            env["MAX_STEPS"] = "20"
            port = free_port()
            procs = [
                start([WRENCH, "web", "--port", str(port)], env, workdir, workdir / "web.log"),
                start([WRENCH, "worker"], env, workdir, workdir / "worker.log"),
            ]
            redis = Redis.from_url(redis_url)
            stack = Stack(
                github,
                llm,
                model,
                redis,
                f"http://127.0.0.1:{port}",
                env,
                "bench-e2e",
                workdir,
                procs[1].pid,
            )
            stack.wait_for(lambda: _up(stack.web_url), timeout_s=30)
            stack.wait_for(lambda: _worker_ready(redis, env["QUEUE_NAME"]), timeout_s=60)
            stack.wait_for(lambda: "warm" in _pool_state(stack), timeout_s=60)
            walls, stages = measure(stack, args.runs)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
        redis_proc.terminate()
        subprocess.run(["docker", "rm", "-f", *_leftovers()], capture_output=True)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"runs: {len(walls)} jobs of 10 model steps each")
    print(f"webhook_to_pr_p50: {percentile(walls, 0.5):.2f} s")
    print(f"webhook_to_pr_p90: {percentile(walls, 0.9):.2f} s")
    for name in (*STAGES, "model_calls", "commands"):
        print(f"stage_{name}_p50: {statistics.median(stages[name]) * 1000:.0f} ms")
    print("openhands_runtime_start_anchor: 15-60 s")


def _pool_state(stack: Stack) -> str:
    """'warm' once the maintenance process has an idle sandbox ready."""
    idle = stack.redis.hget("wrench:metrics:gauges", "wrench_sandbox_pool_idle|")
    return "warm" if idle and float(idle) >= 1 else "cold"


def _leftovers() -> list[str]:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=wrench.instance=bench-e2e"],
        capture_output=True,
        text=True,
    )
    return found.stdout.split()


if __name__ == "__main__":
    main()
