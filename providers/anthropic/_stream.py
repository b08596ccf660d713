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
from operator import length_hint
from typing import Any

import msgspec

from ..errors import transport_error
from ..secrets import scrub
from ..sse import Frames
from ..stream import FramedDecoder, ToolCall
from ..types import DoneEvent, StartEvent, StreamEvent, TextDelta, ThinkingDelta, ToolCallDelta
from ._common import UsageTally, finish_reason, stop_data, stream_error
from ._wire import (
    NOT_FAST,
    OTHER_TYPES,
    Block,
    Delta,
    Error,
    EventFields,
    JsonDeltaW,
    Message,
    SignatureDeltaW,
    TextDeltaW,
    ThinkingDeltaW,
    decode_event,
    decode_fast,
    lenient,
)

# slot kinds; a signature is a piece of a thinking block
_TEXT, _THINKING, _TOOL, _SKIP, _SIGNATURE = 0, 1, 2, 3, 4
_KINDS = {"text": _TEXT, "thinking": _THINKING, "redacted_thinking": _THINKING, "tool_use": _TOOL}
_encode_json = msgspec.json.encode


def _piece_of(delta: Delta) -> tuple[int, str | None] | None:
    """(kind, value) of a delta read by its type string."""
    kind = delta.type
    if kind == "text_delta":
        return _TEXT, delta.text
    if kind == "thinking_delta":
        return _THINKING, delta.thinking
    if kind == "signature_delta":
        return _SIGNATURE, delta.signature
    if kind == "input_json_delta":
        return _TOOL, delta.partial_json
    return None  # citations_delta, compaction_delta and others we do not model


class _Slot(ToolCall):
    """One Anthropic content block: its kind and canonical index (-1 until it has
    content); the ToolCall part is used when it is a tool call."""

    __slots__ = ("input", "kind")

    def __init__(self, kind: int) -> None:
        super().__init__()
        self.kind = kind
        self.input: Any = None  # a tool call's input given whole in its start block


