"""Sandbox fixtures: the same behaviour tests run against every Sandbox implementation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.config import SandboxConfig
from sandbox.local import LocalSandbox

# Small caps so that output tests stay fast and readable.
HEAD, TAIL = 2000, 1000


@pytest.fixture(scope="module")
def local_sandbox() -> Iterator[LocalSandbox]:
    sandbox = LocalSandbox(config=SandboxConfig(output_head_bytes=HEAD, output_tail_bytes=TAIL))
    yield sandbox
    sandbox.close()


@pytest.fixture(params=["local"])
def sandbox(request: pytest.FixtureRequest) -> LocalSandbox:
    """A module-wide sandbox, back in its workspace with a clean slate of test files."""
    box = request.getfixturevalue(f"{request.param}_sandbox")
    reset = box.run(f"cd {box.workspace} && rm -rf -- ./* ./.[!.]* && unset FOO", timeout=30)
    assert reset.exit_code == 0, reset.output
    return box
