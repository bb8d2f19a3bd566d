"""`wrench run` on a real git checkout, in the real Docker sandbox, with a scripted model."""

from __future__ import annotations

import os
import secrets
import signal
import stat
import subprocess
import time
from pathlib import Path

import docker
import pytest

from sandbox import container
from tests.cli.conftest import Cli
from tests.fakes.openai_server import FakeOpenAI, Reply, slow, tool_call

OWNER = (4242, 4343)
SECRET = "API_TOKEN=hunter2-" + secrets.token_hex(4)
GREET = 'def greet(name):\n    return "Hello, " + name\n'
FILES = {
    "hello.py": GREET,
    "README.md": "# hello\n",
    ".gitignore": "secret.env\n*.log\n",
    "docs/guide.md": "How to greet.\n",
}


def git(repo: Path, *args: str) -> str:
    identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    return subprocess.run(
        ["git", *identity, "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def chown_tree(root: Path, owner: tuple[int, int]) -> None:
    for path in [root, *root.rglob("*")]:
        os.chown(path, *owner, follow_symlinks=False)


def state(root: Path) -> dict[str, tuple]:
    """Every file and directory under root (`.git` included): bytes or link, mode, owner, mtime."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            content = ("link", os.readlink(path))
        elif path.is_file():
            content = path.read_bytes()
        else:
            content = "dir"
        found[str(path.relative_to(root))] = (
            content,
            info.st_mode,
            info.st_uid,
            info.st_gid,
            info.st_mtime_ns if content != "dir" else 0,
        )
    return found


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A committed repository owned by someone other than the test, with an untracked file
    and an ignored secret."""
    repo = tmp_path / "repo"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "init", "--quiet", "-b", "main")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "first")
    (repo / "notes.txt").write_text("untracked, not ignored\n")
    (repo / "secret.env").write_text(SECRET + "\n")
    chown_tree(repo, OWNER)
    return repo


@pytest.fixture
def sandbox_env(sandbox_image: str, docker_client: docker.DockerClient) -> dict[str, str]:
    instance = f"cli-{secrets.token_hex(3)}"
    yield {"SANDBOX_IMAGE": sandbox_image, "SANDBOX_INSTANCE": instance}
    # `wrench run` labels its sandboxes with an instance of its own, out of the worker's reach.
    assert containers(docker_client, f"{instance}-cli") == [], "wrench run left its sandbox behind"


def containers(client: docker.DockerClient, instance: str) -> list[str]:
    found = client.containers.list(all=True, filters={"label": f"{container.INSTANCE}={instance}"})
    return [c.name for c in found]


def model_env(llm: FakeOpenAI) -> dict[str, str]:
    return {
        "LLM_MODEL": "openai/cli-model",
        "LLM_BASE_URL": llm.url,
        "LLM_API_KEY": "sk-cli-test-" + secrets.token_hex(8),
        "LLM_INPUT_USD_PER_MTOK": "1",
        "LLM_OUTPUT_USD_PER_MTOK": "2",
    }


def run(cli: Cli, script: list[Reply], *args: str, **env: str):
    with FakeOpenAI(script) as llm:
        result = cli("run", *args, **model_env(llm), **env)
    return result, llm


