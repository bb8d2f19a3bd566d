"""The reaper after a simulated worker crash, and what it must leave alone."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from multiprocessing.connection import Connection

import docker
import pytest
from docker.errors import NotFound

from sandbox import container
from sandbox.config import SandboxConfig
from sandbox.pool import WarmPool
from sandbox.reaper import STARTING_GRACE_S, reap
from sandbox.slots import Slot, slots
from tests.conftest import purge


def crashing_worker(config: SandboxConfig, out: Connection) -> None:
    """A job process that acquires a sandbox, starts work in it, and dies without cleaning up."""
    sandbox = WarmPool(docker.from_env(), config).acquire("crashed-job")
    sandbox.run("echo work > notes.txt")
    out.send((sandbox.container_id, str(sandbox.slot.path)))
    os.kill(os.getpid(), signal.SIGKILL)


def exists(client: docker.DockerClient, container_id: str) -> bool:
    try:
        client.api.inspect_container(container_id)
    except NotFound:
        return False
    return True


def test_a_crashed_workers_sandbox_is_reaped(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe()
    worker = context.Process(target=crashing_worker, args=(fresh_config, send))
    worker.start()
    container_id, slot_path = receive.recv()
    worker.join(30)
    assert worker.exitcode == -signal.SIGKILL
    assert exists(docker_client, container_id)  # the crash left it running

    survivor = WarmPool(docker_client, fresh_config).acquire("live-job")
    try:
        alive = {"live-job"}
        removed = reap(docker_client, fresh_config, job_alive=alive.__contains__)
        assert removed == [container_id]
        assert not exists(docker_client, container_id)
        assert not os.path.exists(slot_path)
        assert survivor.run("echo untouched").output == "untouched\n"
    finally:
        survivor.close()


def test_idle_containers_are_reaped_only_when_stale(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    pool = WarmPool(docker_client, fresh_config)
    pool.refill()
    idle = {slot.ready().container for slot in pool.idle()}  # type: ignore[union-attr]
    assert reap(docker_client, fresh_config, job_alive=lambda job: False) == []
    later = time.time() + fresh_config.pool_max_idle_s + 1
    assert set(reap(docker_client, fresh_config, lambda job: False, now=later)) == idle
    assert slots(fresh_config.slot_root, fresh_config.instance) == []


def test_orphaned_slot_directories_are_removed_after_a_grace(
    fresh_config: SandboxConfig, docker_client: docker.DockerClient
) -> None:
    orphan = Slot.create(fresh_config.slot_root, fresh_config.instance)
    reap(docker_client, fresh_config, lambda job: False)
    assert orphan.path.exists()  # it may be a start in progress
    reap(docker_client, fresh_config, lambda job: False, now=time.time() + STARTING_GRACE_S + 1)
    assert not orphan.path.exists()


def test_workspace_volumes_whose_container_is_gone_are_removed(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig, sandbox_config: SandboxConfig
) -> None:
    """A worker that died between taking a sandbox's changes and closing it leaves a volume."""
    ours = WarmPool(docker_client, fresh_config).acquire("took-its-changes")
    theirs = WarmPool(docker_client, sandbox_config).acquire("another-instance")
    try:
        for sandbox in (ours, theirs):
            sandbox.run("echo data > kept.txt")
            container.remove(docker_client, sandbox.container_id, volumes=False)

        def volumes(instance: str) -> list:
            label = {"label": f"{container.INSTANCE}={instance}"}
            return docker_client.api.volumes(filters=label)["Volumes"] or []

        assert len(volumes(fresh_config.instance)) == 1
        reap(docker_client, fresh_config, job_alive=lambda job: True)
        assert volumes(fresh_config.instance) == []
        assert len(volumes(sandbox_config.instance)) == 1  # another instance's: left alone
    finally:
        ours.close()
        theirs.close()


def test_two_deployments_on_one_engine_keep_out_of_each_others_way(
    docker_client: docker.DockerClient, sandbox_image: str, tmp_path
) -> None:
    """Staging and production (or a developer's `wrench run`) on one engine, with the default
    instance: each deployment makes up its own once, and its reaper touches no other's."""
    from sandbox.config import deployment_instance
    from wrench.settings import Settings

    def deployment(name: str) -> SandboxConfig:
        settings = Settings(_env_file=None, DATA_DIR=tmp_path / name, SANDBOX_IMAGE=sandbox_image)
        return SandboxConfig.from_settings(settings).model_copy(update={"pool_size": 1})

    production, staging = deployment("production"), deployment("staging")
    assert production.instance != staging.instance
    assert production.instance == deployment("production").instance  # kept, not remade
    assert deployment_instance(tmp_path / "production") == production.instance
    busy = WarmPool(docker_client, production).acquire("a-long-job")
    try:
        WarmPool(docker_client, staging).refill()
        later = time.time() + production.pool_max_idle_s + 1
        # Staging's reaper, knowing no job of production's, at a time that makes idle ones stale.
        reap(docker_client, staging, job_alive=lambda job: False, now=later)
        assert exists(docker_client, busy.container_id)
        assert busy.run("echo still mine").output == "still mine\n"
    finally:
        busy.close()
        purge(docker_client, staging.instance)
        purge(docker_client, production.instance)


def test_other_instances_are_never_touched(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig, sandbox_config: SandboxConfig
) -> None:
    other = WarmPool(docker_client, sandbox_config).acquire("other-instance-job")
    try:
        assert reap(docker_client, fresh_config, job_alive=lambda job: False) == []
        assert other.run("echo mine").output == "mine\n"
    finally:
        other.close()


def test_when_the_job_store_cannot_answer_the_sandbox_is_kept(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig
) -> None:
    def unreachable(job_id: str) -> bool:
        raise ConnectionError("redis is down")

    sandbox = WarmPool(docker_client, fresh_config).acquire("unknown-job")
    try:
        assert reap(docker_client, fresh_config, job_alive=unreachable) == []
        labels = docker_client.api.inspect_container(sandbox.container_id)["Config"]["Labels"]
        assert labels[container.INSTANCE] == fresh_config.instance
    finally:
        sandbox.close()


@pytest.mark.parametrize("owner", ["", None])
def test_claims_in_progress_and_fresh_idle_ones_are_left_alone(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig, owner: str | None
) -> None:
    pool = WarmPool(docker_client, fresh_config.model_copy(update={"pool_size": 1}))
    pool.refill()
    (slot,) = pool.idle()
    if owner is not None:
        (slot.path / "owner").write_text(owner)  # O_EXCL done, job id not yet written
    assert reap(docker_client, fresh_config, job_alive=lambda job: False) == []
