"""The other ways a job ends, end to end: a commit on a PR, an answer, a refusal, a limit,
a killed worker, duplicates."""

from __future__ import annotations

import os
import signal

from tests.e2e.conftest import REPO, commented, issue_labeled, review_commented
from tests.e2e.test_issue_to_pr import FIX
from tests.fakes.openai_server import tool_call


def test_a_review_comment_mention_becomes_a_commit_on_the_pull_request(stack):
    github = stack.github
    head = github.commit_to_branch(
        REPO, "feature", {"hello.py": 'def greet(name):\n    return "Hi " + name\n'}
    )
    github.add_pull(REPO, 7, "feature", "Friendlier greeting")
    comment = github.add_review_comment(
        REPO,
        7,
        "@wrench add an exclamation mark",
        "hello.py",
        2,
        '@@ -1,2 +1,2 @@\n-    return "Hello, " + name\n+    return "Hi " + name',
    )
    stack.model.replies[:] = [
        tool_call(
            "str_replace_editor",
            {
                "command": "str_replace",
                "path": "hello.py",
                "old_str": '"Hi " + name',
                "new_str": '"Hi " + name + "!"',
            },
        ),
        tool_call("finish", {"message": "Added it."}),
    ]
    [job_id] = stack.deliver(
        "pull_request_review_comment",
        review_commented("@wrench add an exclamation mark", 7, comment["id"]),
    )["jobs"]
    assert stack.wait(job_id).get_status().value == "finished", stack.log("worker")

    commits = github.commits(REPO, "feature")
    assert commits[1]["sha"] == head and commits[0]["message"].startswith("Address #7")
    assert '"Hi " + name + "!"' in github.read_file(REPO, "feature", "hello.py")
    assert github.open_pulls(REPO) == [github.pulls[REPO, 7]]  # no new pull request
    [reaction] = github.reactions
    assert (reaction["content"], reaction["subject"], reaction["on"]) == (
        "eyes",
        "review_comment",
        comment["id"],
    )
    task = next(m["content"] for m in stack.llm.bodies()[0]["messages"] if m["role"] == "user")
    assert "review comment on `hello.py`, line 2" in task
    assert '+    return "Hi " + name' in task


def test_a_question_gets_an_answer_and_no_branch(stack):
    stack.model.replies[:] = [
        tool_call("bash", {"command": "grep -n def hello.py"}),
        tool_call("finish", {"message": "`greet` is defined on line 1 of hello.py."}),
    ]
    [job_id] = stack.deliver("issue_comment", commented("@wrench where is greet defined?"))["jobs"]
    assert stack.wait(job_id).get_status().value == "finished", stack.log("worker")
    [comment] = [c for c in stack.github.issue_comments(REPO, 1) if c["user"]["type"] == "Bot"]
    assert "`greet` is defined on line 1 of hello.py." in comment["body"]
    assert stack.github.branch_sha(REPO, "wrench/issue-1") is None
    assert stack.github.open_pulls(REPO) == []


def test_a_requester_without_write_access_is_refused_and_nothing_runs(stack):
    [job_id] = stack.deliver("issue_comment", commented("@wrench fix it", sender="reader"))["jobs"]
    job = stack.wait(job_id)
    assert job.return_value()["outcome"] == "refused"
    [comment] = [c for c in stack.github.issue_comments(REPO, 1) if c["user"]["type"] == "Bot"]
    assert comment["body"].startswith("Sorry @reader, only people with write access")
    assert stack.llm.requests == [] and stack.github.reactions == []
    assert f"sandbox for job {job_id}" not in stack.log("worker")


