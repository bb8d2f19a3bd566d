"""The sandbox boundary against the real engine: the workspace goes in as an archive, and the
changes come out as checked data, read only once every process in the sandbox is stopped."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from docker.errors import NotFound

from sandbox.base import WorkspaceSandbox
from sandbox.boundary import ChangeLimits, ChangesRefused
from sandbox.config import SandboxConfig
from sandbox.docker_sandbox import DockerSandbox
from sandbox.local import LocalSandbox
from tests.fakes.app_key import app_key_pair
from tests.fakes.github import FakeGitHub
from worker.git import Checkout

FILES = {
    "README.md": "# app\n",
    "src/app.py": "print('app')\n",
    "src/util.py": "def util():\n    return 1\n",
    "run.sh": "#!/bin/sh\necho run\n",
}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Checkout]:
    """A job's clone of a repository with an executable script and a link, as jobs make it."""
    root = tmp_path_factory.mktemp("boundary")
    with FakeGitHub(root / "github", 1, app_key_pair()[1]) as github:
        github.add_repo("octo/app", FILES)
        token = github.mint_token(4242, {"repositories": ["app"]}).value
        checkout = Checkout.clone(f"{github.url}/git/octo/app.git", "main", root / "git", token)
        yield checkout


@pytest.fixture(params=["local", "docker"])
def box(
    request: pytest.FixtureRequest,
    checkout: Checkout,
    docker_client: docker.DockerClient,
    fresh_config: SandboxConfig,
) -> Iterator[WorkspaceSandbox]:
    """A fresh sandbox holding the checkout's workspace."""
    if request.param == "local":
        sandbox: WorkspaceSandbox = LocalSandbox()
    else:
        sandbox = DockerSandbox.create(docker_client, fresh_config, job_id="boundary")
    with checkout.archive(sandbox.owner) as archive:
        sandbox.put_workspace(archive)
    yield sandbox
    sandbox.close()


def run(box: WorkspaceSandbox, command: str) -> str:
    result = box.run(command, timeout=60)
    assert result.exit_code == 0, result.output
    return result.output


def by_path(box: WorkspaceSandbox, checkout: Checkout) -> dict:
    changes = box.take_changes(checkout.base, ChangeLimits())
    found = {c.path: (c.content, c.link, c.executable) for c in changes.changes}
    return {"changes": found, "refused": dict(changes.refused)}


def test_the_agent_sees_the_repository_and_its_own_git(box: WorkspaceSandbox) -> None:
    assert run(box, "git status --porcelain && git log --format=%s") == "Initial commit\n"
    assert run(box, "cat src/app.py && stat -c %U README.md") == "print('app')\nsandbox\n" or (
        isinstance(box, LocalSandbox)
    )


def test_renames_deletions_modes_links_and_binary_files_survive_the_trip(
    box: WorkspaceSandbox, checkout: Checkout
) -> None:
    run(
        box,
        "git mv src/util.py src/helpers.py && rm README.md && chmod +x run.sh"
        " && ln -s src/app.py main && printf '\\x00\\xff\\x01' > data.bin"
        " && mkdir -p new/deep && echo deep > new/deep/file.txt",
    )
    assert by_path(box, checkout) == {
        "changes": {
            "README.md": (None, False, False),
            "data.bin": (b"\x00\xff\x01", False, False),
            "main": (b"src/app.py", True, False),
            "new/deep/file.txt": (b"deep\n", False, False),
            "run.sh": (b"#!/bin/sh\necho run\n", False, True),
            "src/helpers.py": (b"def util():\n    return 1\n", False, False),
            "src/util.py": (None, False, False),
        },
        "refused": {},
    }


def test_commits_and_checkouts_by_the_agent_do_not_hide_its_changes(
    box: WorkspaceSandbox, checkout: Checkout
) -> None:
    git = "git -c user.name=a -c user.email=a@b"
    run(box, f"echo changed > README.md && {git} commit -qam mine && {git} checkout -qb other")
    assert by_path(box, checkout)["changes"] == {"README.md": (b"changed\n", False, False)}


def test_what_a_repository_cannot_hold_or_must_not_reach_is_refused(
    box: WorkspaceSandbox, checkout: Checkout
) -> None:
    git = "git -c user.name=a -c user.email=a@b"
    run(
        box,
        "ln -s /etc/passwd host-link && ln -s ../../outside up-link && ln -s src inside-link"
        " && rm README.md && mkfifo README.md"
        " && mkdir nested && cd nested && git init -q && echo x > f"
        f" && {git} add f && {git} commit -qm x && cd .. && echo '[core] x = y' >> .git/config",
    )
    found = by_path(box, checkout)
    assert found["changes"] == {"inside-link": (b"src", True, False)}
    assert found["refused"] == {
        "host-link": "a link to an absolute path, outside the repository",
        "up-link": "a link that points outside the repository",
        "README.md": "a device file or a pipe, which a repository cannot hold",
        "nested/": "a nested git repository: its files are not taken",
    }


