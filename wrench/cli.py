"""The `wrench` command: run the web, worker and scheduler processes."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

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
    return root


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    try:
        args.run(args)
    except SettingsError as exc:
        sys.exit(f"wrench: {exc}")
    except KeyboardInterrupt:
        pass
