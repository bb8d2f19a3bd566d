"""The warm pool: fast acquire, refill, no container ever handed out twice, cold fallback."""

from __future__ import annotations

import multiprocessing
import time
from multiprocessing.connection import Connection

import docker
import pytest
from docker.errors import NotFound

from sandbox import container
from sandbox.config import SandboxConfig
from sandbox.pool import WarmPool


def ids(pool: WarmPool) -> set[str]:
    return {ready.container for slot in pool.idle() if (ready := slot.ready())}


def test_refill_starts_idle_containers_up_to_the_pool_size(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    pool = WarmPool(docker_client, fresh_config)
    assert pool.refill() == 2
    assert pool.refill() == 0
    assert len(ids(pool)) == 2
    for container_id in ids(pool):
        attrs = docker_client.api.inspect_container(container_id)
        assert attrs["State"]["Running"]
        assert attrs["Config"]["Labels"][container.JOB] == ""
        assert attrs["Config"]["Labels"][container.POOL] == pool.key


def test_acquire_takes_an_idle_container_quickly_and_refill_replaces_it(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    pool = WarmPool(docker_client, fresh_config)
    pool.refill()
    idle = ids(pool)
    started = time.perf_counter()
    sandbox = pool.acquire("job-42")
    first = sandbox.run("echo ready")
    elapsed = time.perf_counter() - started
    try:
        assert first.output == "ready\n"
        assert elapsed < 1.0  # the benchmark holds the real target (p99 < 300 ms)
        assert sandbox.container_id in idle
        assert sandbox.run("ls -A /workspace").output == ""
        name = docker_client.api.inspect_container(sandbox.container_id)["Name"]
        assert name.endswith("-job-job-42")
        assert len(ids(pool)) == 1
        assert pool.refill_in_background().join(30) is None
        assert len(ids(pool)) == 2
        assert sandbox.container_id not in ids(pool)
    finally:
        sandbox.close()


def test_a_closed_sandbox_is_gone_and_never_handed_out_again(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    config = fresh_config.model_copy(update={"pool_size": 1})
    pool = WarmPool(docker_client, config)
    pool.refill()
    first = pool.acquire("job-a")
    first.close()
    with pytest.raises(NotFound):
        docker_client.api.inspect_container(first.container_id)
    assert not first.slot.path.exists()
    pool.refill()
    second = pool.acquire("job-b")
    third = pool.acquire("job-c")  # the pool is empty again: a cold start
    try:
        used = {first.container_id, second.container_id, third.container_id}
        assert len(used) == 3
        labels = docker_client.api.inspect_container(third.container_id)["Config"]["Labels"]
        assert (labels[container.JOB], labels[container.POOL]) == ("job-c", "")
    finally:
        second.close()
        third.close()


def test_without_a_pool_acquire_starts_cold(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    pool = WarmPool(docker_client, fresh_config.model_copy(update={"pool_size": 0}))
    assert pool.refill() == 0
    sandbox = pool.acquire("job-cold")
    try:
        assert sandbox.run("echo cold").output == "cold\n"
    finally:
        sandbox.close()


def test_idle_containers_of_another_configuration_are_not_used(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    WarmPool(docker_client, fresh_config).refill()
    other = WarmPool(docker_client, fresh_config.model_copy(update={"memory": "128m"}))
    assert other.idle() == []
    sandbox = other.acquire("job-other")
    try:
        assert docker_client.api.inspect_container(sandbox.container_id)["HostConfig"][
            "Memory"
        ] == (128 * 1024**2)
    finally:
        sandbox.close()


def test_a_dead_idle_container_is_skipped(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    pool = WarmPool(docker_client, fresh_config.model_copy(update={"pool_size": 1}))
    pool.refill()
    (dead,) = ids(pool)
    docker_client.api.kill(dead)
    sandbox = pool.acquire("job-after-crash")
    try:
        assert sandbox.container_id != dead
        assert sandbox.run("echo fine").output == "fine\n"
        with pytest.raises(NotFound):
            docker_client.api.inspect_container(dead)
    finally:
        sandbox.close()


def acquire_in_child(config: SandboxConfig, job_id: str, go: object, out: Connection) -> None:
    """In a separate process, as under rq: its own client, then acquire at the same moment."""
    client = docker.from_env()
    go.wait()  # type: ignore[attr-defined]
    sandbox = WarmPool(client, config).acquire(job_id)
    out.send(sandbox.container_id)
    out.recv()  # hold the sandbox until the parent has seen every answer
    sandbox.close()


def test_concurrent_processes_never_get_the_same_container(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    config = fresh_config.model_copy(update={"pool_size": 3})
    pool = WarmPool(docker_client, config)
    pool.refill()
    idle = ids(pool)
    context = multiprocessing.get_context("fork")
    go = context.Event()
    pipes = [context.Pipe() for _ in range(4)]
    children = [
        context.Process(target=acquire_in_child, args=(config, f"job-{n}", go, pipe[1]))
        for n, pipe in enumerate(pipes)
    ]
    for child in children:
        child.start()
    go.set()
    got = [pipe[0].recv() for pipe in pipes]
    for pipe in pipes:
        pipe[0].send("done")
    for child in children:
        child.join(60)
    assert len(set(got)) == 4
    assert len(idle & set(got)) == 3  # every idle one went to exactly one job; one started cold


def test_concurrent_refills_do_not_overshoot(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    pools = [WarmPool(docker_client, fresh_config) for _ in range(3)]
    threads = [pool.refill_in_background() for pool in pools]
    for thread in threads:
        thread.join(60)
    assert len(ids(pools[0])) == fresh_config.pool_size
