"""Sandbox benchmark against the real engine: cold start, warm acquire and command round trip.

Usage: .venv/bin/python bench/sandbox.py [--runs 20] [--image IMAGE]
Prints one `name: value unit` line per figure. Each start is measured to the first command's
answer, so it includes starting the shell, not only the container.

Anchor: OpenHands documents 15-60 s for its runtime container to start (image pull excluded
on a warm host); SWE-agent's SWE-ReX Docker deployment is in the same range of seconds.
Targets on a 2-core machine: warm acquire p99 < 300 ms, cold p50 < 1.5 s, round trip p50 < 60 ms.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a file, this script's directory would come first on sys.path and this module
    # would shadow the `sandbox` package it measures.
    sys.path[0] = str(Path(__file__).resolve().parents[1])


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def report(name: str, samples: list[float]) -> None:
    for label, fraction in (("p50", 0.5), ("p99", 0.99)):
        print(f"{name}_{label}: {percentile(samples, fraction) * 1000:.1f} ms")


def timed(
    runs: int,
    measure: Callable[[], Any],
    prepare: Callable[[], object] = lambda: None,
    cleanup: Callable[[Any], object] = lambda _: None,
) -> list[float]:
    """`runs` timings of `measure`, each after an untimed `prepare` and before an untimed
    `cleanup` of what `measure` returned."""
    samples = []
    for _ in range(runs):
        prepare()
        started = time.perf_counter()
        result = measure()
        samples.append(time.perf_counter() - started)
        cleanup(result)
    return samples


def measure(client: Any, config: Any, runs: int) -> dict[str, list[float]]:
    """The samples of each figure, with this run's own label namespace cleaned up after."""
    from sandbox.docker_sandbox import DockerSandbox
    from sandbox.pool import WarmPool
    from sandbox.reaper import reap

    pool = WarmPool(client, config)

    def cold() -> DockerSandbox:
        return answered(DockerSandbox.create(client, config, "bench"))

    def warm() -> DockerSandbox:
        return answered(pool.acquire("bench"))

    try:
        figures = {
            "cold_start_to_first_command": timed(runs, cold, cleanup=DockerSandbox.close),
            "warm_acquire_to_first_command": timed(runs, warm, pool.refill, DockerSandbox.close),
        }
        sandbox = DockerSandbox.create(client, config, "bench")
        figures["command_round_trip"] = timed(runs * 10, lambda: sandbox.run("true"))
        sandbox.close()
    finally:
        reap(client, config, job_alive=lambda job: False, now=time.time() + 10**9)
    return figures


def answered(sandbox: Any) -> Any:
    """The sandbox, once it has answered its first command."""
    assert sandbox.run("true").exit_code == 0
    return sandbox


def main() -> None:
    import docker

    from sandbox.config import SandboxConfig
    from wrench.settings import load_settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--image", default=load_settings().SANDBOX_IMAGE)
    args = parser.parse_args()
    client = docker.from_env()
    client.images.get(args.image)  # fails fast when scripts/setup has not built it
    root = Path(tempfile.mkdtemp(prefix="wrench-bench-"))
    instance = f"bench-{secrets.token_hex(3)}"
    config = SandboxConfig(image=args.image, instance=instance, slot_root=root, pool_size=1)
    try:
        figures = measure(client, config, args.runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, samples in figures.items():
        report(name, samples)
    print(
        f"command_round_trip_mean: {statistics.mean(figures['command_round_trip']) * 1000:.2f} ms"
    )


if __name__ == "__main__":
    main()
