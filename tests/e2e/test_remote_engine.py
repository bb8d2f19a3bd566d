"""A worker using a Docker engine that is not this machine's own: with the engine's API as the
only channel to the sandbox, any engine the worker can reach will do (DOCKER_HOST)."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from tests.e2e.conftest import REPO, issue_labeled, running_stack
from tests.e2e.test_issue_to_pr import FIX


@pytest.fixture(scope="module")
def second_engine(sandbox_image: str, docker_client: docker.DockerClient) -> Iterator[str]:
    """A second dockerd of the tests' own (its own socket, data root and containerd), started
    as CI starts the first, holding the sandbox image loaded through the API (no registry)."""
    root = Path(f"/tmp/wrench-engine-{secrets.token_hex(3)}")
    root.mkdir()
    url = f"unix://{root}/docker.sock"
    daemon = subprocess.Popen(
        [
            shutil.which("dockerd") or "dockerd",
            f"--host={url}",
            f"--data-root={root}/data",
            f"--exec-root={root}/exec",
            f"--pidfile={root}/dockerd.pid",
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(root / "dockerd.log").open("w"),
    )
    try:
        client = _connect(url)
        client.images.load(docker_client.images.get(sandbox_image).save(named=sandbox_image))
        yield url
    finally:
        daemon.terminate()
        daemon.wait(60)
        shutil.rmtree(root, ignore_errors=True)


def _connect(url: str) -> docker.DockerClient:
    """A client of the engine at `url`, once it answers (a minute at most)."""
    for _ in range(240):
        try:
            return docker.DockerClient(base_url=url)
        except docker.errors.DockerException:
            time.sleep(0.25)
    raise AssertionError(f"the second engine at {url} did not start")


def test_a_job_runs_on_a_remote_engine_and_no_container_has_a_bind_mount(
    second_engine: str, tmp_path: Path, redis_url: str, redis, sandbox_image: str
) -> None:
    remote = docker.DockerClient(base_url=second_engine)
    inspected: list[dict] = []
    instance = f"remote-{secrets.token_hex(3)}"
    events = remote.events(decode=True, filters={"label": f"wrench.instance={instance}"})

    def watch() -> None:  # inspect every container Wrench starts there, as it starts
        for event in events:
            if event.get("Action") == "start":
                inspected.append(remote.api.inspect_container(event["id"]))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with running_stack(
            tmp_path, redis_url, sandbox_image, instance, DOCKER_HOST=second_engine
        ) as stack:
            stack.model.replies[:] = FIX
            [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
            job = stack.wait(job_id)
            assert job.get_status().value == "finished", stack.log("worker")
            assert "!" in stack.github.read_file(REPO, "wrench/issue-1", "hello.py")
            local = docker.from_env().containers.list(
                all=True, filters={"label": f"wrench.instance={instance}"}
            )
            assert local == []  # nothing ran on this machine's own engine
    finally:
        events.close()
        watcher.join(10)
    assert inspected  # the pool's, one of which the job took (or a cold one of its own)
    for container in inspected:
        assert container["HostConfig"]["Binds"] in (None, [])
        assert [m["Type"] for m in container["Mounts"]] == ["volume"]
