"""LocalSandbox specifics: it warns that it isolates nothing and leaves nothing behind."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from sandbox.base import SandboxProvider, WorkspaceSandbox
from sandbox.local import LocalSandbox, LocalSandboxes
from sandbox.shell import PersistentShell, ShellFiles


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_it_warns_loudly_that_it_isolates_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sandbox.local"):
        sandbox = LocalSandbox()
    sandbox.close()
    [record] = caplog.records
    assert record.levelno == logging.WARNING and "isolates NOTHING" in record.getMessage()


def test_the_host_environment_is_not_passed_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WRENCH_TEST_SECRET", "hunter2-local")
    sandbox = LocalSandbox()
    try:
        assert "hunter2-local" not in sandbox.run("env").output
        assert sandbox.run("echo $HOME").output.strip() != os.environ.get("HOME")
    finally:
        sandbox.close()


def test_close_kills_background_jobs_and_removes_its_directory() -> None:
    sandbox = LocalSandbox()
    pid = int(sandbox.run("sleep 300 >/dev/null 2>&1 & echo $!").output)
    time.sleep(0.05)
    assert sandbox.run("while :; do :; done", timeout=0.5).timed_out  # replaces the shell
    assert alive(pid)
    sandbox.close()
    sandbox.close()
    time.sleep(0.1)
    assert not alive(pid)
    assert not sandbox.host_workspace.exists()


def test_a_given_workspace_is_used_and_kept(tmp_path: Path) -> None:
    sandbox = LocalSandbox(workspace=tmp_path)
    sandbox.write_file("a.txt", b"x")
    assert sandbox.run("pwd; cat a.txt").output == f"{tmp_path}\nx"
    sandbox.close()
    assert (tmp_path / "a.txt").read_bytes() == b"x"


def test_the_provider_hands_out_fresh_workspaces() -> None:
    provider: SandboxProvider = LocalSandboxes()
    first: WorkspaceSandbox = provider.acquire("job-1")
    second = provider.acquire("job-2")
    try:
        assert first.host_workspace != second.host_workspace
        assert list(first.host_workspace.iterdir()) == []
    finally:
        first.close()
        second.close()


def test_a_snapshot_that_hangs_is_skipped(tmp_path: Path) -> None:
    """Commands can write the state file; a restore that never ends must not brick the shell."""
    host = LocalSandbox()
    shell = PersistentShell(host, ShellFiles(str(tmp_path)), 1000, 1000, restore_timeout_s=0.5)
    try:
        shell.start()
        assert shell.run("cd /tmp && export FOO=kept", 5).exit_code == 0
        assert shell.run('echo "$FOO"; pwd', 5).output == "kept\n/tmp\n"
        sabotage = f"echo 'while :; do :; done' > {tmp_path}/.wrench-shell-state; exit 1"
        assert shell.run(sabotage, 5).exit_code == 1
        started = time.monotonic()
        assert shell.run("echo fresh; pwd", 5).output == f"fresh\n{host.workspace}\n"
        assert time.monotonic() - started < 5
    finally:
        shell.close()
        host.close()
