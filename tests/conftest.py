"""Shared test fixtures: a private real Redis server, settings, and signed GitHub deliveries."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis

from wrench.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SHARED_WEBHOOKS = ROOT.parent / "shared" / "fixtures" / "github-webhooks"
WEBHOOK_SECRET = "test-webhook-secret-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server of the tests' own, on a free loopback port."""
    server = shutil.which("redis-server")
    assert server, "redis-server is not installed: run scripts/test, which installs it"
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [
            server,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
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
    yield url
    proc.terminate()
    proc.wait(5)


@pytest.fixture
def redis(redis_url: str) -> Iterator[Redis]:
    client = Redis.from_url(redis_url)
    client.flushall()
    yield client
    client.flushall()
    client.close()


@pytest.fixture
def settings(redis_url: str) -> Settings:
    """Settings for tests: nothing read from the environment or a `.env` file."""
    return Settings(
        _env_file=None,
        WEBHOOK_SECRET=WEBHOOK_SECRET,
        BOT_NAME="wrench",
        REDIS_URL=redis_url,
        QUEUE_NAME="wrench-test",
    )


@pytest.fixture
def shared_webhooks() -> Path:
    assert SHARED_WEBHOOKS.is_dir(), f"missing {SHARED_WEBHOOKS}: clone beside ../shared"
    return SHARED_WEBHOOKS
