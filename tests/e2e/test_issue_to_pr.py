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
    stages = {"queue_wait", "token", "acquire", "clone", "setup", "agent", "publish", "total"}
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
