"""Shell behaviour every sandbox must have: persistent state, timeouts, output caps."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from sandbox.base import Sandbox
from tests.conftest import HEAD, TAIL


def test_output_status_and_stderr_arrive_as_one_stream(sandbox: Sandbox) -> None:
    result = sandbox.run("echo out; echo err >&2; exit_with() { return $1; }; exit_with 3")
    assert result.output == "out\nerr\n"
    assert result.exit_code == 3
    assert not result.timed_out
    assert result.truncated_bytes == 0
    assert 0 < result.duration_s < 5


def test_cwd_and_exported_variables_persist(sandbox: Sandbox) -> None:
    assert sandbox.run("mkdir -p sub/dir && cd sub/dir && export FOO='a b'").exit_code == 0
    result = sandbox.run('pwd; echo "$FOO"')
    assert result.output == f"{sandbox.workspace}/sub/dir\na b\n"


def test_virtualenv_activation_persists(sandbox: Sandbox) -> None:
    created = sandbox.run("python3 -m venv --without-pip venv && source venv/bin/activate")
    assert created.exit_code == 0, created.output
    result = sandbox.run('echo "$VIRTUAL_ENV"; command -v python')
    venv = f"{sandbox.workspace}/venv"
    assert result.output == f"{venv}\n{venv}/bin/python\n"


def test_commands_cannot_read_the_protocol_from_stdin(sandbox: Sandbox) -> None:
    result = sandbox.run("cat; read -r line; echo status=$?")
    assert result.output == "status=1\n"
    assert sandbox.run("echo next").output == "next\n"


def test_an_unterminated_quote_is_a_syntax_error_not_a_hang(sandbox: Sandbox) -> None:
    result = sandbox.run("echo 'unterminated", timeout=10)
    assert result.exit_code == 2
    assert "unexpected EOF" in result.output
    assert sandbox.run("echo fine").output == "fine\n"


def test_output_without_a_final_newline_and_fake_markers(sandbox: Sandbox) -> None:
    assert sandbox.run("printf abc").output == "abc"
    result = sandbox.run(r"printf '\036deadbeefdeadbeef:0\n'; echo after; false")
    assert result.output.endswith("after\n")
    assert result.exit_code == 1


def test_exit_ends_the_command_not_the_sandbox(sandbox: Sandbox) -> None:
    sandbox.run("export FOO=kept && cd /tmp")
    result = sandbox.run("echo bye; exit 7")
    assert (result.output, result.exit_code) == ("bye\n", 7)
    assert sandbox.run('pwd; echo "$FOO"').output == "/tmp\nkept\n"


def test_a_timed_out_child_process_is_killed_and_the_state_kept(sandbox: Sandbox) -> None:
    sandbox.run("export FOO=kept && mkdir -p d && cd d")
    started = time.monotonic()
    command = "echo started; sh -c 'echo $$ > child.pid; exec sleep 60'; touch after-timeout"
    result = sandbox.run(command, timeout=1)
    assert result.timed_out
    assert result.exit_code is None
    assert result.output == "started\n"
    assert time.monotonic() - started < 10
    assert sandbox.run('pwd; echo "$FOO"').output == f"{sandbox.workspace}/d\nkept\n"
    # Gone, or a zombie that its new parent has not reaped yet.
    state = sandbox.run('cut -d" " -f3 "/proc/$(cat child.pid)/stat" 2>/dev/null; ls')
    assert state.output in ("child.pid\n", "Z\nchild.pid\n")


def test_a_builtin_busy_loop_is_stopped_and_the_state_kept(sandbox: Sandbox) -> None:
    sandbox.run("export FOO=kept && cd /tmp")
    result = sandbox.run("while :; do :; done", timeout=1)
    assert result.timed_out
    assert result.exit_code is None
    assert sandbox.run('pwd; echo "$FOO"').output == "/tmp\nkept\n"


def test_background_jobs_of_earlier_commands_survive_a_timeout(sandbox: Sandbox) -> None:
    sandbox.run("sleep 300 >/dev/null 2>&1 & echo $! > bg.pid")
    # Start times count in 10 ms ticks: a job started in the very tick of the next command
    # cannot be told apart from that command's own processes.
    time.sleep(0.05)
    assert sandbox.run("sleep 60", timeout=1).timed_out
    alive = sandbox.run('kill -0 "$(cat bg.pid)" && echo alive; kill "$(cat bg.pid)"')
    assert alive.output == "alive\n"


def test_long_output_keeps_head_and_tail_and_counts_the_cut(sandbox: Sandbox) -> None:
    expected = "".join(f"{n}\n" for n in range(1, 100_001))
    result = sandbox.run("seq 1 100000")
    cut = len(expected) - HEAD - TAIL
    assert result.truncated_bytes == cut
    assert result.output == (
        expected[:HEAD] + f"\n[... {cut} bytes of output cut ...]\n" + expected[-TAIL:]
    )


def test_binary_output_breaks_nothing(sandbox: Sandbox) -> None:
    result = sandbox.run("head -c 200000 /dev/urandom; echo; echo done")
    assert result.exit_code == 0
    assert result.output.endswith("\ndone\n")
    assert "\x00" not in result.output
    assert json.loads(json.dumps(dataclasses.asdict(result)))["exit_code"] == 0
    assert sandbox.run(r"printf '\000\001abc\377'").output == "abc\ufffd"


def test_files_written_are_read_back_and_seen_by_commands(sandbox: Sandbox) -> None:
    data = bytes(range(256)) * 3
    sandbox.write_file("nested/dir/blob.bin", data)
    assert sandbox.read_file("nested/dir/blob.bin") == data
    assert sandbox.read_file(f"{sandbox.workspace}/nested/dir/blob.bin") == data
    assert sandbox.run("wc -c < nested/dir/blob.bin").output == "768\n"
    sandbox.run("printf 'from the shell' > made.txt")
    assert sandbox.read_file("made.txt") == b"from the shell"


def test_a_shell_killed_mid_command_reports_137_and_comes_back(sandbox: Sandbox) -> None:
    sandbox.run("export FOO=kept")
    result = sandbox.run("echo before; kill -9 $$")
    assert (result.output, result.exit_code, result.timed_out) == ("before\n", 137, False)
    assert sandbox.run('echo "$FOO"').output == "kept\n"


def test_a_shell_killed_between_commands_comes_back(sandbox: Sandbox) -> None:
    sandbox.run("export FOO=kept; (sleep 0.2; kill -9 $$) >/dev/null 2>&1 &")
    time.sleep(0.6)
    assert sandbox.run('echo "$FOO"').output == "kept\n"


def test_reading_a_missing_file_raises_file_not_found(sandbox: Sandbox) -> None:
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("missing.txt")
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("/nonexistent/missing.txt")
