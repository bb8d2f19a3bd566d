"""The whole of Wrench against fakes on loopback: gunicorn, a real `wrench worker` process,
Redis, the Docker sandbox, a fake GitHub (REST and git) and a fake OpenAI-compatible model."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import pytest
from redis import Redis
from rq.job import Job

from tests.bot.deliveries import headers
from tests.conftest import WEBHOOK_SECRET, free_port, purge
from tests.fakes.app_key import app_key_pair
from tests.fakes.github import FakeGitHub
from tests.fakes.openai_server import FakeOpenAI, Reply, error
from wrench.settings import Settings

WRENCH = str(Path(sys.executable).with_name("wrench"))
APP_ID = 808
REPO = "octo-org/hello"
LLM_KEY = "sk-e2e-llm-key-" + secrets.token_hex(8)
SLACK_SECRET = "slack-e2e-signing-secret"
FILES = {
    "README.md": "# hello\n",
    "hello.py": 'def greet(name):\n    return "Hello, " + name\n',
}


@dataclass
class Model:
    """The fake model's script: each run follows it from the start, step by step, so that
    several jobs (one after another) all get the same replies."""

    replies: list[Reply] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> Reply:
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if step < len(self.replies):
            return self.replies[step]
        return error(500, message="e2e script exhausted")


@dataclass
class Stack:
    github: FakeGitHub
    llm: FakeOpenAI
    model: Model
    redis: Redis
    web_url: str
    env: dict[str, str]
    instance: str
    workdir: Path
    worker_pid: int = 0

    def worker_children(self) -> set[int]:
        """Processes the worker forked: the maintenance process, and a work horse per job."""
        children = set()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.worker_pid:
                children.add(int(stat.parent.name))
        return children

    def deliver(self, event: str, payload: dict[str, Any], delivery: str | None = None) -> dict:
        body = json.dumps(payload).encode()
        request = urllib.request.Request(
            f"{self.web_url}/api/github/webhooks",
            data=body,
            headers=headers(event, body, delivery),
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as failure:
            raise AssertionError(f"{failure.code}: {failure.read()!r}") from None

    def wait(self, job_id: str, timeout_s: float = 90) -> Job:
        """The job once rq says it ended (finished or failed)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            job = Job.fetch(job_id, connection=self.redis)
            if job.get_status().value in {"finished", "failed", "stopped", "canceled"}:
                return job
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} did not end within {timeout_s} s")

    def wait_for(self, condition: Callable[[], Any], timeout_s: float = 60) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if value := condition():
                return value
            time.sleep(0.2)
        raise AssertionError("condition not met in time")

    def log(self, name: str) -> str:
        """What the `web` or `worker` process printed."""
        return (self.workdir / f"{name}.log").read_text()

    def engine(self) -> docker.DockerClient:
        """The Docker engine the stack's worker uses (DOCKER_HOST, when the test sets one)."""
        return engine_client(self.env)

    def containers(self) -> list:
        client = self.engine()
        found = client.containers.list(
            all=True, filters={"label": f"wrench.instance={self.instance}"}
        )
        return [c for c in found if c.labels.get("wrench.job") or "-job-" in c.name]


def issue_labeled(number: int = 1, sender: str = "octocat") -> dict[str, Any]:
    from tests.bot.deliveries import load

    payload = load("issues/labeled.payload.json")
    payload["label"]["name"] = "wrench"
    payload["issue"]["number"] = number
    payload["repository"]["full_name"] = REPO
    payload["sender"] = {**payload["sender"], "login": sender}
    payload["installation"] = {"id": 4242}
    return payload


def settings_env(
    stack_dir: Path, github: str, llm: str, redis_url: str, image: str, instance: str
) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    return {
        **base,
        "APP_ID": str(APP_ID),
        "PRIVATE_KEY": app_key_pair()[0],
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "GITHUB_API_URL": github,
        "BOT_NAME": "wrench",
        "REDIS_URL": redis_url,
        "QUEUE_NAME": f"e2e-{instance}",
        "LLM_MODEL": "openai/e2e-model",
        "LLM_BASE_URL": llm,
        "LLM_API_KEY": LLM_KEY,
        "LLM_INPUT_USD_PER_MTOK": "1",
        "LLM_OUTPUT_USD_PER_MTOK": "2",
        "SANDBOX_IMAGE": image,
        "SANDBOX_INSTANCE": instance,
        "SANDBOX_MEMORY": "512m",
        "SANDBOX_CPUS": "1",
        "SANDBOX_POOL_SIZE": "1",
        "DATA_DIR": str(stack_dir / "data"),
        "JOB_TIMEOUT_S": "120",
        "MAX_STEPS": "8",
        "PUBLIC_URL": "http://wrench.test",
        "SLACK_SIGNING_SECRET": SLACK_SECRET,
        "SLACK_ACCESS": json.dumps({"U_ALICE": [REPO, "octo-org/not-installed"]}),
    }


