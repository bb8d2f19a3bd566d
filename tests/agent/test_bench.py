"""bench/agent.py runs end to end (a short run) and prints `name: value unit` lines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "agent.py"
LINE = re.compile(r"^(?P<name>[a-z_]+): (?P<value>[0-9.]+)(?: (?P<unit>ms|tokens|steps|%))?$")


def test_the_benchmark_prints_every_figure():
    out = subprocess.run(
        [sys.executable, str(BENCH), "--steps", "8", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )

    figures = {}
    for line in out.stdout.splitlines():
        match = LINE.match(line)
        assert match, f"not a `name: value unit` line: {line!r}"
        figures[match["name"]] = float(match["value"])
    assert figures["steps"] == 8
    assert figures["wrench_overhead_per_step"] > 0 and figures["minisweagent_overhead_per_step"] > 0
    ratio = figures["wrench_overhead_per_step"] / figures["minisweagent_overhead_per_step"]
    assert figures["overhead_ratio_wrench_over_minisweagent"] == pytest.approx(ratio, abs=0.01)
    assert figures["prompt_tokens_condensed"] < figures["prompt_tokens_uncondensed"]
    assert figures["prompt_tokens_echo_condensed"] > 0
