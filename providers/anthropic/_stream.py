"""Decode a streamed Messages response (SSE) into StreamEvents.

The wire: ``message_start`` (model, input usage), then per content block
``content_block_start`` / ``content_block_delta``* / ``content_block_stop``
(deltas: text_delta, thinking_delta, signature_delta, input_json_delta,
citations_delta...), ``ping`` at any time, ``message_delta`` (stop_reason,
cumulative usage), ``message_stop``; or an ``error`` event at any point.

Blocks the project does not model (server_tool_use, *_tool_result, fallback,
compaction, container_upload...) are skipped. Canonical block indices are
dense from 0 over the blocks that are kept; a text or thinking block gets its
index with its first non-empty piece, so the empty text block some models open
before thinking (or after it) never becomes a block.

Out-of-spec streams seen behind intermediaries:

* a second ``message_start`` with the same message id (a gateway that repeats
  the frame) is ignored;
* a ``message_start`` with another id while the first message is still open
  means a retried generation was spliced into the same body: the first one
  was cut off mid-block and the two cannot be merged into one replayable turn
  (Anthropic rejects modified thinking blocks), so the stream ends with a
  retryable ErrorEvent;
* anything after ``message_stop`` is ignored.
"""

from __future__ import annotations

import uuid
from typing import Any

import msgspec

from ..errors import transport_error
from ..secrets import scrub
from ..sse import SSEDecoder
from ..types import (
    RETRYABLE_CATEGORIES,
    DoneEvent,
    ErrorEvent,
    ProviderError,
    StartEvent,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
)
from ._common import UsageTally, WireUsage, finish_reason, stream_error


