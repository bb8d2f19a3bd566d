"""Hardening, inspected on the container and attacked from inside it, against the real engine."""

from __future__ import annotations

import errno
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from sandbox.boundary import WorkspaceArchive
from sandbox.config import SandboxConfig
from sandbox.container import environment
from sandbox.docker_sandbox import DockerSandbox


@pytest.fixture(scope="module")
def box(
    docker_client: docker.DockerClient, sandbox_config: SandboxConfig
) -> Iterator[DockerSandbox]:
    sandbox = DockerSandbox.create(docker_client, sandbox_config, job_id="hardening")
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def attrs(docker_client: docker.DockerClient, box: DockerSandbox) -> dict:
    return docker_client.api.inspect_container(box.container_id)


def test_capabilities_privileges_and_user(attrs: dict, sandbox_config: SandboxConfig) -> None:
    host = attrs["HostConfig"]
    assert host["CapDrop"] == ["ALL"]
    assert not host["CapAdd"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["Privileged"] is False
    assert attrs["Config"]["User"] == f"{sandbox_config.uid}:{sandbox_config.gid}"
    assert host["Init"] is True


def test_limits(attrs: dict) -> None:
    host = attrs["HostConfig"]
    assert host["Memory"] == 256 * 1024**2
    assert host["MemorySwap"] == host["Memory"]  # no swap beyond the memory limit
    assert host["NanoCpus"] == 1_000_000_000
    assert host["PidsLimit"] == 128


def test_filesystem_and_network_configuration(attrs: dict, box: DockerSandbox) -> None:
    host = attrs["HostConfig"]
    assert host["ReadonlyRootfs"] is True
    assert host["NetworkMode"] == "none"
    assert set(host["Tmpfs"]) == {"/tmp", "/home/sandbox"}
    # The workspace is the container's own volume: no host directory is mounted, at all.
    mounts = [(m["Type"], m["Destination"], m["RW"]) for m in attrs["Mounts"]]
    assert mounts == [("volume", "/workspace", True)]
    assert not host["Binds"] and "docker.sock" not in str(attrs)


def test_environment_is_the_fixed_minimal_one(attrs: dict, sandbox_config: SandboxConfig) -> None:
    env = dict(item.split("=", 1) for item in attrs["Config"]["Env"])
    assert env == environment(sandbox_config)
    ours = set(environment(sandbox_config))
    leaked = [name for name in os.environ if name not in ours and name in env]
    assert leaked == []


def test_the_process_has_no_capabilities_and_cannot_gain_any(box: DockerSandbox) -> None:
    status = box.run("grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status").output
    fields = dict(line.split(":\t") for line in status.splitlines())
    assert fields == {
        "CapPrm": "0000000000000000",
        "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000",
        "NoNewPrivs": "1",
    }
    assert box.run("id -u; id -g").output == "1000\n1000\n"
    assert box.run("cat /etc/shadow").exit_code != 0


@pytest.mark.parametrize("path", ["/evil", "/usr/bin/evil", "/etc/passwd", "/workspace/../evil"])
def test_the_root_filesystem_is_read_only(box: DockerSandbox, path: str) -> None:
    result = box.run(f"echo pwned >> {path}")
    assert result.exit_code != 0
    assert "Read-only file system" in result.output or "Permission denied" in result.output


def test_only_workspace_tmp_and_home_are_writable(box: DockerSandbox) -> None:
    result = box.run("touch /workspace/w /tmp/t ~/h && echo ok")
    assert result.output == "ok\n"
    box.run("rm -f /workspace/w")


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A TCP server on the host's loopback, accepting in the background."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    port = server.getsockname()[1]
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: _accept(server, accepted), daemon=True)
    thread.start()
    yield port
    server.close()


def _accept(server: socket.socket, accepted: list[socket.socket]) -> None:
    try:
        accepted.append(server.accept()[0])
    except OSError:
        pass


def test_no_network_to_the_outside_or_the_host(box: DockerSandbox, host_listener: int) -> None:
    # The host can reach its own listener: the refusal below is the sandbox's, not a dead port.
    socket.create_connection(("127.0.0.1", host_listener), timeout=2).close()
    connect = "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 3)"
    assert box.run(f'python3 -c "{connect}" {host_listener}', timeout=20).exit_code != 0
    assert box.run("curl -sS -m 5 http://deb.debian.org/", timeout=20).exit_code != 0
    assert box.run("curl -sS -m 5 http://151.101.2.132/", timeout=20).exit_code != 0
    interfaces = box.run("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '").output
    assert interfaces == "lo\n"


def test_workspace_access_from_the_host_never_follows_links(
    box: DockerSandbox, tmp_path: Path
) -> None:
    host_file = tmp_path / "host-secret.txt"
    host_file.write_text("host content")
    host_dir = tmp_path / "host-dir"
    host_dir.mkdir()
    box.run(f"ln -sfn {host_file} /workspace/file-link && ln -sfn {host_dir} /workspace/dir-link")
    with pytest.raises(FileNotFoundError):
        box.read_file("file-link")  # resolved inside the container, where no such file exists
    # The same paths exist in the container's own /tmp: writes through the links land there.
    assert box.run(f"mkdir -p {host_dir}").exit_code == 0
    box.write_file("file-link", b"pwned")
    box.write_file("dir-link/planted", b"pwned")
    assert box.run(f"cat {host_file} {host_dir}/planted").output == "pwnedpwned"
    assert host_file.read_text() == "host content"
    assert list(host_dir.iterdir()) == []
    assert b"sandbox:x:1000" in box.read_file("../etc/passwd")  # the container's, via `..`
    box.run("rm -f /workspace/file-link /workspace/dir-link")


def test_files_written_from_the_host_belong_to_the_sandbox_user(box: DockerSandbox) -> None:
    box.write_file("made/by/host.txt", b"data")
    owners = box.run("stat -c '%u:%g %n' made made/by made/by/host.txt").output
    assert owners == "1000:1000 made\n1000:1000 made/by\n1000:1000 made/by/host.txt\n"
    assert (
        box.run("echo more >> made/by/host.txt && cat made/by/host.txt").output == "data" + "more\n"
    )
    box.run("rm -rf made")


def test_the_workspace_archive_belongs_to_the_sandbox_user_and_links_stay_links(
    box: DockerSandbox, tmp_path: Path
) -> None:
    target = tmp_path / "host-file"
    target.write_text("host content")
    archive = WorkspaceArchive(box.owner)
    archive.data("cloned/deep/file", b"y")
    archive.link("cloned/link", str(target))
    with archive.finish() as packed:
        box.put_workspace(packed)
    listing = box.run("stat -c '%u:%g %F %n' cloned cloned/deep cloned/deep/file cloned/link")
    assert listing.output.splitlines() == [
        "1000:1000 directory cloned",
        "1000:1000 directory cloned/deep",
        "1000:1000 regular file cloned/deep/file",
        "1000:1000 symbolic link cloned/link",
    ]
    assert box.run("cat cloned/link").exit_code != 0  # it resolves in the container: nothing
    assert target.read_text() == "host content"
    assert box.run("echo z > cloned/deep/file && echo ok").output == "ok\n"
    box.run("rm -rf cloned")


def test_huge_files_are_refused_rather_than_loaded_into_the_worker(box: DockerSandbox) -> None:
    assert box.run("truncate -s 65M big && ln -sf big big-link").exit_code == 0
    for path in ("big", "big-link"):
        with pytest.raises(OSError) as refused:
            box.read_file(path)
        assert refused.value.errno == errno.EFBIG, path
    box.run("rm -f big big-link")
