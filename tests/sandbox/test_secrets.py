"""No secret of the worker reaches the sandbox: not its environment, files, or the clone."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from sandbox.config import SandboxConfig
from sandbox.docker_sandbox import DockerSandbox
from sandbox.git import clone, git

SECRETS = {
    "GITHUB_TOKEN": "ghs_" + secrets.token_hex(18),
    "LLM_API_KEY": "sk-test-" + secrets.token_hex(16),
    "WEBHOOK_SECRET": "whsec-" + secrets.token_hex(12),
}
CANARY = "canary-" + secrets.token_hex(8)


def upstream_repository(where: Path) -> Path:
    """A bare repository with one commit, standing in for GitHub."""
    bare, work = where / "upstream.git", where / "seed"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "README.md").write_text("hello\n")
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "-C", str(work), "add", "."], check=True)
    subprocess.run(["git", "-C", str(work), *identity, "commit", "-qm", "seed"], check=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", str(bare), "HEAD:main"], check=True)
    return bare


@pytest.fixture(scope="module")
def box(
    docker_client: docker.DockerClient,
    sandbox_config: SandboxConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DockerSandbox]:
    """A sandbox made by a process holding secrets in its environment and in host files."""
    host = tmp_path_factory.mktemp("host")
    (host / ".env").write_text("".join(f"{k}={v}\n" for k, v in SECRETS.items()))
    upstream = upstream_repository(host)
    with pytest.MonkeyPatch.context() as environment:
        for name, value in SECRETS.items():
            environment.setenv(name, value)
        sandbox = DockerSandbox.create(docker_client, sandbox_config, job_id="secrets")
        clone(
            f"file://{upstream}", sandbox.host_workspace, token=SECRETS["GITHUB_TOKEN"], ref="main"
        )
        sandbox.adopt_workspace()
    yield sandbox
    sandbox.close()


def found(text: str) -> list[str]:
    return [name for name, value in SECRETS.items() if value in text]


def test_no_secret_in_any_process_environment(box: DockerSandbox) -> None:
    environments = box.run(r"for f in /proc/[0-9]*/environ; do tr '\0' '\n' < $f; done").output
    assert "HOME=/home/sandbox" in environments  # the environments were readable
    assert found(environments) == []
    assert found(box.run("env").output) == []


def test_no_secret_anywhere_in_the_filesystem(box: DockerSandbox) -> None:
    box.run(f"echo {CANARY} > /workspace/canary.txt && echo {CANARY} > /tmp/canary.txt")
    patterns = " ".join(f"-e {value}" for value in [CANARY, *SECRETS.values()])
    search = f"grep -r -l -s -F {patterns} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev"
    result = box.run(search, timeout=120)
    assert not result.timed_out
    # The canary proves the search reads the workspace and tmpfs; nothing else may match.
    assert sorted(result.output.split()) == ["/tmp/canary.txt", "/workspace/canary.txt"]
    box.run("rm -f /workspace/canary.txt /tmp/canary.txt")


def test_the_clone_holds_no_token(box: DockerSandbox) -> None:
    config = box.read_file(".git/config").decode()
    assert "url = file://" in config
    assert found(config) == []
    assert found(box.run("git config --list --show-origin").output) == []
    assert box.run("git log --format=%s").output == "seed\n"
    status = subprocess.run(
        git(box.host_workspace, "status", "--porcelain"), capture_output=True, text=True
    )
    assert (status.returncode, status.stdout) == (0, "")  # host-side git works on it too
