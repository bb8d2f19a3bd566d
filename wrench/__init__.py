"""Wrench: the shared core of the bot, the worker and the sandbox (settings, job specs, secrets)."""
