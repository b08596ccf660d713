"""Pure, incremental body framing (RFC 9112 section 6): chunked, Content-Length, or to close.

Each decoder takes whatever one socket read brought (``feed``) and returns the
payload bytes that read completed, joined; ``done`` turns true at the body's
end and ``extra`` holds bytes past it (a peer that sent them is not reused).
The common read (one or a few whole chunks) costs one regex match per chunk
and slices: no per-byte Python loop.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

from ._head import Headers, ProtocolError

MAX_CHUNK_LINE = 4096  # a chunk-size line with its extensions
MAX_TRAILERS = 64 * 1024
MAX_CHUNK_SIZE = 1 << 62

_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n")

_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


class ChunkedBody:
    __slots__ = ("_left", "_pending", "_state", "_trailers", "done", "extra")

    def __init__(self) -> None:
        self._state = _SIZE
        self._left = 0
        self._pending = b""  # an incomplete line kept for the next read
        self._trailers = 0
        self.done = False
        self.extra = b""

    def feed(self, data: bytes) -> bytes:
        if self._pending:
            data = self._pending + data
            self._pending = b""
        out: list[bytes] = []
        pos = 0
        end = len(data)
        state = self._state
        while pos < end:
            if state == _DATA:
                take = self._left if self._left < end - pos else end - pos
                out.append(data[pos : pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    state = _DATA_END
            elif state == _SIZE:
                m = _SIZE_LINE.match(data, pos)
                if m is None:
                    self._incomplete_line(data, pos, "chunk size line")
                    self._pending = data[pos:]
                    break
                if m.end() - pos > MAX_CHUNK_LINE:
                    raise ProtocolError(f"chunk size line longer than {MAX_CHUNK_LINE} bytes")
                size = int(m.group(1), 16)
                if size > MAX_CHUNK_SIZE:
                    raise ProtocolError("chunk size too large")
                pos = m.end()
                if size:
                    self._left = size
                    state = _DATA
                else:
                    state = _TRAILER
            elif state == _DATA_END:
                if data.startswith(b"\r\n", pos):
                    pos += 2
                elif data.startswith(b"\n", pos):
                    pos += 1
                elif data[pos:] == b"\r":
                    self._pending = b"\r"
                    break
                else:
                    raise ProtocolError("missing CRLF after chunk data")
                state = _SIZE
            elif state == _TRAILER:
                nl = data.find(b"\n", pos)
                if nl < 0:
                    self._incomplete_line(data, pos, "trailer section")
                    self._pending = data[pos:]
                    break
                line = data[pos:nl]
                self._trailers += nl + 1 - pos
                if self._trailers > MAX_TRAILERS:
                    raise ProtocolError(f"trailer section longer than {MAX_TRAILERS} bytes")
                pos = nl + 1
                if line in (b"", b"\r"):
                    state = _DONE
                    self.done = True
            else:  # _DONE
                self.extra += data[pos:]
                break
        self._state = state
        if len(out) == 1:
            return out[0]
        return b"".join(out)

    def _incomplete_line(self, data: bytes, pos: int, what: str) -> None:
        """No match at pos: malformed now, or a line still arriving (bounded)."""
        nl = data.find(b"\n", pos)
        if nl >= 0 and what == "chunk size line":
            shown = data[pos : min(nl, pos + 20)].decode("ascii", "replace")
            raise ProtocolError(f"malformed chunk size line {shown!r}")
        limit = MAX_CHUNK_LINE if what == "chunk size line" else MAX_TRAILERS
        if len(data) - pos > limit:
            raise ProtocolError(f"{what} longer than {limit} bytes")

    def missing(self) -> str:
        """Why the body is incomplete (for the error at an early close)."""
        if self._state == _DATA:
            return f"{self._left} bytes of a chunk"
        return "the end of the chunked body"


class LengthBody:
    __slots__ = ("_left", "done", "extra")

    def __init__(self, length: int) -> None:
        self._left = length
        self.done = length == 0
        self.extra = b""

    def feed(self, data: bytes) -> bytes:
        left = self._left
        if len(data) < left:
            self._left = left - len(data)
            return data
        self._left = 0
        self.done = True
        if len(data) > left:
            self.extra += data[left:]
            return data[:left]
        return data

    def missing(self) -> str:
        return f"{self._left} more bytes of the Content-Length body"


class CloseBody:
    """Read until the peer closes (no framing): the end is the close itself."""

    __slots__ = ("done", "extra")

    def __init__(self) -> None:
        self.done = False
        self.extra = b""

    def feed(self, data: bytes) -> bytes:
        return data

    def missing(self) -> str:
        return ""


Body = ChunkedBody | LengthBody | CloseBody


def body_for(status: int, headers: Headers, *, head_request: bool = False) -> Body:
    """The framing of a response body (RFC 9112 section 6.3)."""
    if head_request or status in (204, 304) or 100 <= status < 200:
        return LengthBody(0)
    coding = headers.get("transfer-encoding")
    if coding is not None:
        codings = [c.strip().lower() for c in coding.split(",")]
        if codings[-1] != "chunked":
            # not chunked last: the body runs to the close (RFC 9112 6.3 item 4, responses)
            return CloseBody()
        return ChunkedBody()
    lengths = headers.get_list("content-length")
    if lengths:
        values = {v.strip() for value in lengths for v in value.split(",")}
        if len(values) != 1:
            raise ProtocolError("conflicting Content-Length values")
        (value,) = values
        if not value.isdigit() or not value.isascii() or len(value) > 18:
            raise ProtocolError(f"invalid Content-Length {value[:20]!r}")
        return LengthBody(int(value))
    return CloseBody()


def content_decoder(headers: Headers) -> Callable[[bytes], bytes] | None:
    """gzip/deflate Content-Encoding undone; unknown codings pass as they are (as httpx)."""
    coding = headers.get("content-encoding")
    if not coding:
        return None
    steps: list[Callable[[bytes], bytes]] = []
    for name in reversed([c.strip().lower() for c in coding.split(",")]):
        if name in ("gzip", "x-gzip"):
            steps.append(zlib.decompressobj(zlib.MAX_WBITS | 16).decompress)
        elif name == "deflate":
            steps.append(_Deflate().decompress)
    if not steps:
        return None
    if len(steps) == 1:
        return _guarded(steps[0])

    def chain(data: bytes) -> bytes:
        for step in steps:
            data = step(data)
        return data

    return _guarded(chain)


class _Deflate:
    """zlib-wrapped deflate, or raw deflate from servers that send that instead."""

    def __init__(self) -> None:
        self._first = True
        self._obj = zlib.decompressobj()

    def decompress(self, data: bytes) -> bytes:
        if self._first:
            self._first = False
            try:
                return self._obj.decompress(data)
            except zlib.error:
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._obj.decompress(data)


def _guarded(step: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    def decode(data: bytes) -> bytes:
        try:
            return step(data)
        except zlib.error as exc:
            raise ProtocolError(f"cannot decode the compressed body: {exc}") from None

    return decode
