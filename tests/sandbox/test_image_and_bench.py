"""The image builder's cache and ownership rules, and the benchmark's output format."""

from __future__ import annotations

import dataclasses
import io
import re
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from sandbox.image import LABEL, ensure_image, production_recipe
from tests.conftest import ROOT, TEST_RECIPE


def test_the_tag_follows_every_input_of_the_recipe() -> None:
    tags = {
        TEST_RECIPE.tag,
        dataclasses.replace(TEST_RECIPE, packages=(*TEST_RECIPE.packages, "jq")).tag,
        dataclasses.replace(TEST_RECIPE, suite="trixie").tag,
        dataclasses.replace(TEST_RECIPE, uid=1001).tag,
    }
    assert len(tags) == 4
    assert dataclasses.replace(TEST_RECIPE).tag == TEST_RECIPE.tag


def test_the_production_recipe_has_what_the_agent_needs() -> None:
    recipe = production_recipe()
    for package in ("bash", "git", "python3", "python3-venv", "build-essential", "ripgrep"):
        assert package in recipe.packages
    dockerfile = (ROOT / "sandbox" / "Dockerfile").read_text()
    assert "packages.txt" in dockerfile and "--uid 1000" in dockerfile


def test_a_built_image_is_found_not_rebuilt(
    docker_client: docker.DockerClient, sandbox_image: str
) -> None:
    started = time.monotonic()
    assert ensure_image(docker_client, TEST_RECIPE) == sandbox_image
    assert time.monotonic() - started < 5
    image = docker_client.images.get(sandbox_image)
    assert image.labels[LABEL] == TEST_RECIPE.digest
    assert image.attrs["Config"]["User"] == "1000:1000"


@pytest.fixture
def operator_image(docker_client: docker.DockerClient) -> Iterator[str]:
    """An image under a name the builder must not overwrite: made by someone else."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        tar.addfile(tarfile.TarInfo("marker"), io.BytesIO(b""))
    name = "wrench-test-operator:mine"
    docker_client.api.import_image(
        src=archive.getvalue(), repository=name.split(":")[0], tag="mine"
    )
    yield name
    docker_client.images.remove(name, force=True)


def test_an_operators_own_image_is_left_alone(
    docker_client: docker.DockerClient, sandbox_image: str, operator_image: str
) -> None:
    before = docker_client.images.get(operator_image).id
    assert ensure_image(docker_client, TEST_RECIPE, name=operator_image) == operator_image
    assert docker_client.images.get(operator_image).id == before


def test_our_image_is_tagged_under_the_requested_name(
    docker_client: docker.DockerClient, sandbox_image: str
) -> None:
    name = "wrench-test-alias:latest"
    try:
        ensure_image(docker_client, TEST_RECIPE, name=name)
        assert docker_client.images.get(name).id == docker_client.images.get(sandbox_image).id
    finally:
        docker_client.images.remove(name)


def test_the_benchmark_prints_every_figure(sandbox_image: str) -> None:
    bench = Path(ROOT) / "bench" / "sandbox.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--runs", "2", "--image", sandbox_image, "--repo-mb", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(re.fullmatch(r"[a-z0-9_]+: [0-9.]+ ms", line) for line in lines), lines
    names = {line.split(":")[0] for line in lines}
    for figure in ("cold_start_to_first_command", "warm_acquire_to_first_command"):
        assert {f"{figure}_p50", f"{figure}_p99"} <= names
    assert "command_round_trip_p50" in names
    assert {"copy_in_2mb_repo_p99", "copy_out_1mb_change_p99"} <= names
