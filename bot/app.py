"""The Flask application factory for the web process."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from flask import Flask, jsonify
from redis import Redis
from redis.exceptions import RedisError
from werkzeug.exceptions import HTTPException

from bot import health, jobs, metrics, setup, slack, webhooks
from bot.router import TriggerConfig
from wrench.logs import configure_logging
from wrench.metrics import Metrics
from wrench.queue import JobQueue
from wrench.settings import Settings, load_settings

log = logging.getLogger(__name__)

# GitHub caps webhook payloads at 25 MB.
MAX_BODY_BYTES = 25 * 1024 * 1024


class BotNameUnavailable(RuntimeError):
    """BOT_NAME is not set and the App's slug could not be fetched from GitHub."""


@dataclass
class WebState:
    """What request handlers share: settings, Redis, the queue and the bot's name."""

    settings: Settings
    redis: Redis
    queue: JobQueue
    metrics: Metrics
    _bot_name: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def webhook_secret(self) -> bytes | None:
        secret = self.settings.WEBHOOK_SECRET
        return secret.get_secret_value().encode() if secret else None

    def trigger_config(self) -> TriggerConfig:
        """Trigger rules, fetching the App's slug from GitHub once when BOT_NAME is unset."""
        with self._lock:
            if self._bot_name is None:
                self._bot_name = self.settings.BOT_NAME or self._fetch_slug()
        return TriggerConfig(bot_name=self._bot_name, trigger_label=self.settings.TRIGGER_LABEL)

    def _fetch_slug(self) -> str:
        from wrench.github import app_slug  # githubkit is only needed when BOT_NAME is unset

        try:
            return app_slug(self.settings)
        except Exception as exc:
            raise BotNameUnavailable(f"cannot fetch the App's slug: {exc}; set BOT_NAME") from exc


def create_app(settings: Settings | None = None) -> Flask:
    """Build the web app; nothing touches the network until a request arrives."""
    settings = settings or load_settings()
    configure_logging(settings)
    redis = Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=2)
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    queue = JobQueue(redis, settings.QUEUE_NAME, settings.JOB_TIMEOUT_S)
    app.extensions["wrench"] = WebState(settings, redis, queue, Metrics(redis))
    app.register_blueprint(webhooks.blueprint)
    app.register_blueprint(health.blueprint)
    app.register_blueprint(slack.blueprint)
    app.register_blueprint(metrics.blueprint)
    app.register_blueprint(setup.blueprint)
    app.register_blueprint(jobs.blueprint)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(BotNameUnavailable, _unavailable)
    app.register_error_handler(RedisError, _unavailable)
    app.register_error_handler(Exception, _internal_error)
    if settings.WEBHOOK_SECRET is None:
        log.error("WEBHOOK_SECRET is not set: webhooks will be refused with 503")
    return app


def _http_error(exc: HTTPException):
    return jsonify(error=exc.description), exc.code


def _internal_error(exc: Exception):
    log.exception("unexpected error while answering a request")
    return jsonify(error="internal error; the server log has the details"), 500


def _unavailable(exc: Exception):
    log.error("answering 503: %s", exc)
    return jsonify(error=str(exc)), 503
