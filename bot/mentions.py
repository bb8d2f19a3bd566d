"""Finding an @mention of the bot in Markdown, ignoring code and quoted replies."""

from __future__ import annotations

import re

_FENCED_CODE = re.compile(r"^(```|~~~).*?(^\1|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_QUOTED_LINE = re.compile(r"^\s*>.*$", re.MULTILINE)


def mentions(body: str | None, name: str) -> bool:
    """Whether the text @mentions `name` (or `name[bot]`) outside code and quotes.

    `@wrench-dev` and `me@wrench.io` do not mention `wrench`.
    """
    if not body:
        return False
    text = _QUOTED_LINE.sub("", _INLINE_CODE.sub("", _FENCED_CODE.sub("", body)))
    pattern = rf"(?<![\w@/.-])@{re.escape(name)}(\[bot\])?(?![\w-])"
    return re.search(pattern, text, re.IGNORECASE) is not None
