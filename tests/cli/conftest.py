"""The `wrench` command run as a subprocess, with a controlled environment and no `.env`."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import WEBHOOK_SECRET

WRENCH = str(Path(sys.executable).with_name("wrench"))


@dataclass
class Cli:
    """Runs `wrench` in a directory without a `.env`, with exactly the given environment."""

    env: dict[str, str]
    cwd: Path

    def __call__(
        self, *args: str, timeout: float = 180, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [WRENCH, *args],
            env={**self.env, **env},
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self, *args: str, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [WRENCH, *args],
            env={**self.env, **env},
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


@pytest.fixture
def cli(tmp_path: Path, redis_url: str) -> Cli:
    cwd = tmp_path / "cwd"
    home = tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "REDIS_URL": redis_url,
        "QUEUE_NAME": f"cli-{secrets.token_hex(3)}",
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "PUBLIC_URL": "http://wrench.test",
        "DATA_DIR": str(tmp_path / "data"),
    }
    return Cli(env, cwd)
