"""Host-side git on a sandbox workspace: clone with a token that is never written to disk.

The token travels to git in the environment of the one git process (GIT_CONFIG_COUNT and
friends), as an HTTP header: not in the remote URL, not in `.git/config`, not in argv where
`ps` would show it. The sandbox later sees the clone, never the token.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path


def git(workspace: Path, *args: str) -> list[str]:
    """A git argument list for the workspace; `safe.directory=*` because the sandbox owns it."""
    return ["git", "-c", "safe.directory=*", "-C", str(workspace), *args]


def auth_environment(token: str | None) -> dict[str, str]:
    """Environment entries that make git send the token (a GitHub token's Basic form)."""
    if not token:
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }


def clone(url: str, workspace: Path, token: str | None = None, ref: str | None = None) -> None:
    """Clone `url` into the (empty) workspace directory; call `adopt_workspace()` after."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **auth_environment(token)}
    branch = ["--branch", ref] if ref else []
    command = git(workspace, "clone", "--quiet", *branch, "--", url, ".")
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=600)
