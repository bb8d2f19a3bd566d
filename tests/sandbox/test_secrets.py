"""No secret of the worker reaches the sandbox: not its environment, files, or the clone."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import replace

import docker
import pytest

from sandbox.config import SandboxConfig
from sandbox.docker_sandbox import DockerSandbox
from tests.fakes.app_key import app_key_pair
from tests.fakes.github import FakeGitHub
from worker.git import Checkout

SECRETS = {
    "GITHUB_TOKEN": "ghs_" + secrets.token_hex(18),
    "LLM_API_KEY": "sk-test-" + secrets.token_hex(16),
    "WEBHOOK_SECRET": "whsec-" + secrets.token_hex(12),
}
CANARY = "canary-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def box(
    docker_client: docker.DockerClient,
    sandbox_config: SandboxConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DockerSandbox]:
    """A sandbox made by a process holding secrets in its environment and in host files, with
    a repository cloned (on the host, with a token) from a fake GitHub into its workspace."""
    host = tmp_path_factory.mktemp("host")
    (host / ".env").write_text("".join(f"{k}={v}\n" for k, v in SECRETS.items()))
    with FakeGitHub(host / "github", 1, app_key_pair()[1]) as github:
        github.add_repo("octo/app", {"README.md": "hello\n"})
        token = github.mint_token(4242, {"repositories": ["app"]})
        # The fake mints its own tokens: make it honour the one this process holds.
        github.tokens[SECRETS["GITHUB_TOKEN"]] = replace(token, value=SECRETS["GITHUB_TOKEN"])
        with pytest.MonkeyPatch.context() as environment:
            for name, value in SECRETS.items():
                environment.setenv(name, value)
            sandbox = DockerSandbox.create(docker_client, sandbox_config, job_id="secrets")
            url = f"{github.url}/git/octo/app.git"
            checkout = Checkout.clone(url, "main", host / "git", SECRETS["GITHUB_TOKEN"])
            with checkout.archive(sandbox.owner) as archive:
                sandbox.put_workspace(archive)
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


def test_the_clone_holds_no_token_nor_any_address(box: DockerSandbox) -> None:
    config = box.read_file(".git/config").decode()
    assert "url" not in config and "127.0.0.1" not in config
    assert found(config) == []
    assert found(box.run("git config --list --show-origin").output) == []
    assert box.run("git log --format=%s").output == "Initial commit\n"
    assert box.run("git status --porcelain").output == ""  # the agent's git works on it