def test_too_much_output_refuses_everything(box: WorkspaceSandbox, checkout: Checkout) -> None:
    run(box, "head -c 3000000 /dev/urandom > big.bin")
    with pytest.raises(ChangesRefused, match="larger than 1 MiB"):
        box.take_changes(checkout.base, ChangeLimits(max_bytes=2**20))


def test_a_broken_git_directory_is_a_clear_refusal(
    box: WorkspaceSandbox, checkout: Checkout
) -> None:
    run(box, "rm -rf .git && echo x > x")
    with pytest.raises(ChangesRefused, match="git could not list the changes"):
        box.take_changes(checkout.base, ChangeLimits())


def test_a_fork_bomb_left_behind_does_not_keep_the_changes_in(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig, checkout: Checkout
) -> None:
    sandbox = DockerSandbox.create(docker_client, fresh_config, job_id="bomb")
    try:
        with checkout.archive(sandbox.owner) as archive:
            sandbox.put_workspace(archive)
        run(sandbox, "echo kept > kept.txt")
        sandbox.run("bomb() { bomb | bomb & }; (bomb) >/dev/null 2>&1 &", timeout=5)
        time.sleep(1)
        changes = sandbox.take_changes(checkout.base, ChangeLimits())
    finally:
        sandbox.close()
    assert [(c.path, c.content) for c in changes.changes] == [("kept.txt", b"kept\n")]


def test_nothing_is_read_before_every_process_in_the_sandbox_has_stopped(
    docker_client: docker.DockerClient, fresh_config: SandboxConfig, checkout: Checkout
) -> None:
    sandbox = DockerSandbox.create(docker_client, fresh_config, job_id="stop-first")
    with checkout.archive(sandbox.owner) as archive:
        sandbox.put_workspace(archive)
    run(sandbox, "(while :; do date +%s%N >> ticks; done) >/dev/null 2>&1 &")
    seen: list[str] = []
    since = time.time() - 1
    events = docker_client.events(
        decode=True, since=since, filters={"container": sandbox.container_id}
    )
    listener = threading.Thread(target=lambda: [seen.append(e["Action"]) for e in events])
    listener.start()
    try:
        changes = sandbox.take_changes(checkout.base, ChangeLimits())
        time.sleep(0.5)
    finally:
        events.close()
        listener.join(10)
    assert "ticks" in {c.path for c in changes.changes}
    actions = [a.split(":")[0] for a in seen]
    assert actions.index("die") < actions.index("archive-path") < actions.index("destroy")
    with pytest.raises(NotFound):
        docker_client.api.inspect_container(sandbox.container_id)
    # The workspace volume outlives its container until `close`, which takes it too.
    label = {"label": f"wrench.slot={sandbox.slot.name}"}
    assert len(docker_client.api.volumes(filters=label)["Volumes"] or []) == 1
    sandbox.close()
    assert not docker_client.api.volumes(filters=label)["Volumes"]


@pytest.mark.parametrize("attempt", range(15))
def test_a_process_swapping_links_during_the_collection_reaches_nothing_of_the_host(
    attempt: int,
    docker_client: docker.DockerClient,
    fresh_config: SandboxConfig,
    checkout: Checkout,
    tmp_path: Path,
) -> None:
    """The attack on the old bind mount: swap a directory for a link to a host path while the
    host collects. Now the host path exists only on the host, and links come out as links."""
    marker = f"host-secret-{secrets.token_hex(8)}"
    host = tmp_path / "host-dir"
    host.mkdir()
    (host / "app.py").write_text(marker)
    sandbox = DockerSandbox.create(docker_client, fresh_config, job_id=f"race-{attempt}")
    with checkout.archive(sandbox.owner) as archive:
        sandbox.put_workspace(archive)
    swap = f"while :; do mv src s2; ln -sfn {host} src; rm -f src; mv s2 src; done"
    run(sandbox, f"echo edit >> src/app.py; ({swap}) >/dev/null 2>&1 &")
    try:
        changes = sandbox.take_changes(checkout.base, ChangeLimits())
    except ChangesRefused:
        changes = None  # the race broke the collection: nothing comes out, also fine
    finally:
        sandbox.close()
    assert (host / "app.py").read_text() == marker and sorted(host.iterdir()) == [host / "app.py"]
    for change in changes.changes if changes else ():
        assert marker.encode() not in (change.content or b"")
        assert not (change.link and change.content and change.content.startswith(b"/"))
