"""Sandbox benchmark against the real engine: cold start, warm acquire, command round trip, and
what the data boundary costs: a 50 MB repository in, a 1 MB change out.

Usage: .venv/bin/python bench/sandbox.py [--runs 20] [--image IMAGE]
Prints one `name: value unit` line per figure. Each start is measured to the first command's
answer, so it includes starting the shell, not only the container. Copy-in is the archive of a
job's clone (made from its objects) unpacked through the engine's API; copy-out is the whole of
`take_changes`: the collect script, stopping the container, fetching, removing, checking.

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


def measure(
    client: Any, config: Any, runs: int, scratch: Path, repo_mb: int
) -> dict[str, list[float]]:
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
        figures |= measure_transfer(client, config, runs, scratch, repo_mb)
    finally:
        reap(client, config, job_alive=lambda job: False, now=time.time() + 10**9)
    return figures


CHANGE_MB, FILE_KB = 1, 50


def make_repository(root: Path, megabytes: int) -> Any:
    """A bare repository of `megabytes` of source-like text in FILE_KB files (it packs about
    as well as code does), and a job's Checkout of it."""
    import random
    import subprocess

    from worker.git import Checkout

    work, bare = root / "work", root / "repo.git"
    rng = random.Random(7)
    words = [f"{rng.choice('abcdefgh')}{rng.randrange(10**6):x}" for _ in range(4000)]
    for index in range(megabytes * 1024 // FILE_KB):
        path = work / f"pkg{index % 20}" / f"module{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines, size = [], 0
        while size < FILE_KB * 1024:
            line = f"    {rng.choice(words)} = {rng.choice(words)}({rng.choice(words)})\n"
            lines.append(line)
            size += len(line)
        path.write_text("".join(lines))
    git = ["git", "-C", str(work), "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "bench"], check=True)
    # Packed, as a clone over the network is: the agent's .git goes in with the files.
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(work), str(bare)], check=True)
    head = subprocess.run(["git", "-C", str(bare), "rev-parse", "HEAD"], capture_output=True)
    return Checkout(bare, "", head.stdout.decode().strip(), "main")


def measure_transfer(
    client: Any, config: Any, runs: int, root: Path, megabytes: int
) -> dict[str, list[float]]:
    """Copy-in of the repository and copy-out of a CHANGE_MB change, each in a fresh sandbox."""
    from sandbox.boundary import ChangeLimits
    from sandbox.docker_sandbox import DockerSandbox

    checkout = make_repository(root, megabytes)

    def fresh() -> DockerSandbox:
        return answered(DockerSandbox.create(client, config, "bench-transfer"))

    def copy_in(sandbox: DockerSandbox) -> DockerSandbox:
        with checkout.archive(sandbox.owner) as archive:
            sandbox.put_workspace(archive)
        return sandbox

    def changed() -> DockerSandbox:
        sandbox = copy_in(fresh())
        files = CHANGE_MB * 1024 // 100
        script = f"for i in $(seq {files}); do head -c 102400 /dev/urandom > new$i.bin; done"
        assert sandbox.run(script, timeout=120).exit_code == 0
        return sandbox

    pending: list[DockerSandbox] = []
    copy_out = timed(
        runs,
        lambda: pending[-1].take_changes(checkout.base, ChangeLimits()),
        prepare=lambda: pending.append(changed()),
    )
    copy_in_samples = timed(
        runs,
        lambda: copy_in(pending[-1]),
        prepare=lambda: pending.append(fresh()),
        cleanup=DockerSandbox.close,
    )
    return {
        f"copy_in_{megabytes}mb_repo": copy_in_samples,
        f"copy_out_{CHANGE_MB}mb_change": copy_out,
    }


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
    parser.add_argument("--repo-mb", type=int, default=50, help="size of the copied repository")
    args = parser.parse_args()
    client = docker.from_env()
    client.images.get(args.image)  # fails fast when scripts/setup has not built it
    root = Path(tempfile.mkdtemp(prefix="wrench-bench-"))
    instance = f"bench-{secrets.token_hex(3)}"
    config = SandboxConfig(
        image=args.image, instance=instance, slot_root=root / "slots", pool_size=1
    )
    try:
        figures = measure(client, config, args.runs, root, args.repo_mb)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, samples in figures.items():
        report(name, samples)
    print(
        f"command_round_trip_mean: {statistics.mean(figures['command_round_trip']) * 1000:.2f} ms"
    )


if __name__ == "__main__":
    main()