def start(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        command, env=env, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT
    )


@contextmanager
def running_stack(
    workdir: Path, redis_url: str, image: str, instance: str, **settings: str
) -> Iterator[Stack]:
    """Fakes on loopback, then `wrench web` and `wrench worker` pointed at them; stops them and
    removes the instance's containers afterwards."""
    model = Model()
    with (
        FakeGitHub(workdir / "github", APP_ID, app_key_pair()[1]) as github,
        FakeOpenAI(model) as llm,
    ):
        repo = github.add_repo(REPO, FILES)
        repo.permissions.update({"octocat": "admin", "reader": "read"})
        github.add_issue(REPO, 1, "Greeting lacks punctuation", "`greet` should end with `!`.")
        env = settings_env(workdir, github.url, llm.url, redis_url, image, instance) | settings
        port = free_port()
        web = start([WRENCH, "web", "--port", str(port)], env, workdir, workdir / "web.log")
        worker = start([WRENCH, "worker"], env, workdir, workdir / "worker.log")
        redis = Redis.from_url(redis_url)
        url = f"http://127.0.0.1:{port}"
        stack = Stack(github, llm, model, redis, url, env, instance, workdir, worker.pid)
        try:
            stack.wait_for(lambda: _up(stack.web_url), timeout_s=30)
            stack.wait_for(lambda: _worker_ready(redis, env["QUEUE_NAME"]), timeout_s=60)
            yield stack
        finally:
            maintenance = stack.worker_children()
            for proc in (web, worker):
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:  # a job still running: rq waits for it
                    proc.kill()
                    proc.wait()
            # The worker's children notice its end within a second; then nothing refills.
            stack.wait_for(
                lambda: not any(Path(f"/proc/{pid}").exists() for pid in maintenance), timeout_s=10
            )
            purge(engine_client(env), instance)


@pytest.fixture
def stack(tmp_path, redis_url, redis, sandbox_image) -> Iterator[Stack]:
    with running_stack(tmp_path, redis_url, sandbox_image, f"e2e-{secrets.token_hex(3)}") as s:
        yield s


def engine_client(env: dict[str, str]) -> docker.DockerClient:
    if "DOCKER_HOST" in env:
        return docker.DockerClient(base_url=env["DOCKER_HOST"])
    return docker.from_env()


def _up(url: str) -> bool:
    try:
        urllib.request.urlopen(f"{url}/healthz", timeout=1).close()
        return True
    except OSError:
        return False


def _worker_ready(redis: Redis, queue: str) -> bool:
    from rq import Worker

    return any(queue in w.queue_names() for w in Worker.all(connection=redis))


def settings_for(stack: Stack) -> Settings:
    """The settings the stack's processes run with, as far as signing job links needs."""
    return Settings(
        _env_file=None,
        WEBHOOK_SECRET=stack.env["WEBHOOK_SECRET"],
        PUBLIC_URL=stack.env["PUBLIC_URL"],
    )


def commented(
    body: str,
    number: int = 1,
    sender: str = "octocat",
    on_pull: bool = False,
    comment_id: int = 555,
) -> dict[str, Any]:
    from tests.bot.deliveries import load

    payload = load("issue_comment/created.payload.json")
    payload["issue"]["number"] = number
    if on_pull:
        payload["issue"]["pull_request"] = {"url": "..."}
    payload["comment"] = {
        **payload["comment"],
        "id": comment_id,
        "body": body,
        "author_association": "OWNER",
    }
    payload["repository"]["full_name"] = REPO
    payload["sender"] = {**payload["sender"], "login": sender}
    payload["installation"] = {"id": 4242}
    return payload


def review_commented(body: str, number: int, comment_id: int) -> dict[str, Any]:
    from tests.bot.deliveries import load

    payload = load("pull_request_review_comment/created.payload.json")
    payload["pull_request"]["number"] = number
    payload["comment"] = {**payload["comment"], "id": comment_id, "body": body}
    payload["repository"]["full_name"] = REPO
    payload["sender"] = {**payload["sender"], "login": "octocat"}
    payload["installation"] = {"id": 4242}
    return payload
