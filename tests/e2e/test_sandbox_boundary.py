"""The sandbox boundary through the whole stack, attacked the way the security review did it:
the agent (or a process it left running) goes for the host's files and the App's key."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import REPO, issue_labeled
from tests.fakes.app_key import app_key_pair
from tests.fakes.openai_server import tool_call

KEY_LINE = next(line for line in app_key_pair()[0].splitlines()[5:] if "-----" not in line)


def test_no_container_wrench_starts_has_a_host_directory(stack):
    stack.model.replies[:] = [
        tool_call("bash", {"command": "sleep 3; echo done"}),
        tool_call("finish", {"message": "Nothing to do."}),
    ]
    client = stack.engine()

    def mounts(containers: list) -> list:
        return [client.api.inspect_container(c.id)["Mounts"] for c in containers]

    [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
    seen = stack.wait_for(lambda: mounts(stack.containers()), timeout_s=60)  # the job's, mid-run
    stack.wait(job_id)
    idle = client.containers.list(filters={"label": f"wrench.instance={stack.instance}"})
    seen += mounts(idle)
    assert len(seen) >= 2
    for found in seen:
        assert [(m["Type"], m["Destination"]) for m in found] == [("volume", "/workspace")]


@pytest.mark.parametrize("attempt", range(3))
def test_a_process_swapping_links_during_publishing_publishes_nothing_of_the_host(stack, attempt):
    """The chain from the review: a background process swaps a directory for a link to the
    host's `.env` (whose path the old bind mount gave away) while the host publishes."""
    env_file = stack.workdir / ".env"
    env_file.write_text(f"PRIVATE_KEY={KEY_LINE}\nMARKER=host-file-{attempt}\n")
    swap = (
        f"mkdir -p conf && while :; do mv conf c2; ln -sfn {stack.workdir} conf; rm -f conf;"
        f" mv c2 conf; ln -sfn {env_file} env-link; done"
    )
    stack.model.replies[:] = [
        tool_call("bash", {"command": f"echo fix > fix.txt; ({swap}) >/dev/null 2>&1 &"}),
        tool_call("finish", {"message": "Fixed."}),
    ]
    [job_id] = stack.deliver("issues", issue_labeled(number=1))["jobs"]
    job = stack.wait(job_id)

    assert job.get_status().value == "finished", stack.log("worker")
    assert env_file.read_text().endswith(f"MARKER=host-file-{attempt}\n")  # untouched
    branch = "wrench/issue-1"
    pushed = stack.github.read_file(REPO, branch, "fix.txt")
    assert pushed == "fix\n"
    assert stack.github.object_type(REPO, branch, "env-link") is None
    for path in ("conf", "conf/.env", "env-link"):
        if stack.github.object_type(REPO, branch, path) == "blob":
            assert "host-file" not in stack.github.read_file(REPO, branch, path)
    [pull] = stack.github.open_pulls(REPO)
    assert "- `env-link`: a link to an absolute path, outside the repository" in pull["body"]
    assert KEY_LINE not in str(stack.github.comments) + str(pull)
    assert stack.containers() == []  # the background process died with its sandbox


def test_a_key_hidden_from_diffs_by_gitattributes_is_never_published(stack):
    """One line of the App's key, planted where diff text would never show it: in a file the
    repository's own .gitattributes marks binary and re-encodes as UTF-16."""
    plant = (
        "printf 'notes.txt -diff working-tree-encoding=UTF-16\\n' > .gitattributes"
        f" && printf 'key: {KEY_LINE}\\n' | iconv -t UTF-16 > notes.txt"
    )
    stack.model.replies[:] = [
        tool_call("bash", {"command": plant}),
        tool_call("finish", {"message": "Added notes."}),
    ]
    [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
    stack.wait(job_id)

    [comment] = stack.github.issue_comments(REPO, 1)
    assert "did not publish anything, because of a secret" in comment["body"]
    assert "`notes.txt` holds a line of the App's private key" in comment["body"]
    assert KEY_LINE not in str(stack.github.comments)
    assert stack.github.branch_sha(REPO, "wrench/issue-1") is None
    assert stack.github.open_pulls(REPO) == []
