"""Server-Sent Events, pure and incremental (WHATWG rules). No I/O.

Feed bytes in any chunking, split anywhere (inside a UTF-8 sequence, between
CR and LF), and get the events completed so far.

* ``SSEDecoder``: the spec's algorithm line by line, every field (id, retry).
* ``SSEFramer``: what the stream decoders use. The same events (data and
  event type; a test holds it to SSEDecoder on any input and chunking), with
  the data as undecoded bytes, and a fast path for what providers send:
  frames of ``data: <payload>`` or ``event: <name>`` + ``data: <payload>``,
  all LF or all CRLF, cut out with a few splits checked in C and no work per
  line in Python. Anything else goes through SSEDecoder.
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
    __slots__ = (
        "_bom_checked",
        "_buf",
        "_data",
        "_event",
        "_last_id",
        "_pending",
        "_retry",
        "_skip_lf",
    )

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
                        SSEEvent(
                            self._event or "message",
                            "\n".join(self._data),
                            self._last_id,
                            self._retry,
                        )
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


def event_name(head: bytes) -> str:
    """The event type a frame's first line names ("message" unless it is an ``event`` field)."""
    field, _, value = head.partition(b":")
    if field != b"event":
        return "message"
    if value[:1] == b" ":
        value = value[1:]
    return value.decode("utf-8", "replace") or "message"


class Frames:
    """The events one ``SSEFramer.feed`` completed, in order.

    ``data[i]`` is event i's data as it came (UTF-8 not checked: a JSON decoder
    checks it anyway); ``name(i)`` its event type, worked out only when asked
    (decoders read it only to word an error).
    """

    __slots__ = ("_heads", "data")

    def __init__(self, data: list[bytes], heads: list[bytes] | list[str] | None = None) -> None:
        self.data = data
        # None: every event is a "message"; bytes: each frame's first line; str: the names
        self._heads = heads

    def name(self, i: int) -> str:
        heads = self._heads
        if heads is None:
            return "message"
        head = heads[i]
        return head if isinstance(head, str) else event_name(head)


def _frames_of(events: list[SSEEvent]) -> Frames:
    return Frames([e.data.encode() for e in events], [e.event for e in events])


def _stray_line_end(tail: bytes) -> bool:
    """Whether a CR or LF stands outside a CRLF in ``tail`` (a CR at the very end
    may be the first half of one)."""
    t = tail[:-1] if tail[-1:] == b"\r" else tail
    crlfs = t.count(b"\r\n")
    return t.count(b"\r") != crlfs or t.count(b"\n") != crlfs


def _joined(a: Frames, b: Frames) -> Frames:
    if not b.data:
        return a
    names = [a.name(i) for i in range(len(a.data))] + [b.name(i) for i in range(len(b.data))]
    return Frames(a.data + b.data, names)


def _bulk(buf: bytes, cut: int, nl: bytes) -> Frames | None:
    """The frames of ``buf[:cut]`` (which ends with an empty line) when every one
    is ``data: <payload>`` or ``<head>`` + ``data: <payload>`` (head: any line
    but a data line), lines ending in ``nl``; None for anything else."""
    blank = nl + nl
    crlf = len(nl) == 2
    if buf[:6] == b"data: ":
        pieces = buf[6 : cut - len(blank)].split(blank + b"data: ")
        # one piece per frame iff no piece holds a line end
        whole = b"".join(pieces)
        if b"\n" in whole or (crlf and b"\r" in whole):
            return None
        return Frames(pieces)
    lines = buf[:cut].split(nl)
    lines.pop()  # the empty piece after the last line end
    n = len(lines) // 3
    if len(lines) != 3 * n or any(lines[2::3]):
        return None
    if crlf:
        whole = b"".join(lines)
        if b"\n" in whole or b"\r" in whole:
            return None
    heads = lines[0::3]
    if heads[0][:4] == b"data" or nl + b"data" in nl.join(heads):
        return None
    datas = nl.join(lines[1::3])
    if datas[:6] != b"data: ":
        return None
    # one piece per frame iff every second line starts with "data: "
    pieces = datas[6:].split(nl + b"data: ")
    return Frames(pieces, heads) if len(pieces) == n else None


class SSEFramer:
    """SSE bytes in any chunking -> ``Frames``: the data and type of each event,
    exactly as SSEDecoder reads them (see the module docstring)."""

    __slots__ = ("_buf", "_crlf", "_general", "_sse", "_started")

    def __init__(self) -> None:
        self._buf = bytearray()  # the fast path's bytes after the last whole event
        self._sse = SSEDecoder()  # the general path
        self._general = False  # the general path reads the rest of the stream
        self._started = False
        self._crlf = False  # the last bytes cut had CRLF line ends

    def _may_end_event(self, data: bytes) -> bool:
        """Whether ``data``, after the buffered bytes, may hold an empty line (two
        line ends in a row: only there does an event end). CRLF alone is one line
        end; at the seam any two line-end bytes count (CR LF CR | LF)."""
        if self._buf[-1] in (0x0A, 0x0D) and data[0] in (0x0A, 0x0D):
            return True
        if self._crlf:  # the likely one first: found at the first frame's end
            return b"\n\r" in data or b"\n\n" in data or b"\r\r" in data
        return b"\n\n" in data or b"\n\r" in data or b"\r\r" in data

    def feed(self, data: bytes) -> Frames:
        if self._general:
            return _frames_of(self._sse.feed(data))
        if not data:
            return Frames([])
        if not self._started:
            self._started = True
            if data[:1] == b"\xef":  # perhaps a byte order mark: the spec's algorithm reads it all
                self._general = True
                return _frames_of(self._sse.feed(data))
            # the stream has begun: an EF BB BF the general path gets later is no byte order mark
            self._sse.feed(b"\n")
        prev = self._buf
        if prev:
            if not self._may_end_event(data):
                prev += data  # no event ends here; in place, so tiny pieces stay linear
                return Frames([])
            buf = b"".join((prev, data))
        else:
            buf = data
        crlf = self._crlf = b"\r" in buf
        nl = b"\r\n" if crlf else b"\n"
        # An empty line is always the end of an event, so what follows the last
        # one starts a new event, whatever the line ends before it.
        last = buf.rfind(nl + nl)
        if last >= 0:
            cut = last + 2 * len(nl)
            # other shapes (comments, other fields, several data lines, line ends
            # of several kinds...) through SSEDecoder, between events there as here
            frames = _bulk(buf, cut, nl) or _frames_of(self._sse.feed(buf[:cut]))
            tail = buf[cut:]
        else:
            frames = Frames([])
            tail = buf
        if crlf and _stray_line_end(tail):
            # a line end of another kind may end an event in the tail: the
            # general path reads the rest of the stream, from this event on
            self._general = True
            self._buf = bytearray()
            return _joined(frames, _frames_of(self._sse.feed(tail)))
        self._buf = bytearray(tail)
        return frames

    def close(self, *, take_partial: bool = False) -> tuple[Frames, bool]:
        """End of stream: (the events still to come, whether an unfinished event
        was discarded). A CR at the very end is a line end, so it may complete an
        event held back to see whether an LF followed. ``take_partial``: an
        unfinished event is taken as if its empty line had come, not discarded."""
        events: list[SSEEvent] = []
        if self._buf:
            events = self._sse.feed(bytes(self._buf))
            self._buf = bytearray()
        if take_partial and self._sse.pending:
            events += self._sse.feed(b"\n\n")
        return _frames_of(events), self._sse.close()