def edit(path: str, old: str, new: str) -> Reply:
    arguments = {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
    return tool_call("str_replace_editor", arguments)


def finish(message: str) -> Reply:
    return tool_call("finish", {"message": message})


def tool_output(llm: FakeOpenAI, request: int) -> str:
    """What the model was told about its last tool call, in the given request."""
    return llm.bodies()[request]["messages"][-1]["content"]


def test_the_agents_edit_lands_in_the_checkout_and_nothing_else_changes(
    cli: Cli, checkout: Path, sandbox_env: dict[str, str]
) -> None:
    before = state(checkout)
    script = [
        tool_call("bash", {"command": "cat secret.env; ls; git status --short"}),
        edit("hello.py", '"Hello, " + name', '"Hello, " + name + "!"'),
        finish("greet() now ends with an exclamation mark."),
    ]

    result, llm = run(cli, script, "--repo", str(checkout), "Greet with a bang", **sandbox_env)

    assert result.returncode == 0, result.stderr
    assert (checkout / "hello.py").read_text() == GREET.replace("+ name", '+ name + "!"')
    after = state(checkout)
    assert after.pop("hello.py")[2:4] == OWNER
    del before["hello.py"]
    assert after == before  # every other file, `.git` included, untouched: bytes, mode, owner
    assert " hello.py | 2 +-" in result.stdout
    assert "1 file changed, 1 insertion(+), 1 deletion(-)" in result.stdout
    assert "greet() now ends with an exclamation mark." in result.stdout
    assert "step 1/50" in result.stderr and "step 2/50" in result.stderr
    # The agent saw the tracked and the untracked files and a working git, not the ignored secret.
    seen = tool_output(llm, 1)
    assert "No such file" in seen and "hunter2" not in seen
    assert "notes.txt" in seen and "hello.py" in seen
    assert "?? notes.txt" in seen


def test_added_deleted_and_executable_files_come_back_and_git_internals_do_not(
    cli: Cli, checkout: Path, sandbox_env: dict[str, str]
) -> None:
    pwned = f"wrench-pwned-{secrets.token_hex(4)}"
    commands = " && ".join(
        [
            "git rm --quiet README.md",
            "mkdir -p src/pkg && echo 'VALUE = 1' > src/pkg/new.py",
            "chmod +x hello.py",
            "echo noise > build.log",  # ignored
            "git init --quiet vendor && echo 'VENDORED = 1' > vendor/lib.py",
            "echo 'touch /tmp/{pwned}' > vendor/.git/hooks/post-checkout",
            "printf '[core]\\n\\tfsmonitor = touch /tmp/{pwned}\\n' >> .git/config",
            "ln -s /etc/hostname host-link && ln -s docs/guide.md guide-link",
        ]
    ).format(pwned=pwned)
    script = [tool_call("bash", {"command": commands}), finish("Reorganised.")]

    result, _ = run(cli, script, "--repo", str(checkout), "Reorganise", **sandbox_env)

    assert result.returncode == 0, result.stderr
    assert not (checkout / "README.md").exists()
    assert (checkout / "src/pkg/new.py").read_text() == "VALUE = 1\n"
    for path in ("src", "src/pkg", "src/pkg/new.py"):  # new files belong to the checkout's owner
        info = (checkout / path).lstat()
        assert (info.st_uid, info.st_gid) == OWNER
    mode = (checkout / "hello.py").stat().st_mode
    assert mode & stat.S_IXUSR and (checkout / "hello.py").stat().st_uid == OWNER[0]
    assert os.readlink(checkout / "guide-link") == "docs/guide.md"
    assert not (checkout / "host-link").is_symlink()  # it would point out of the checkout
    assert "not applied: host-link: a link to an absolute path" in result.stdout
    assert not (checkout / "build.log").exists()
    assert not (checkout / "vendor").exists()
    assert "not applied: vendor/: a nested git repository" in result.stdout
    assert "fsmonitor" not in (checkout / ".git/config").read_text()
    assert not Path("/tmp", pwned).exists()  # host git never read the agent's `.git`
    assert " README.md | 1 -" in result.stdout
    assert " src/pkg/new.py (untracked, new)" in result.stdout
    assert " guide-link (untracked, new)" in result.stdout


def test_a_run_stopped_by_the_step_limit_exits_non_zero(
    cli: Cli, checkout: Path, sandbox_env: dict[str, str]
) -> None:
    script = [edit("hello.py", "Hello", "Hi"), finish("never reached")]

    result, llm = run(
        cli, script, "--repo", str(checkout), "--max-steps", "1", "Say hi", **sandbox_env
    )

    assert result.returncode == 1
    assert len(llm.requests) == 1
    assert "stopped (max_steps): it reached the limit of 1 steps" in result.stdout
    assert "review its partial changes" in result.stdout
    assert "Hi, " in (checkout / "hello.py").read_text()  # the partial work is left to review


def test_a_pth_file_for_the_users_ignored_venv_is_set_aside_never_installed(
    cli: Cli, checkout: Path, sandbox_env: dict[str, str]
) -> None:
    """The attacker's way into the user's machine: a `.pth` file runs whenever that Python
    starts. The venv is git-ignored by the user's own rules, so it never went into the sandbox;
    the agent force-adds a file there (and hides it from its own ignore rules) all the same."""
    site = checkout / ".venv/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    (checkout / ".git/info/exclude").write_text(".venv/\n")
    pth = ".venv/lib/python3.11/site-packages/wrench-pwned.pth"
    commands = (
        "mkdir -p .venv/lib/python3.11/site-packages && printf '*\\n' > .venv/.gitignore"
        f" && echo 'import os; os.system(\"touch /tmp/pwned\")' > {pth} && git add -f {pth}"
    )
    script = [tool_call("bash", {"command": commands}), finish("Set up the environment.")]

    result, _ = run(cli, script, "--repo", str(checkout), "Set up", **sandbox_env)

    assert result.returncode == 0, result.stderr
    assert list(site.iterdir()) == [] and not (checkout / ".venv/.gitignore").exists()
    saved = next(Path(cli.env["DATA_DIR"], "left-out").glob(f"*/{pth}"))
    assert f"not applied: {pth}: new, and your checkout ignores it (saved in {saved}" in (
        result.stdout
    )
    assert "wrench: the agent changed no files" in result.stdout


def test_local_runs_without_docker_and_says_it_isolates_nothing(cli: Cli, checkout: Path) -> None:
    script = [edit("docs/guide.md", "How", "When and how"), finish("Done.")]

    result, _ = run(cli, script, "--repo", str(checkout / "docs"), "--local", "Clarify")

    assert result.returncode == 0, result.stderr
    assert "isolates NOTHING" in result.stderr
    assert (checkout / "docs/guide.md").read_text() == "When and how to greet.\n"
    assert (checkout / "docs/guide.md").stat().st_uid == OWNER[0]


def test_a_missing_image_or_a_directory_outside_git_is_one_clear_line(
    cli: Cli, checkout: Path, tmp_path: Path
) -> None:
    missing, _ = run(cli, [], "--repo", str(checkout), "task", SANDBOX_IMAGE="wrench-absent:nope")
    elsewhere, _ = run(cli, [], "--repo", str(tmp_path / "cwd"), "task")

    assert missing.returncode == 1
    assert "the sandbox image wrench-absent:nope is missing" in missing.stderr
    assert elsewhere.returncode == 1
    assert "is not a git checkout" in elsewhere.stderr


def wait_for_requests(llm: FakeOpenAI, count: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while len(llm.requests) < count:
        assert time.monotonic() < deadline, f"the model got {len(llm.requests)} requests"
        time.sleep(0.05)


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_stops_after_the_step_and_twice_stops_at_once(
    cli: Cli, checkout: Path, sandbox_env: dict[str, str], presses: int
) -> None:
    """Once: the step's model call ends, its action does not run, the edits so far come back.
    Twice: the run ends at once and the checkout stays as it was."""
    script = [
        edit("hello.py", "Hello", "Hi"),
        slow(tool_call("bash", {"command": "touch never-run.txt"}), 3),
        finish("never reached"),
    ]
    with FakeOpenAI(script) as llm:
        env = {**model_env(llm), **sandbox_env}
        process = cli.start("run", "--repo", str(checkout), "Say hi", **env)
        wait_for_requests(llm, 2)
        for _ in range(presses):
            process.send_signal(signal.SIGINT)
            time.sleep(0.3)
        stdout, stderr = process.communicate(timeout=60)

    assert "stopping after this step" in stderr
    assert not (checkout / "never-run.txt").exists()
    if presses == 1:
        assert process.returncode == 1, stderr
        assert "stopped (cancelled): the run was cancelled" in stdout
        assert "Hi, " in (checkout / "hello.py").read_text()
    else:
        assert process.returncode == 130, stderr
        assert "interrupted: the checkout is as it was" in stderr
        assert (checkout / "hello.py").read_text() == GREET
