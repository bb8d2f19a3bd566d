"""Finding and redacting secrets: known values (tokens, keys) and well-known token shapes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

REDACTED = "[REDACTED]"

SHAPES: tuple[tuple[str, str], ...] = (
    ("a GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    ("a GitHub token", r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
    ("an OpenAI or Anthropic key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("a Stripe key", r"\b[rs]k_live_[A-Za-z0-9]{20,}"),
    ("a Slack token", r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}"),
    ("an AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("a GitLab token", r"\bglpat-[0-9A-Za-z_-]{20,}"),
    ("a JSON web token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    (
        "a private key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)?",
    ),
    ("a token in a git URL", r"(?i:(?<=x-access-token:))[^@\s]+"),
    ("an Authorization header", r"(?i:(?<=authorization: )(?:bearer|token|basic)) [^\s\"']+"),
)
"""Shapes of credentials that must never leave the process, whoever they belong to."""
TOKEN_PATTERNS = re.compile("|".join(f"(?:{pattern})" for _, pattern in SHAPES))
_SHAPES = [(kind, re.compile(pattern)) for kind, pattern in SHAPES]

# Shorter values are too likely to occur by chance in ordinary text.
MIN_SECRET_LENGTH = 6
# A line of a PEM key is 64 characters; shorter ones (the last) still say nothing by chance.
MIN_KEY_LINE = 24
KNOWN = "a secret Wrench holds"


class Redactor:
    """Replaces known secret values and token-shaped strings with `[REDACTED]`, and says which
    kinds of secret a text holds (never the values)."""

    def __init__(self, secrets: Mapping[str, str] | Iterable[str] = ()) -> None:
        """`secrets`: values, or a mapping of what each secret is (e.g. `LLM_API_KEY`) to it."""
        self._values: dict[str, str] = {}
        named = secrets.items() if isinstance(secrets, Mapping) else ((KNOWN, v) for v in secrets)
        for kind, value in named:
            self.add(value, kind)

    def add(self, value: str | None, kind: str = KNOWN) -> None:
        """Remember one more secret value (ignored when empty or too short to be a secret).
        A PEM key is also remembered line by line, so that any one line of it is found."""
        if not value or len(value) < MIN_SECRET_LENGTH:
            return
        self._values.setdefault(value, kind)
        if "\n" in value:  # PEM keys also travel with their newlines escaped
            self._values.setdefault(value.replace("\n", "\\n"), kind)
        if "PRIVATE KEY-----" in value:
            for line in value.splitlines():
                if len(line.strip()) >= MIN_KEY_LINE and "-----" not in line:
                    self._values.setdefault(line.strip(), f"a line of {kind}")

    def redact(self, text: str) -> str:
        """The text with every known secret and token shape replaced."""
        for value in sorted(self._values, key=len, reverse=True):
            text = text.replace(value, REDACTED)
        return TOKEN_PATTERNS.sub(REDACTED, text)

    def find(self, text: str) -> list[str]:
        """What kinds of secret the text holds, each named once (never the values)."""
        found = [kind for value, kind in self._values.items() if value in text]
        found += [kind for kind, pattern in _SHAPES if pattern.search(text)]
        return list(dict.fromkeys(found))
