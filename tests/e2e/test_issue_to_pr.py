"""A labelled issue becomes a draft pull request, end to end."""

from __future__ import annotations

from tests.e2e.conftest import LLM_KEY, REPO, issue_labeled
from tests.fakes.openai_server import tool_call

FIX = [
    tool_call("str_replace_editor", {"command": "view", "path": "hello.py"}),
    tool_call(
        "str_replace_editor",
        {
            "command": "str_replace",
            "path": "hello.py",
            "old_str": 'return "Hello, " + name',
            "new_str": 'return "Hello, " + name + "!"',
        },
    ),
    tool_call("bash", {"command": "python3 -c 'import hello; print(hello.greet(\"Ada\"))'"}),
    tool_call("finish", {"message": "`greet` now ends with an exclamation mark."}),
]


def test_a_labelled_issue_becomes_a_draft_pull_request(stack):
    stack.model.replies[:] = FIX
    [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
    job = stack.wait(job_id)
    assert job.get_status().value == "finished", stack.log("worker")
    stages = {"queue_wait", "token", "acquire", "clone", "copy_in", "setup", "agent", "collect"}
    stages |= {"publish", "total"}
    assert set(job.meta["timings"]) == stages

    github = stack.github
    [pull] = github.open_pulls(REPO)
    assert pull["draft"] is True and pull["head"]["ref"] == "wrench/issue-1"
    assert pull["body"].startswith("Fixes #1\n\n`greet` now ends with an exclamation mark.")
    assert "4 steps" in pull["body"]
    assert 'return "Hello, " + name + "!"' in github.read_file(REPO, "wrench/issue-1", "hello.py")
    [commit, _] = github.commits(REPO, "wrench/issue-1")
    assert commit["author"] == "wrench[bot]" and commit["message"].startswith("Fix #1:")

    # One tracking comment, edited to its final state; the eyes on the issue.
    [comment] = github.issue_comments(REPO, 1)
    assert f"#{pull['number']}" in comment["body"]
    assert f"(http://wrench.test/jobs/{job_id}?expires=" in comment["body"]  # the job page
    assert len(comment["history"]) >= 3
    assert [r["content"] for r in github.reactions] == ["eyes"]

    # The agent's command really ran in the sandbox, and the model saw its output.
    last_prompt = stack.llm.bodies()[-1]["messages"]
    assert any("Hello, Ada!" in str(m.get("content")) for m in last_prompt)
    # No secret reached the model, GitHub, or the sandbox's container list.
    sent = str(stack.llm.bodies()) + str(github.comments) + str(pull)
    assert LLM_KEY not in sent and not any(t in sent for t in github.tokens)
    assert stack.containers() == []  # the job's sandbox is gone (idle pool ones remain)


def test_no_secret_reaches_a_log_line_a_trajectory_a_comment_or_a_commit(stack):
    stack.model.replies[:] = [
        # The model tries to leak what it can find, and echoes a secret it was somehow given.
        tool_call("bash", {"command": "env; cat /proc/1/environ; cat .git/config; ls -a ~"}),
        tool_call(
            "str_replace_editor",
            {"command": "create", "path": "leak.txt", "file_text": f"key={LLM_KEY}\n"},
        ),
        tool_call("finish", {"message": f"Done. By the way the key is {LLM_KEY}"}),
    ]
    [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
    job = stack.wait(job_id)
    assert job.get_status().value == "failed"  # publishing was refused

    secrets = [
        LLM_KEY,
        *stack.github.tokens,
        stack.env["PRIVATE_KEY"].splitlines()[1],
        stack.env["WEBHOOK_SECRET"],
    ]
    trajectory = (stack.workdir / "data" / "trajectories" / f"{job_id}.jsonl").read_text()
    places = {
        "worker log": stack.log("worker"),
        "web log": stack.log("web"),
        "trajectory": trajectory,
        "job page feed": str(stack.redis.lrange(f"wrench:events:{job_id}", 0, -1)),
        "comments": str(stack.github.comments),
        # What the sandbox and GitHub told the model (its own replies come back to it as is).
        "prompts": str(
            [m for body in stack.llm.bodies() for m in body["messages"] if m["role"] != "assistant"]
        ),
        "repository": _all_git_objects(stack),
    }
    for place, text in places.items():
        assert not [s for s in secrets if s in text], place
    assert "[REDACTED]" in trajectory
    [comment] = stack.github.issue_comments(REPO, 1)
    assert "did not publish anything" in comment["body"]
    assert stack.github.branch_sha(REPO, "wrench/issue-1") is None


def _all_git_objects(stack) -> str:
    import subprocess

    path = str(stack.github.repos[REPO].path)
    objects = subprocess.run(
        ["git", "-C", path, "rev-list", "--all", "--objects"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return "".join(
        subprocess.run(
            ["git", "-C", path, "cat-file", "-p", sha], capture_output=True, text=True
        ).stdout
        for sha in objects
        if len(sha) == 40
    )