class AnthropicStreamDecoder(FramedDecoder):
    """Messages SSE bytes (any chunking) -> StreamEvents."""

    __slots__ = (
        "_message_id",
        "_model",
        "_open",
        "_slots",
        "_stop",
        "_stop_details",
        "_stop_sequence",
        "_usage",
    )

    def __init__(self, provider: str = "anthropic") -> None:
        super().__init__(provider)
        self._slots: dict[int, _Slot] = {}
        self._open = False  # between message_start and message_stop
        self._message_id: str | None = None
        self._model = ""
        self._stop: str | None = None
        self._stop_sequence: str | None = None
        self._stop_details: Any = None
        self._usage = UsageTally()

    def _read(self, frames: Frames, out: list[StreamEvent]) -> None:
        decode = decode_fast
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
        payloads = frames.data
        it = iter(payloads)
        for data in it:
            try:
                event = decode(data)
            except NOT_FAST:
                text_at = think_at = tool_at = None
                name = frames.name(len(payloads) - length_hint(it) - 1)
                self._general(data, name, out)
                if self.finished:
                    return
                continue
            delta = event.delta
            if delta.__class__ is TextDeltaW:  # only content_block_delta has these
                if event.index == text_at:
                    if text := delta.text:
                        append(TextDelta(index=text_index, text=text))
                    continue
                self._piece(event.index, _TEXT, delta.text, out)
                slot = self._slots.get(event.index)
                if slot is not None and slot.kind == _TEXT and slot.index >= 0:
                    text_at, text_index = event.index, slot.index
            elif delta.__class__ is ThinkingDeltaW:
                if event.index == think_at:
                    if text := delta.thinking:
                        append(ThinkingDelta(index=think_index, text=text))
                    continue
                self._piece(event.index, _THINKING, delta.thinking, out)
                slot = self._slots.get(event.index)
                if slot is not None and slot.kind == _THINKING and slot.index >= 0:
                    think_at, think_index = event.index, slot.index
            elif delta.__class__ is JsonDeltaW:
                if event.index == tool_at:
                    if args := delta.partial_json:
                        append(ToolCallDelta(index=tool_index, arguments=args))
                    continue
                self._piece(event.index, _TOOL, delta.partial_json, out)
                slot = self._slots.get(event.index)
                if slot is not None and slot.kind == _TOOL and slot.args:
                    tool_at, tool_index = event.index, slot.index
            elif delta.__class__ is SignatureDeltaW:
                self._piece(event.index, _SIGNATURE, delta.signature, out)
            elif isinstance(event, EventFields):  # not a delta, not a ping
                text_at = think_at = tool_at = None
                self._apply(OTHER_TYPES[event.__class__], event, out)
                if self.finished:
                    return

    def _general(self, data: bytes | str, name: str, out: list[StreamEvent]) -> None:
        """An event the fast shapes do not take: read with Event, leniently if need be."""
        try:
            event = decode_event(data)
        except msgspec.ValidationError:
            # valid JSON whose fields are not the types we know (a new block or
            # delta type reusing a field name): keep what can be read
            read = lenient(data)
            if read is None:
                text = data if isinstance(data, str) else data.decode("utf-8", "replace")
                self._malformed(name, text, out)
                return
            event = read
        except (msgspec.DecodeError, UnicodeDecodeError):
            if isinstance(data, bytes):  # as the SSE spec reads it: undecodable bytes replaced
                self._general(data.decode("utf-8", "replace"), name, out)
            else:
                self._malformed(name, data, out)
            return
        self._apply(event.type, event, out)

    def _apply(self, kind: str, event: EventFields, out: list[StreamEvent]) -> None:
        """One event, by its type (unknown types are skipped, as the API asks)."""
        if kind == "content_block_delta":
            piece = _piece_of(event.delta) if event.delta is not None else None
            if piece is not None:
                self._piece(event.index, *piece, out)
        elif kind == "content_block_start":
            self._block_start(event.index, event.content_block, out)
        elif kind == "content_block_stop":
            self._block_stop(event.index, out)
        elif kind == "message_delta":
            delta = event.delta
            if delta is not None:
                if delta.stop_reason is not None:
                    self._stop = delta.stop_reason
                    self._stop_sequence = delta.stop_sequence
                if delta.stop_details is not None:
                    self._stop_details = delta.stop_details
            self._usage.update(event.usage)
        elif kind == "message_stop":
            out.append(self._done())
        elif kind == "message_start":
            self._message_start(event.message, out)
        elif kind == "error":
            err = event.error or Error()
            self._fail(out, stream_error(err.type, err.message, self.provider))

    def _cut(self, unfinished: bool, out: list[StreamEvent]) -> None:
        if self._message_id is None and not self._open:
            message = "the response stream ended before any event"
        else:
            message = "the response stream ended before message_stop"
        self._fail(out, transport_error("network", message, provider=self.provider))

    # ------------------------------------------------------------ internals

    def _malformed(self, name: str, data: str, out: list[StreamEvent]) -> None:
        data = scrub(data)  # before the cut, which could split a key
        if name == "error":  # an error event whose body is not JSON
            self._fail(out, stream_error(None, data[:500] or None, self.provider))
            return
        message = f"malformed {name!r} event in the response stream: {data[:200]!r}"
        self._fail(out, transport_error("server", message, provider=self.provider))

    def _piece(self, where: int, kind: int, value: str | None, out: list[StreamEvent]) -> None:
        """A content_block_delta's piece of block ``where``: text, thinking, a
        thinking block's signature, or a tool call's argument JSON."""
        if not value:
            return
        slot = self._slots.get(where)
        if kind == _TOOL:
            if slot is not None and slot.kind == _TOOL:
                slot.piece(value, out)
            return
        want = _TEXT if kind == _TEXT else _THINKING
        if slot is None:  # a delta with no content_block_start: take it as its kind
            slot = self._slots[where] = _Slot(want)
        elif slot.kind != want:
            return
        index = self.blocks.of(slot)
        if kind == _TEXT:
            out.append(TextDelta(index=index, text=value))
        elif kind == _THINKING:
            out.append(ThinkingDelta(index=index, text=value))
        else:
            out.append(ThinkingDelta(index=index, signature=value))

    def _message_start(self, message: Message | None, out: list[StreamEvent]) -> None:
        message = message or Message()
        if self._open or self._message_id is not None:
            if message.id is None or message.id == self._message_id:
                return  # a repeated frame of the same message
            why = (
                f"the response stream was spliced: message {message.id} started while "
                f"message {self._message_id} was still open (an intermediary retried "
                "mid-generation); the partial answer cannot be used"
            )
            self._fail(out, transport_error("network", why, provider=self.provider))
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

    def _block_start(self, where: int, block: Block | None, out: list[StreamEvent]) -> None:
        block = block or Block()
        kind = _KINDS.get(block.type, _SKIP)
        slot = self._slots[where] = _Slot(kind)
        if kind == _TEXT:
            if block.text:
                out.append(TextDelta(index=self.blocks.of(slot), text=block.text))
        elif kind == _THINKING:
            if block.type == "redacted_thinking":
                out.append(
                    ThinkingDelta(
                        index=self.blocks.of(slot), signature=block.data or "", redacted=True
                    )
                )
            elif block.thinking or block.signature:
                out.append(
                    ThinkingDelta(
                        index=self.blocks.of(slot),
                        text=block.thinking or "",
                        signature=block.signature or None,
                    )
                )
        elif kind == _TOOL:
            slot.id = block.id or f"toolu_{uuid.uuid4().hex}"
            slot.name = block.name or ""
            slot.start(self.blocks, out)
            if block.input:
                slot.input = block.input
        elif block.type == "fallback" and isinstance(block.to, dict):
            # the answer came from another model than the one asked
            model = block.to.get("model")
            if isinstance(model, str) and model:
                self._model = model

    def _block_stop(self, where: int, out: list[StreamEvent]) -> None:
        slot = self._slots.get(where)
        if slot is None or slot.kind != _TOOL:
            return
        if not slot.args and slot.input:
            slot.piece(_encode_json(slot.input).decode(), out)
        slot.end(out)
        slot.kind = _SKIP  # a repeated stop does nothing

    def _done(self) -> DoneEvent:
        self.finished = True
        self._open = False
        return DoneEvent(
            finish_reason=finish_reason(self._stop),
            usage=self._usage.usage(),
            model=self._model or None,
            provider_data=stop_data(self._stop, self._stop_sequence, self._stop_details) or None,
        )
