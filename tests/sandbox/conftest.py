"""Sandbox fixtures: a real Docker engine, the test image, and sandboxes of each implementation.

The shell behaviour tests run against every Sandbox implementation (`sandbox` fixture). Docker
tests use their own image, built offline by the same builder as production (about a minute on
a fresh machine, then cached by its recipe tag), and their own label namespace, so they never
touch another test run's or a deployment's containers.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from sandbox.config import SandboxConfig
from sandbox.docker_sandbox import DockerSandbox
from sandbox.local import LocalSandbox
from tests.conftest import HEAD, TAIL, purge


@pytest.fixture
def fresh_config(
    sandbox_config: SandboxConfig, docker_client: docker.DockerClient, tmp_path: Path
) -> Iterator[SandboxConfig]:
    """A label namespace and workspace root for one test, purged afterwards."""
    config = sandbox_config.model_copy(
        update={"instance": f"test-{secrets.token_hex(4)}", "slot_root": tmp_path / "ws"}
    )
    yield config
    purge(docker_client, config.instance)


@pytest.fixture(scope="module")
def local_sandbox() -> Iterator[LocalSandbox]:
    sandbox = LocalSandbox(config=SandboxConfig(output_head_bytes=HEAD, output_tail_bytes=TAIL))
    yield sandbox
    sandbox.close()


@pytest.fixture(params=["local", "docker"])
def sandbox(request: pytest.FixtureRequest) -> LocalSandbox | DockerSandbox:
    """A module-wide sandbox, back in its workspace with a clean slate of test files."""
    box = request.getfixturevalue(f"{request.param}_sandbox")
    reset = box.run(f"cd {box.workspace} && rm -rf -- ./* ./.[!.]* && unset FOO", timeout=30)
    assert reset.exit_code == 0, reset.output
    return box