class _Delta(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None
    # message_delta
    stop_reason: str | None = None
    stop_sequence: str | None = None
    stop_details: Any = None


class _Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None  # redacted_thinking
    id: str | None = None
    name: str | None = None
    input: Any = None
    to: Any = None  # fallback: {"model": ...}


class _Message(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    content: list[_Block] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: WireUsage | None = None


class _Error(msgspec.Struct):
    type: str | None = None
    message: str | None = None


class _Event(msgspec.Struct):
    type: str = ""
    index: int = -1
    delta: _Delta | None = None
    content_block: _Block | None = None
    message: _Message | None = None
    usage: WireUsage | None = None
    error: _Error | None = None


_decode_event = msgspec.json.Decoder(_Event).decode
_encode_json = msgspec.json.encode


# ------------------------------------------------------------ fast shapes
# A tagged union with one Struct per event type the decoder knows, so dispatch
# is on the class, not on strings. A payload this union accepts is one
# _decode_event accepts with the same values; anything it rejects (an unknown
# event or delta type, a field of another type, bad JSON) goes to the general
# path unchanged:
#
# * content_block_delta and its four known deltas declare only their own keys
#   and forbid the others, which is what the API sends; a payload with any
#   other key is left to the general path, which reads and checks every field;
# * the other events declare every field of _Event with the same types.
#
# gc=False: decoded JSON holds no reference cycles.


class _TextDeltaW(msgspec.Struct, tag_field="type", tag="text_delta", forbid_unknown_fields=True, gc=False):
    text: str | None = None


class _ThinkingDeltaW(
    msgspec.Struct, tag_field="type", tag="thinking_delta", forbid_unknown_fields=True, gc=False
):
    thinking: str | None = None


class _SignatureDeltaW(
    msgspec.Struct, tag_field="type", tag="signature_delta", forbid_unknown_fields=True, gc=False
):
    signature: str | None = None


class _JsonDeltaW(msgspec.Struct, tag_field="type", tag="input_json_delta", forbid_unknown_fields=True, gc=False):
    partial_json: str | None = None


class _BlockDeltaW(
    msgspec.Struct, tag_field="type", tag="content_block_delta", forbid_unknown_fields=True, gc=False
):
    index: int = -1
    delta: _TextDeltaW | _ThinkingDeltaW | _SignatureDeltaW | _JsonDeltaW | None = None


class _EventFields(msgspec.Struct, gc=False):
    index: int = -1
    delta: _Delta | None = None
    content_block: _Block | None = None
    message: _Message | None = None
    usage: WireUsage | None = None
    error: _Error | None = None


class _PingW(_EventFields, tag_field="type", tag="ping"):
    pass


class _BlockStartW(_EventFields, tag_field="type", tag="content_block_start"):
    pass


class _BlockStopW(_EventFields, tag_field="type", tag="content_block_stop"):
    pass


class _MessageStartW(_EventFields, tag_field="type", tag="message_start"):
    pass


class _MessageDeltaW(_EventFields, tag_field="type", tag="message_delta"):
    pass


class _MessageStopW(_EventFields, tag_field="type", tag="message_stop"):
    pass


class _ErrorW(_EventFields, tag_field="type", tag="error"):
    pass


_decode_fast = msgspec.json.Decoder(
    _BlockDeltaW
    | _PingW
    | _BlockStartW
    | _BlockStopW
    | _MessageStartW
    | _MessageDeltaW
    | _MessageStopW
    | _ErrorW
).decode
# what _decode_fast raises for a payload the general path must read
_NOT_FAST = (msgspec.DecodeError, UnicodeDecodeError)  # ValidationError is a DecodeError

# slot kinds
_TEXT, _THINKING, _TOOL, _SKIP = 0, 1, 2, 3
_KINDS = {"text": _TEXT, "thinking": _THINKING, "redacted_thinking": _THINKING, "tool_use": _TOOL}


_KNOWN_DELTAS = frozenset({"text_delta", "thinking_delta", "signature_delta", "input_json_delta"})


def _convert(value: Any, kind: type) -> Any:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError:
        return None


def _lenient(data: bytes | bytearray | str) -> _Event | None:
    """An event read part by part: a part of a shape we do not know becomes None
    (an unknown block or delta is skipped anyway); None if even the frame is off."""
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        return None
    index = obj.get("index")
    event = _Event(type=obj["type"], index=index if isinstance(index, int) else -1)
    delta = obj.get("delta")
    if isinstance(delta, dict) and (obj["type"] == "message_delta" or delta.get("type") in _KNOWN_DELTAS):
        event.delta = _convert(delta, _Delta)
    block = obj.get("content_block")
    if isinstance(block, dict):
        event.content_block = _convert(block, _Block)
    message = obj.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        blocks = [_convert(b, _Block) for b in content] if isinstance(content, list) else []
        head = {k: v for k, v in message.items() if k not in ("content", "usage")}
        event.message = _convert(head, _Message) or _Message()
        event.message.content = [b for b in blocks if b is not None]
        event.message.usage = _convert(message.get("usage"), WireUsage)
    event.usage = _convert(obj.get("usage"), WireUsage)
    event.error = _convert(obj.get("error"), _Error)
    return event


def _text(data: bytes | bytearray | str) -> str:
    return data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")


def _head_name(head: bytes) -> bytes:
    """The first line of a frame "<head>\ndata: <payload>", as _event_name takes
    a frame: what _general_frame gives for it."""
    field, _, value = head.partition(b":")
    if field != b"event":
        return b""
    if value[:1] == b" ":
        value = value[1:]
    return b"event: " + value if value else b""


def _event_name(name: bytes | bytearray | str) -> str:
    """The SSE event name from a frame head (bytes) or SSEDecoder's name (str)."""
    if isinstance(name, str):
        return name
    if name[:7] != b"event: ":
        return "message"
    return name[7:].split(b"\n", 1)[0].decode("utf-8", "replace") or "message"


class _Slot:
    """One Anthropic content block: its kind and canonical index (-1 until it has content)."""

    __slots__ = ("args", "index", "input", "kind")

    def __init__(self, kind: int, index: int = -1) -> None:
        self.kind = kind
        self.index = index
        self.args = False  # a tool call got a non-empty argument piece
        self.input: Any = None  # a tool call's input given whole in its start block


class AnthropicStreamDecoder:
    __slots__ = (
        "_buf",
        "_fast",
        "_finished",
        "_message_id",
        "_model",
        "_next",
        "_open",
        "_provider",
        "_seen",
        "_slots",
        "_sse",
        "_stop",
        "_stop_details",
        "_stop_sequence",
        "_usage",
    )

    def __init__(self, provider: str = "anthropic") -> None:
        self._provider = provider
        self._sse = SSEDecoder()
        self._fast = True  # LF-only frames are cut here; anything else goes to SSEDecoder
        self._seen = False
        self._buf = bytearray()
        self._slots: dict[int, _Slot] = {}
        self._next = 0
        self._open = False  # between message_start and message_stop
        self._finished = False  # a DoneEvent or ErrorEvent was emitted
        self._message_id: str | None = None
        self._model = ""
        self._stop: str | None = None
        self._stop_sequence: str | None = None
        self._stop_details: Any = None
        self._usage = UsageTally()

    # ------------------------------------------------------------------ API

    def feed(self, data: bytes) -> list[StreamEvent]:
        if self._finished or not data:
            return []
        out: list[StreamEvent] = []
        if self._fast:
            if b"\r" not in data and (self._seen or data[:1] != b"\xef"):
                self._seen = True
                self._feed_fast(data, out)
                return out
            # CR line ends or a BOM: the general SSE decoder takes over from here,
            # starting at a frame boundary with what is still buffered
            self._fast = False
            if self._seen:
                # mid-stream: what follows is not the start of the stream, so a
                # leading EF BB BF is not a byte order mark to strip
                self._sse.feed(b"\n")
            data, self._buf = bytes(self._buf) + data, bytearray()
        for sse in self._sse.feed(data):
            self._event(sse.data, sse.event, out)
            if self._finished:
                break
        return out

    def _feed_fast(self, data: bytes, out: list[StreamEvent]) -> None:
        """LF-only SSE (what the API sends): frames end at a blank line. Gives
        exactly what SSEDecoder gives for such input, without decoding each line."""
        prev = self._buf
        if prev:
            if data.find(b"\n\n") < 0 and not (data[:1] == b"\n" and prev[-1] == 0x0A):
                prev += data  # no frame ends yet; in place: tiny chunks stay linear
                return
            buf = b"".join((prev, data))
        else:
            buf = data
        last = buf.rfind(b"\n\n")
        if last < 0:
            self._buf = bytearray(buf)
            return
        end = last + 2
        # Everything up to the last blank line, checked in C to be nothing but
        # "event: <name>\ndata: <payload>\n\n" frames (what the API sends): then
        # the payloads are cut out with a split, and no line is looked at in Python.
        lines = buf[:end].split(b"\n")
        lines.pop()  # the empty piece after the last LF
        n = len(lines) // 3
        pos = -1
        if len(lines) == 3 * n and not any(lines[2::3]):
            heads = lines[0::3]
            datas = b"\n".join(lines[1::3])
            # the first line of a frame names the event (read again only for an
            # error message); it only must not be a data line
            if datas[:6] == b"data: " and heads[0][:4] != b"data" and b"\ndata" not in b"\n".join(heads):
                # one piece per line iff every line starts with "data: "
                payloads = datas[6:].split(b"\ndata: ")
                if len(payloads) == n:
                    self._run(payloads, heads, out)
                    pos = end
        if pos < 0:
            pos = self._frames(buf, out)
        if self._finished or pos >= len(buf):
            self._buf = bytearray()
        else:
            self._buf = bytearray(buf[pos:])

    def _frames(self, buf: bytes, out: list[StreamEvent]) -> int:
        """Frame by frame, for input the bulk path does not take (comments, other
        fields, multi-line data, extra blank lines). Returns where the rest begins."""
        find = buf.find
        pos = 0
        end = find(b"\n\n")
        while end >= 0:
            frame = buf[pos:end]
            pos = end + 2
            # the usual frame: "event: <name>\ndata: <json>"
            if frame[:7] == b"event: ":
                nl = frame.find(b"\n")
                if nl > 0 and frame[nl + 1 : nl + 7] == b"data: " and frame.find(b"\n", nl + 1) < 0:
                    self._event(frame[nl + 7 :], frame, out)
                    if self._finished:
                        break
                    end = find(b"\n\n", pos)
                    continue
            self._general_frame(frame, out)
            if self._finished:
                break
            end = find(b"\n\n", pos)
        return pos

    def _run(self, payloads: list[bytes], heads: list[bytes], out: list[StreamEvent]) -> None:
        """Decode and apply the payloads of whole frames; ``heads[i]`` is the
        first line of the frame of ``payloads[i]``."""
        decode = _decode_fast
        append = out.append
        # The block the last text (thinking) delta went to and its canonical
        # index: the next text (thinking) delta of the same block is appended
        # at once. A slot keeps its kind and index until a content_block_start
        # replaces it or a content_block_stop ends a tool call, and only events
        # other than deltas and pings can do that, so any such event forgets
        # all three.
        text_at: int | None = None
        text_index = -1
        think_at: int | None = None
        think_index = -1
        # the same for the arguments of a tool call, once one piece set its args flag
        tool_at: int | None = None
        tool_index = -1
        it = iter(payloads)
        for data in it:
            try:
                event = decode(data)
            except _NOT_FAST:
                text_at = think_at = tool_at = None
                head = heads[len(payloads) - it.__length_hint__() - 1]
                self._event_general(data, _head_name(head), out)
                if self._finished:
                    return
                continue
            delta = event.delta
            cls = delta.__class__
            if cls is _TextDeltaW:  # only content_block_delta has these
                if event.index == text_at:
                    if text := delta.text:
                        append(TextDelta(index=text_index, text=text))
                    continue
                self._delta_fast(event.index, delta, out)
                slot = self._slots.get(event.index)
                if slot is not None and slot.kind == _TEXT and slot.index >= 0:
                    text_at, text_index = event.index, slot.index
            elif cls is _ThinkingDeltaW:
                if event.index == think_at:
                    if text := delta.thinking:
                        append(ThinkingDelta(index=think_index, text=text))
                    continue
                self._delta_fast(event.index, delta, out)
                slot = self._slots.get(event.index)
                if slot is not None and slot.kind == _THINKING and slot.index >= 0:
                    think_at, think_index = event.index, slot.index
            elif cls is _JsonDeltaW:
                if event.index == tool_at:
                    if args := delta.partial_json:
                        append(ToolCallDelta(index=tool_index, arguments=args))
                    continue
                self._delta_fast(event.index, delta, out)
                slot = self._slots.get(event.index)
                if slot is not None and slot.kind == _TOOL and slot.args:
                    tool_at, tool_index = event.index, slot.index
            elif event.__class__ is _BlockDeltaW:
                if delta is not None:
                    self._delta_fast(event.index, delta, out)
            elif event.__class__ is not _PingW:
                text_at = think_at = tool_at = None
                self._dispatch(event, out)
                if self._finished:
                    return

    def _general_frame(self, frame: bytes, out: list[StreamEvent]) -> None:
        """Any other frame, by the WHATWG field rules (CR never gets here)."""
        lines: list[bytes] = []
        name = b""
        for line in frame.split(b"\n"):
            field, colon, value = line.partition(b":")
            if not field and colon:
                continue  # a comment
            if value[:1] == b" ":
                value = value[1:]
            if field == b"data":
                lines.append(value)
            elif field == b"event":
                name = value
        if lines:
            self._event(b"\n".join(lines), b"event: " + name if name else b"", out)

    def _event(self, data: bytes | bytearray | str, name: bytes | bytearray | str, out: list[StreamEvent]) -> None:
        try:
            event = _decode_fast(data)
        except _NOT_FAST:
            self._event_general(data, name, out)
            return
        if event.__class__ is _BlockDeltaW:
            if event.delta is not None:
                self._delta_fast(event.index, event.delta, out)
        elif event.__class__ is not _PingW:
            self._dispatch(event, out)

    def _dispatch(self, event: Any, out: list[StreamEvent]) -> None:
        """A decoded event other than content_block_delta and ping."""
        cls = event.__class__
        if cls is _BlockStartW:
            self._block_start(event.index, event.content_block, out)
        elif cls is _BlockStopW:
            self._block_stop(event.index, out)
        elif cls is _MessageDeltaW:
            self._message_delta(event)
        elif cls is _MessageStopW:
            out.append(self._done())
        elif cls is _MessageStartW:
            self._message_start(event.message, out)
        elif cls is _ErrorW:
            err = event.error or _Error()
            out.append(ErrorEvent(error=stream_error(err.type, err.message, self._provider)))
            self._finished = True

    def _delta_fast(self, where: int, delta: Any, out: list[StreamEvent]) -> None:
        """A known content_block_delta, as _delta reads it."""
        cls = delta.__class__
        if cls is _TextDeltaW:
            if delta.text:
                self._piece(where, self._slots.get(where), _TEXT, delta.text, out)
        elif cls is _JsonDeltaW:
            slot = self._slots.get(where)
            if slot is None or slot.kind != _TOOL or not delta.partial_json:
                return
            slot.args = True
            out.append(ToolCallDelta(index=slot.index, arguments=delta.partial_json))
        elif cls is _ThinkingDeltaW:
            if delta.thinking:
                self._piece(where, self._slots.get(where), _THINKING, delta.thinking, out)
        elif delta.signature:  # _SignatureDeltaW
            slot = self._slots.get(where)
            if slot is None:
                slot = self._slots[where] = _Slot(_THINKING)
            elif slot.kind != _THINKING:
                return
            index = slot.index if slot.index >= 0 else self._claim(slot)
            out.append(ThinkingDelta(index=index, signature=delta.signature))

    def _piece(self, where: int, slot: _Slot | None, kind: int, text: str, out: list[StreamEvent]) -> None:
        """A non-empty text or thinking piece for block ``where``."""
        if slot is None:  # a delta with no content_block_start: take it as its kind
            slot = self._slots[where] = _Slot(kind)
        elif slot.kind != kind:
            return
        index = slot.index if slot.index >= 0 else self._claim(slot)
        if kind == _TEXT:
            out.append(TextDelta(index=index, text=text))
        else:
            out.append(ThinkingDelta(index=index, text=text))

    def _event_general(
        self, data: bytes | bytearray | str, name: bytes | bytearray | str, out: list[StreamEvent]
    ) -> None:
        """An event the fast shapes do not take: read with _Event, leniently if need be."""
        try:
            event = _decode_event(data)
        except msgspec.ValidationError:
            # valid JSON whose fields are not the types we know (a new block or
            # delta type reusing a field name): keep what can be read
            event = _lenient(data)
            if event is None:
                out.append(self._malformed(_event_name(name), _text(data)))
                return
        except (msgspec.DecodeError, UnicodeDecodeError):
            if not isinstance(data, str):  # as SSEDecoder would: undecodable bytes replaced
                self._event_general(bytes(data).decode("utf-8", "replace"), _event_name(name), out)
            else:
                out.append(self._malformed(_event_name(name), data))
            return
        kind = event.type
        if kind == "content_block_delta":
            self._delta(event, out)
        elif kind == "ping":
            return
        elif kind == "content_block_start":
            self._block_start(event.index, event.content_block, out)
        elif kind == "content_block_stop":
            self._block_stop(event.index, out)
        elif kind == "message_delta":
            self._message_delta(event)
        elif kind == "message_stop":
            out.append(self._done())
        elif kind == "message_start":
            self._message_start(event.message, out)
        elif kind == "error":
            err = event.error or _Error()
            out.append(ErrorEvent(error=stream_error(err.type, err.message, self._provider)))
            self._finished = True
        # unknown event types are skipped, as the API asks clients to do

    def close(self) -> list[StreamEvent]:
        self._sse.close()
        self._buf = bytearray()
        if self._finished:
            return []
        self._finished = True
        if self._message_id is None and not self._open:
            message = "the response stream ended before any event"
        else:
            message = "the response stream ended before message_stop"
        return [ErrorEvent(error=transport_error("network", message, provider=self._provider))]

    # ------------------------------------------------------------ internals

    def _fail(self, category: str, message: str) -> ErrorEvent:
        self._finished = True
        return ErrorEvent(
            error=ProviderError(
                category=category,  # type: ignore[arg-type]
                message=message,
                retryable=category in RETRYABLE_CATEGORIES,
                provider=self._provider,
            )
        )

    def _malformed(self, name: str, data: str) -> ErrorEvent:
        data = scrub(data)  # before the cut, which could split a key
        if name == "error":  # an error event whose body is not JSON
            self._finished = True
            return ErrorEvent(error=stream_error(None, data[:500] or None, self._provider))
        return self._fail("server", f"malformed {name!r} event in the response stream: {data[:200]!r}")

    def _message_start(self, message: _Message | None, out: list[StreamEvent]) -> None:
        message = message or _Message()
        if self._open or self._message_id is not None:
            if message.id is None or message.id == self._message_id:
                return  # a repeated frame of the same message
            out.append(
                self._fail(
                    "network",
                    f"the response stream was spliced: message {message.id} started while "
                    f"message {self._message_id} was still open (an intermediary retried "
                    "mid-generation); the partial answer cannot be used",
                )
            )
            return
        self._open = True
        self._message_id = message.id
        self._model = message.model or ""
        self._usage.update(message.usage)
        out.append(
            StartEvent(model=self._model, provider_data={"id": message.id} if message.id else None)
        )
        if message.stop_reason is not None:
            self._stop = message.stop_reason
            self._stop_sequence = message.stop_sequence
        # a message_start may carry whole blocks (tool calls made by server-side code)
        for i, block in enumerate(message.content or ()):
            self._block_start(-1 - i, block, out)
            self._block_stop(-1 - i, out)

    def _claim(self, slot: _Slot) -> int:
        index = slot.index = self._next
        self._next += 1
        return index

    def _block_start(self, where: int, block: _Block | None, out: list[StreamEvent]) -> None:
        block = block or _Block()
        kind = _KINDS.get(block.type, _SKIP)
        slot = self._slots[where] = _Slot(kind)
        if kind == _TEXT:
            if block.text:
                out.append(TextDelta(index=self._claim(slot), text=block.text))
        elif kind == _THINKING:
            if block.type == "redacted_thinking":
                out.append(
                    ThinkingDelta(index=self._claim(slot), signature=block.data or "", redacted=True)
                )
            elif block.thinking or block.signature:
                out.append(
                    ThinkingDelta(
                        index=self._claim(slot),
                        text=block.thinking or "",
                        signature=block.signature or None,
                    )
                )
        elif kind == _TOOL:
            out.append(
                ToolCallStart(
                    index=self._claim(slot),
                    id=block.id or f"toolu_{uuid.uuid4().hex}",
                    name=block.name or "",
                )
            )
            if block.input:
                slot.input = block.input
        elif block.type == "fallback" and isinstance(block.to, dict):
            # the answer came from another model than the one asked
            model = block.to.get("model")
            if isinstance(model, str) and model:
                self._model = model

    def _delta(self, event: _Event, out: list[StreamEvent]) -> None:
        delta = event.delta
        if delta is None:
            return
        slot = self._slots.get(event.index)
        kind = delta.type
        if kind == "text_delta":
            text = delta.text
            if not text:
                return
            if slot is None:  # a delta with no content_block_start: take it as text
                slot = self._slots[event.index] = _Slot(_TEXT)
            elif slot.kind != _TEXT:
                return
            index = slot.index if slot.index >= 0 else self._claim(slot)
            out.append(TextDelta(index=index, text=text))
        elif kind == "input_json_delta":
            if slot is None or slot.kind != _TOOL or not delta.partial_json:
                return
            slot.args = True
            out.append(ToolCallDelta(index=slot.index, arguments=delta.partial_json))
        elif kind == "thinking_delta":
            text = delta.thinking
            if not text:
                return
            if slot is None:
                slot = self._slots[event.index] = _Slot(_THINKING)
            elif slot.kind != _THINKING:
                return
            index = slot.index if slot.index >= 0 else self._claim(slot)
            out.append(ThinkingDelta(index=index, text=text))
        elif kind == "signature_delta":
            sig = delta.signature
            if not sig:
                return
            if slot is None:
                slot = self._slots[event.index] = _Slot(_THINKING)
            elif slot.kind != _THINKING:
                return
            index = slot.index if slot.index >= 0 else self._claim(slot)
            out.append(ThinkingDelta(index=index, signature=sig))
        # citations_delta, compaction_delta and others we do not model: skipped

    def _block_stop(self, where: int, out: list[StreamEvent]) -> None:
        slot = self._slots.get(where)
        if slot is None or slot.kind != _TOOL:
            return
        if not slot.args and slot.input:
            out.append(ToolCallDelta(index=slot.index, arguments=_encode_json(slot.input).decode()))
            slot.args = True
        out.append(ToolCallDone(index=slot.index))
        slot.kind = _SKIP  # a repeated stop does nothing

    def _message_delta(self, event: _Event) -> None:
        delta = event.delta
        if delta is not None:
            if delta.stop_reason is not None:
                self._stop = delta.stop_reason
                self._stop_sequence = delta.stop_sequence
            if delta.stop_details is not None:
                self._stop_details = delta.stop_details
        self._usage.update(event.usage)

    def _done(self) -> DoneEvent:
        self._finished = True
        self._open = False
        data: dict[str, Any] = {}
        if self._stop is not None:
            data["stop_reason"] = self._stop
        if self._stop_sequence is not None:
            data["stop_sequence"] = self._stop_sequence
        if self._stop_details is not None:
            data["stop_details"] = self._stop_details
        return DoneEvent(
            finish_reason=finish_reason(self._stop),
            usage=self._usage.usage(),
            model=self._model or None,
            provider_data=data or None,
        )
