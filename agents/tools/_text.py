"""Small text helpers shared by the tools."""

from __future__ import annotations

import re

# A str may hold surrogate code points (from a JSON "\ud800" escape, or
# surrogateescape); they are not Unicode text: UTF-8 and msgspec refuse them.
_SURROGATE = re.compile("[\ud800-\udfff]")


def seconds(value: float) -> str:
    """120.0 -> '120', 0.25 -> '0.25'."""
    return f"{value:g}"


def clean(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so that it can be
    encoded (stored, sent to the provider) whatever a tool printed."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def cut_middle(text: str, limit: int) -> str:
    """Keep at most ``limit`` characters of ``text``: its head and its tail, with a
    note in between saying how many characters were cut.

    The tail is kept because that is where commands print their errors and
    summaries.
    """
    if limit < 0 or len(text) <= limit:
        return text
    cut = len(text) - limit
    head = limit * 2 // 3
    tail = limit - head
    note = f"\n[... {cut} characters cut ...]\n"
    return text[:head] + note + (text[-tail:] if tail else "")


def clip(text: str, limit: int) -> str:
    """Shorten ``text`` to about ``limit`` characters for quoting in a message."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"
