"""Serving the Flask app with gunicorn, configured in code so settings are checked first."""

from __future__ import annotations

from gunicorn.app.base import BaseApplication

from bot.app import create_app
from wrench.settings import Settings

WORKERS = 2


class WebServer(BaseApplication):
    """gunicorn with the app preloaded in the master, so workers fork ready to answer."""

    def __init__(self, settings: Settings, port: int) -> None:
        self._settings = settings
        self._port = port
        super().__init__()

    def load_config(self) -> None:
        self.cfg.set("bind", f"0.0.0.0:{self._port}")
        self.cfg.set("workers", WORKERS)
        self.cfg.set("preload_app", True)
        self.cfg.set("worker_tmp_dir", "/dev/shm")

    def load(self):
        return create_app(self._settings)


def serve(settings: Settings, port: int) -> None:
    WebServer(settings, port).run()
