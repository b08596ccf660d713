"""Pure: an HTTP/1.1 response head (status line and header fields), parsed once whole.

The head is small and arrives in one read nearly always, so it is parsed when
its end (an empty line) is in the buffer; until then the caller reads more.
Bounded: a head longer than MAX_HEAD is a protocol error, never a memory sink.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import NamedTuple

MAX_HEAD = 64 * 1024

_STATUS = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\r\n]*))?\r?$")
_FIELD = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([^\r\n\x00]*?)[ \t]*\r?$")


class ProtocolError(Exception):
    """Malformed HTTP from the peer (the message never quotes header values)."""


class Headers(Mapping[str, str]):
    """Response header fields: case-insensitive lookup; repeated fields joined with ", "."""

    __slots__ = ("_items", "_map")

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self._items = items
        merged: dict[str, str] = {}
        for name, value in items:
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else value
        self._map = merged

    def __getitem__(self, name: str) -> str:
        return self._map[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._map

    def __iter__(self) -> Iterator[str]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def get_list(self, name: str) -> list[str]:
        key = name.lower()
        return [v for n, v in self._items if n.lower() == key]

    def raw(self) -> list[tuple[str, str]]:
        return list(self._items)

    def __repr__(self) -> str:  # names only: values can hold cookies or tokens
        return f"Headers({sorted(self._map)})"


class Head(NamedTuple):
    version: int  # 0 or 1 (HTTP/1.0, HTTP/1.1)
    status: int
    reason: str
    headers: Headers


def head_end(buf: bytes | bytearray) -> int:
    """Index just past the head's empty line, or -1 while it is incomplete.

    Raise ProtocolError when no head end is within MAX_HEAD bytes."""
    end = buf.find(b"\r\n\r\n")
    if end >= 0:
        end += 4
    bare = buf.find(b"\n\n")
    if bare >= 0 and (end < 0 or bare + 2 < end):
        end = bare + 2
    if end < 0:
        if len(buf) > MAX_HEAD:
            raise ProtocolError(f"response head longer than {MAX_HEAD} bytes")
        return -1
    if end > MAX_HEAD:
        raise ProtocolError(f"response head longer than {MAX_HEAD} bytes")
    return end


def parse_head(raw: bytes) -> Head:
    """One whole head (as delimited by head_end), parsed."""
    lines = raw.split(b"\n")
    while lines and lines[-1] in (b"", b"\r"):
        lines.pop()
    if not lines:
        raise ProtocolError("empty response head")
    status = _STATUS.match(lines[0])
    if status is None:
        shown = lines[0][:40].decode("ascii", "replace")
        raise ProtocolError(f"malformed status line {shown!r}")
    items: list[tuple[str, str]] = []
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            raise ProtocolError("obsolete line folding in a response header")
        field = _FIELD.match(line)
        if field is None:
            name = line.split(b":", 1)[0][:40].decode("ascii", "replace")
            raise ProtocolError(f"malformed response header field {name!r}")
        items.append((field.group(1).decode("ascii"), field.group(2).decode("latin-1")))
    reason = (status.group(3) or b"").decode("latin-1")
    return Head(int(status.group(1)), int(status.group(2)), reason, Headers(items))
