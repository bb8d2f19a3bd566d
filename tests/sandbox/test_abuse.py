"""Abuse from inside: fork bombs, memory hogs and full disks hurt only their own container."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import docker
import pytest

from sandbox.config import SandboxConfig
from sandbox.docker_sandbox import DockerSandbox

FORK_UNTIL_REFUSED = """
import os, signal
children = []
try:
    while True:
        pid = os.fork()
        if pid == 0:
            signal.pause()
            os._exit(0)
        children.append(pid)
except OSError as error:
    print(len(children), error.errno)
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def box(
    docker_client: docker.DockerClient, sandbox_config: SandboxConfig
) -> Iterator[DockerSandbox]:
    sandbox = DockerSandbox.create(docker_client, sandbox_config, job_id="abuse")
    yield sandbox
    sandbox.close()


def processes(box: DockerSandbox) -> int:
    return len(box.run("ps -e --no-headers -o pid").output.split())


def test_the_pids_limit_refuses_forks(box: DockerSandbox, sandbox_config: SandboxConfig) -> None:
    box.write_file("/tmp/forks.py", FORK_UNTIL_REFUSED.encode())
    result = box.run("python3 /tmp/forks.py", timeout=60)
    count, errno = result.output.split()
    assert int(count) < sandbox_config.pids_limit
    assert errno == "11"  # EAGAIN: the kernel refused the fork


def test_a_fork_bomb_is_contained_and_cleaned_up(box: DockerSandbox) -> None:
    started = time.monotonic()
    result = box.run("bomb() { bomb | bomb & }; bomb; sleep 60", timeout=3)
    assert result.timed_out
    assert time.monotonic() - started < 30
    assert box.run("echo alive").output == "alive\n"
    assert processes(box) < 10  # init, sleep infinity, the shell, ps: the bomb is gone
    assert subprocess.run(["true"], check=False).returncode == 0  # the host still forks


def test_a_memory_hog_is_oom_killed_inside(box: DockerSandbox) -> None:
    result = box.run("python3 -c 'x = b\"x\" * (1 << 30); print(len(x))'", timeout=60)
    assert result.exit_code == 137  # SIGKILL from the OOM killer
    assert "1073741824" not in result.output
    assert box.run("echo alive").output == "alive\n"


def test_tmpfs_is_capped(box: DockerSandbox) -> None:
    result = box.run("head -c 100M /dev/zero > /tmp/big", timeout=60)
    assert result.exit_code != 0
    assert "No space left on device" in result.output
    box.run("rm -f /tmp/big")