def test_the_step_limit_pushes_the_branch_as_incomplete_without_a_pr(stack):
    edit = tool_call(
        "str_replace_editor", {"command": "create", "path": "notes.md", "file_text": "started\n"}
    )
    look = [tool_call("bash", {"command": f"echo step {n}"}) for n in range(20)]
    stack.model.replies[:] = [edit, *look]
    [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
    assert stack.wait(job_id).return_value()["outcome"] == "incomplete", stack.log("worker")
    [comment] = stack.github.issue_comments(REPO, 1)
    assert "limit of 8 steps" in comment["body"] and "incomplete" in comment["body"]
    assert stack.github.read_file(REPO, "wrench/issue-1", "notes.md") == "started\n"
    assert stack.github.open_pulls(REPO) == []
    assert len(stack.llm.requests) == 8  # the limit is checked before each call


def test_a_killed_work_horse_ends_in_a_failure_comment_and_no_container(stack):
    slow = tool_call("bash", {"command": "sleep 60"})
    stack.model.replies[:] = [slow]
    before = stack.worker_children()
    [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
    stack.wait_for(lambda: stack.llm.requests, timeout_s=60)
    [horse] = stack.worker_children() - before
    stack.wait_for(lambda: stack.containers(), timeout_s=30)
    os.kill(horse, signal.SIGKILL)

    job = stack.wait(job_id)
    assert job.get_status().value == "failed"
    comment = stack.wait_for(
        lambda: [c for c in stack.github.issue_comments(REPO, 1) if "was killed" in c["body"]],
        timeout_s=30,
    )
    assert "signal 9" in comment[0]["body"] and "Nothing was published" in comment[0]["body"]
    assert stack.wait_for(lambda: stack.containers() == [], timeout_s=30)


def test_a_redelivery_and_a_second_trigger_make_one_pull_request(stack):
    stack.model.replies[:] = FIX
    first = stack.deliver("issues", issue_labeled(), delivery="same")["jobs"]
    again = stack.deliver("issues", issue_labeled(), delivery="same")
    second = stack.deliver("issue_comment", commented("@wrench please fix this"))["jobs"]
    assert again == {"ignored": "duplicate delivery", "jobs": []}

    for job_id in first + second:
        stack.wait(job_id)
    # The second job may have been queued behind the first: wait for every job to end.
    stack.wait_for(
        lambda: all(j.get_status().value in {"finished", "failed"} for j in _all_jobs(stack)),
        timeout_s=90,
    )
    assert len(stack.github.open_pulls(REPO)) == 1, stack.log("worker")


def _all_jobs(stack):
    from rq import Queue
    from rq.registry import DeferredJobRegistry, FinishedJobRegistry, StartedJobRegistry

    queue = Queue(stack.env["QUEUE_NAME"], connection=stack.redis)
    ids = set(queue.job_ids)
    for registry in (StartedJobRegistry, DeferredJobRegistry, FinishedJobRegistry):
        ids |= set(registry(queue=queue).get_job_ids())
    return [queue.fetch_job(i) for i in ids if queue.fetch_job(i)]


def test_a_fork_pull_request_is_answered_with_the_diff_and_nothing_is_pushed(stack):
    github = stack.github
    github.add_fork_pull(
        REPO, 9, "stranger/hello", {"hello.py": 'def greet(name):\n    return "Yo " + name\n'}
    )
    branches_before = _branches(stack)
    stack.model.replies[:] = [
        tool_call(
            "str_replace_editor",
            {
                "command": "str_replace",
                "path": "hello.py",
                "old_str": '"Yo " + name',
                "new_str": '"Yo, " + name',
            },
        ),
        tool_call("finish", {"message": "Added the comma."}),
    ]
    payload = commented("@wrench add a comma", number=9, on_pull=True)
    [job_id] = stack.deliver("issue_comment", payload)["jobs"]
    assert stack.wait(job_id).return_value()["outcome"] == "diff", stack.log("worker")
    [comment] = [c for c in github.issue_comments(REPO, 9) if c["user"]["type"] == "Bot"]
    assert "comes from a fork" in comment["body"]
    assert (
        '-    return "Yo " + name' in comment["body"]
        and '+    return "Yo, " + name' in comment["body"]
    )
    assert _branches(stack) == branches_before


def _branches(stack) -> str:
    import subprocess

    path = stack.github.repos[REPO].path
    return subprocess.run(
        ["git", "-C", str(path), "for-each-ref"], capture_output=True, text=True, check=True
    ).stdout


def test_a_failing_setup_command_is_reported_before_any_model_call(stack):
    config = "setup:\n  - echo installing\n  - echo broken >&2; exit 3\nlimits:\n  max_steps: 3\n"
    stack.github.commit_to_branch(REPO, "main", {".github/wrench.yml": config})
    [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
    assert stack.wait(job_id).get_status().value == "failed"
    [comment] = stack.github.issue_comments(REPO, 1)
    assert "setup command `echo broken >&2; exit 3` exited with 3" in comment["body"]
    assert "broken" in comment["body"] and stack.llm.requests == []


def test_an_invalid_wrench_yml_is_reported_with_the_key_at_fault(stack):
    stack.github.commit_to_branch(REPO, "main", {".github/wrench.yml": "limits:\n  max_step: 3\n"})
    [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
    stack.wait(job_id)
    [comment] = stack.github.issue_comments(REPO, 1)
    assert "limits.max_step: Extra inputs are not permitted" in comment["body"]
    assert "Fix the file and ask again" in comment["body"] and stack.llm.requests == []


def test_a_bot_name_other_than_the_slug_is_only_the_handle(
    tmp_path, redis_url, redis, sandbox_image
):
    from tests.e2e.conftest import running_stack
    from tests.e2e.test_issue_to_pr import FIX

    with running_stack(tmp_path, redis_url, sandbox_image, "e2e-handle", BOT_NAME="fixer") as s:
        s.model.replies[:] = FIX
        [job_id] = s.deliver("issue_comment", commented("@fixer please fix this"))["jobs"]
        assert s.wait(job_id).return_value()["outcome"] == "pull_request", s.log("worker")
        [commit, _] = s.github.commits(REPO, "wrench/issue-1")
        assert commit["author"] == "wrench[bot]"  # the App's bot user, not "fixer[bot]"


def test_maintenance_stops_when_the_worker_is_killed(stack):
    children = stack.wait_for(lambda: stack.worker_children(), timeout_s=10)
    os.kill(stack.worker_pid, signal.SIGKILL)
    stack.wait_for(
        lambda: (
            not any(os.path.exists(f"/proc/{pid}/stat") and _state(pid) != "Z" for pid in children)
        ),
        timeout_s=5,
    )


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "Z"
