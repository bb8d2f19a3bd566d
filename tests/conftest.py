"""Shared test fixtures: a private real Redis server, settings, and signed GitHub deliveries."""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from redis import Redis

from sandbox import container
from sandbox.config import SandboxConfig
from sandbox.docker_sandbox import DockerSandbox
from sandbox.image import ImageRecipe, ensure_image
from wrench.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
WEBHOOKS = ROOT / "tests" / "fixtures" / "github-webhooks"
"""Real GitHub webhook payloads, kept in the repository (see the README there)."""
WEBHOOK_SECRET = "test-webhook-secret-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_redis(workdir: Path) -> tuple[subprocess.Popen, str]:
    """A real redis-server of our own on a free loopback port, and its URL, once it answers."""
    server = shutil.which("redis-server")
    assert server, "redis-server is not installed: run scripts/test, which installs it"
    port = free_port()
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
    return proc, url


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The tests' own redis-server."""
    proc, url = start_redis(tmp_path_factory.mktemp("redis"))
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


# Small caps so that output tests stay fast and readable.
HEAD, TAIL = 2000, 1000
TEST_RECIPE = ImageRecipe(
    "wrench-sandbox-test",
    ("bash", "coreutils", "git", "python3", "curl", "procps", "ca-certificates"),
)


def purge(client: docker.DockerClient, instance: str) -> list[str]:
    """Remove every container (and workspace volume) of an instance; the names of the
    containers that were left."""
    found = client.containers.list(all=True, filters={"label": f"{container.INSTANCE}={instance}"})
    for leftover in found:
        container.remove(client, leftover.id)
    container.remove_volumes(client, instance)
    return [leftover.name for leftover in found]


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    client = docker.from_env()
    assert client.ping(), "no Docker engine: run scripts/test, which starts one"
    yield client
    client.close()


@pytest.fixture(scope="session")
def sandbox_image(docker_client: docker.DockerClient) -> str:
    return ensure_image(docker_client, TEST_RECIPE)


@pytest.fixture(scope="session")
def sandbox_config(
    sandbox_image: str, docker_client: docker.DockerClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SandboxConfig]:
    """Tight limits so that abuse tests finish fast; a label namespace of this run's own."""
    config = SandboxConfig(
        image=sandbox_image,
        memory="256m",
        cpus=1.0,
        pids_limit=128,
        tmp_size="64m",
        output_head_bytes=HEAD,
        output_tail_bytes=TAIL,
        instance=f"test-{secrets.token_hex(4)}",
        slot_root=tmp_path_factory.mktemp("workspaces"),
        pool_size=2,
    )
    yield config
    assert purge(docker_client, config.instance) == [], "a test left containers behind"


@pytest.fixture(scope="module")
def docker_sandbox(
    docker_client: docker.DockerClient, sandbox_config: SandboxConfig
) -> Iterator[DockerSandbox]:
    """One hardened container per test module, shared by its tests (which clean up after)."""
    box = DockerSandbox.create(docker_client, sandbox_config, job_id="module-job")
    yield box
    box.close()
