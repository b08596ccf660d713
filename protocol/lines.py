"""A request line's checks before and while it is parsed (the daemon's socket and
``ikictl acp``'s stdin): strict UTF-8, no
NaN or Infinity, nesting no deeper than ``protocol.MAX_DEPTH`` (counted before
the recursive parser sees the line), and an id that can be sent back."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import protocol as p
from protocol.params import excerpt, lone_surrogate

__all__ = ["MAYBE_SURROGATE", "Refusal", "id_problem", "parse_line"]


class Refusal(Exception):
    """A line the daemon will not carry out: answered with ``error`` (unless
    ``answer`` is false: a notification's failures are never answered)."""

    def __init__(self, rid: Any, code: int, message: str, *, answer: bool = True) -> None:
        super().__init__(message)
        self.rid = rid
        self.error = p.RpcError(code, message)
        self.answer = answer


# what a JSON string is, to skip it when counting brackets: up to its closing
# quote, or to the end of an unclosed one (so each string is scanned once)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")
_SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 and -1 once read as signed bytes
# a \uD800-\uDFFF escape, perhaps of a lone surrogate: only then is the request walked
MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def parse_line(line: bytes) -> Any:
    """One request line as JSON, or Refusal (-32700). Strict UTF-8 (no lone
    surrogates as raw bytes), no NaN or Infinity, and never nested deeper than
    p.MAX_DEPTH: deeper nesting is refused before the recursive parser sees it."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Refusal(
            None,
            p.PARSE_ERROR,
            f"parse error: invalid UTF-8 at byte {e.start}; a request line is UTF-8 text",
        ) from None
    if _too_deep(line):
        raise Refusal(
            None,
            p.PARSE_ERROR,
            f"parse error: arrays and objects nested deeper than {p.MAX_DEPTH} levels",
        )
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (
        ValueError,
        RecursionError,
    ) as e:  # RecursionError: cannot happen after _too_deep; kept as a guard
        raise Refusal(None, p.PARSE_ERROR, f"parse error: {excerpt(str(e))}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _too_deep(line: bytes) -> bool:
    """Is any point of ``line`` inside more than p.MAX_DEPTH brackets? Linear,
    at C speed but for one step per 4096 brackets."""
    if line.count(b"[") + line.count(b"{") <= p.MAX_DEPTH:
        return False  # the common case: too few brackets to be too deep
    signs = memoryview(_STRING.sub(b"", line).translate(_SIGNS, _NOT_BRACKET)).cast("b")
    depth = 0
    for start in range(0, len(signs), 4096):
        depths = list(itertools.accumulate(signs[start : start + 4096], initial=depth))
        if max(depths) > p.MAX_DEPTH:
            return True
        depth = depths[-1]
    return False


def id_problem(rid: Any) -> str | None:
    """Why ``rid`` cannot be a request id (None: it can). It is sent back in the
    answer, so it must be encodable and small."""
    if rid is None or (type(rid) is int and -p.MAX_INT <= rid <= p.MAX_INT):
        return None
    if isinstance(rid, str):
        if len(rid) > p.MAX_ID:
            return f"id: a string id has at most {p.MAX_ID} characters (this one has {len(rid)})"
        return lone_surrogate(rid, ("id",))
    return (
        f"id must be a string (at most {p.MAX_ID} characters) "
        f"or an integer from {-p.MAX_INT} to {p.MAX_INT}"
    )
