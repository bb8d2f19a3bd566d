"""The `wrench` command: the web, worker and scheduler processes, and the operator's tools."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable

from wrench.commands import CommandError
from wrench.settings import SettingsError, load_settings


def _web(args: argparse.Namespace) -> None:
    from bot.server import serve

    serve(load_settings(), port=args.port)


def _waiting_for_setup(settings) -> bool:
    """Without a GitHub App there is nothing to do: wait (honcho stops every process when one
    exits, and the web process must keep serving the setup page)."""
    if settings.APP_ID is not None and settings.private_key() is not None:
        return False
    print(
        "wrench: no GitHub App is configured yet (APP_ID, PRIVATE_KEY): open the web page "
        "to create one, then restart",
        file=sys.stderr,
    )
    signal.sigwait({signal.SIGINT, signal.SIGTERM})
    return True


def _worker(args: argparse.Namespace) -> None:
    settings = load_settings()
    if not _waiting_for_setup(settings):
        from worker.process import run_worker

        run_worker(settings, burst=args.burst)


def _scheduler(args: argparse.Namespace) -> None:
    from worker.scheduler import run_forever
    from worker.services import scheduler_from_settings

    settings = load_settings()
    if _waiting_for_setup(settings):
        return
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with scheduler_from_settings(settings) as scheduler:
        run_forever(scheduler, settings.SCHEDULER_INTERVAL_S, stop)


def _command(module: str, function: str = "command") -> Callable[[argparse.Namespace], None]:
    """Runs `wrench.commands.<module>.<function>`, imported only when used (so that `wrench web`
    stays light), and exits with the status it returns."""

    def run(args: argparse.Namespace) -> None:
        sys.exit(getattr(importlib.import_module(f"wrench.commands.{module}"), function)(args))

    return run


def _add_run(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser(
        "run",
        help="run the agent on a local checkout, in the sandbox",
        description="Run the agent on a copy of a local checkout in the sandbox and leave its "
        "changes in the working tree. Exits 0 when the agent finished, 1 when it was stopped.",
    )
    run.add_argument("task", help="what the agent should do, in words")
    run.add_argument("--repo", default=".", help="the checkout (default: the current directory)")
    run.add_argument("--max-steps", type=int, help="limit on model calls (default: MAX_STEPS)")
    run.add_argument("--max-cost", type=float, help="limit on spend, USD (default: MAX_COST_USD)")
    run.add_argument("--model", help="a litellm model name (default: LLM_MODEL)")
    run.add_argument(
        "--local",
        action="store_true",
        help="run commands in a plain local shell instead of Docker: isolates NOTHING",
    )
    run.set_defaults(run=_command("run"))


def _add_operations(commands: argparse._SubParsersAction) -> None:
    doctor = commands.add_parser(
        "doctor", help="check settings, Redis, Docker, the GitHub App and the model"
    )
    doctor.set_defaults(run=_command("doctor"))
    jobs = commands.add_parser("jobs", help="list recent jobs, newest first")
    jobs.add_argument("--limit", type=int, default=20, help="how many (default: 20)")
    jobs.set_defaults(run=_command("jobs", "list_jobs"))
    retry = commands.add_parser("retry", help="queue an ended job's task again, as a new job")
    retry.add_argument("job", help="the job id")
    retry.set_defaults(run=_command("jobs", "retry"))
    cancel = commands.add_parser("cancel", help="cancel a queued job or stop a running one")
    cancel.add_argument("job", help="the job id")
    cancel.add_argument(
        "--now", action="store_true", help="kill a running job at once instead of after its step"
    )
    cancel.set_defaults(run=_command("jobs", "cancel"))


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="wrench", description="A self-hosted coding agent.")
    commands = root.add_subparsers(dest="command", required=True)
    web = commands.add_parser("web", help="serve webhooks (gunicorn)")
    web.add_argument("--port", type=int, default=int(os.environ.get("PORT", "3000")))
    web.set_defaults(run=_web)
    worker = commands.add_parser("worker", help="run queued agent jobs (rq worker)")
    worker.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    worker.set_defaults(run=_worker)
    scheduler = commands.add_parser("scheduler", help="enqueue scheduled maintenance runs")
    scheduler.set_defaults(run=_scheduler)
    _add_run(commands)
    _add_operations(commands)
    return root


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    try:
        args.run(args)
    except (SettingsError, CommandError) as exc:
        sys.exit(f"wrench: {exc}")
    except KeyboardInterrupt:
        pass
