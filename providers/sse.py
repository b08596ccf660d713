"""A pure, incremental Server-Sent Events decoder (WHATWG rules).

Feed it bytes in any chunking, split anywhere (inside a UTF-8 sequence, between
CR and LF), and it returns the events completed so far. No I/O.
"""

from __future__ import annotations

from typing import NamedTuple

_BOM = b"\xef\xbb\xbf"


class SSEEvent(NamedTuple):
    event: str  # "message" when the stream names none
    data: str
    id: str  # the last event id seen so far, as the spec defines it
    retry: int | None  # the latest reconnection time in ms, if the stream set one


class SSEDecoder:
    __slots__ = ("_bom_checked", "_buf", "_data", "_event", "_last_id", "_pending", "_retry", "_skip_lf")

    def __init__(self) -> None:
        self._buf = b""
        self._pending: list[bytes] = []  # chunks with no line end, joined when one comes
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._bom_checked = False
        self._data: list[str] = []
        self._event = ""
        self._last_id = ""
        self._retry: int | None = None

    @property
    def pending(self) -> bool:
        """True when bytes or fields of an unfinished event are buffered."""
        return bool(self._buf or self._pending or self._data or self._event)

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        if self._pending or (b"\n" not in chunk and b"\r" not in chunk and self._bom_checked):
            # no line end yet: collect the pieces and join once, so a long line
            # fed in small chunks stays linear, not quadratic
            self._pending.append(chunk)
            if b"\n" not in chunk and b"\r" not in chunk:
                return []
            chunk = b"".join(self._pending)
            self._pending = []
        buf = self._buf + chunk if self._buf else chunk
        if not self._bom_checked:
            if len(buf) < 3 and _BOM.startswith(buf):
                self._buf = buf
                return []
            self._bom_checked = True
            if buf.startswith(_BOM):
                buf = buf[3:]
        if b"\r" in buf:
            # CRLF and lone CR become LF with bytes.replace, far faster than a regex split;
            # a CR at the very end is a line end whose LF may come in the next chunk
            tail = b""
            if buf[-1:] == b"\r":
                self._skip_lf = True
                buf, tail = buf[:-1], b"\n"
            buf = buf.replace(b"\r\n", b"\n")
            if b"\r" in buf:
                buf = buf.replace(b"\r", b"\n")
            buf += tail
        lines = buf.split(b"\n")
        self._buf = lines.pop()
        out: list[SSEEvent] = []
        for raw in lines:
            if not raw:
                if self._data:
                    out.append(
                        SSEEvent(self._event or "message", "\n".join(self._data), self._last_id, self._retry)
                    )
                self._data = []
                self._event = ""
                continue
            line = raw.decode("utf-8", "replace")
            if line[0] == ":":
                continue
            field, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if field == "data":
                self._data.append(value)
            elif field == "event":
                self._event = value
            elif field == "id":
                if "\x00" not in value:
                    self._last_id = value
            elif field == "retry" and value.isascii() and value.isdigit():
                self._retry = int(value)
        return out

    def close(self) -> bool:
        """End of stream. Returns True if an unfinished event was discarded, as the spec asks."""
        unfinished = self.pending
        self._buf = b""
        self._pending = []
        self._data = []
        self._event = ""
        return unfinished
