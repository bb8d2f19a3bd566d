"""Finding and redacting secrets: known values (tokens, keys) and well-known token shapes."""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"

# Shapes of credentials that must never leave the process, whoever they belong to.
TOKEN_PATTERNS = re.compile(
    "|".join(
        [
            r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
            r"\bgithub_pat_[A-Za-z0-9_]{30,}",  # GitHub fine-grained tokens
            r"\bsk-[A-Za-z0-9_-]{20,}",  # OpenAI / Anthropic style keys
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",  # Slack tokens
            r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key ids
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
            r"(?i:(?<=x-access-token:))[^@\s]+",  # token embedded in a git URL
            r"(?i:(?<=authorization: )(?:bearer|token|basic)) [^\s\"']+",
        ]
    )
)

# Shorter values are too likely to occur by chance in ordinary text.
MIN_SECRET_LENGTH = 6


class Redactor:
    """Replaces known secret values and token-shaped strings with `[REDACTED]`."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: set[str] = set()
        for value in values:
            self.add(value)

    def add(self, value: str | None) -> None:
        """Remember one more secret value (ignored when empty or too short to be a secret)."""
        if value and len(value) >= MIN_SECRET_LENGTH:
            self._values.add(value)
            # PEM keys also travel with their newlines escaped.
            if "\n" in value:
                self._values.add(value.replace("\n", "\\n"))

    def redact(self, text: str) -> str:
        """The text with every known secret and token shape replaced."""
        for value in sorted(self._values, key=len, reverse=True):
            text = text.replace(value, REDACTED)
        return TOKEN_PATTERNS.sub(REDACTED, text)

    def find(self, text: str) -> list[str]:
        """Descriptions (never the values) of the secrets found in the text."""
        found = [f"a known secret ({len(v)} characters)" for v in self._values if v in text]
        shapes = TOKEN_PATTERNS.finditer(text)
        found += [f"a token-shaped string at offset {m.start()}" for m in shapes]
        return found
