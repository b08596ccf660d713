"""Typed shapes of the Messages stream events, decoded with msgspec.

Two readings of one event. ``decode_fast`` is a tagged union with one Struct
per event type the decoder knows, so the decoder dispatches on the class, not
on strings; a payload it accepts is one ``decode_event`` accepts with the same
values. Anything it rejects (an error event, an unknown event or delta type,
a field of another type, bad JSON) is read by ``decode_event`` (all event
types, string ``type``), and failing that by ``lenient`` (part by part):

* content_block_delta and its four known deltas declare only their own keys
  and forbid the others, which is what the API sends; a payload with any other
  key is left to the general reading, which reads and checks every field;
* the other events declare every field of ``Event`` with the same types.

gc=False: decoded JSON holds no reference cycles.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._common import WireUsage


class Delta(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None
    # message_delta
    stop_reason: str | None = None
    stop_sequence: str | None = None
    stop_details: Any = None


class Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None  # redacted_thinking
    id: str | None = None
    name: str | None = None
    input: Any = None
    to: Any = None  # fallback: {"model": ...}


class Message(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    content: list[Block] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: WireUsage | None = None


class Error(msgspec.Struct):
    type: str | None = None
    message: str | None = None


class EventFields(msgspec.Struct, gc=False):
    """The fields of every event but its type."""

    index: int = -1
    delta: Delta | None = None
    content_block: Block | None = None
    message: Message | None = None
    usage: WireUsage | None = None
    error: Error | None = None


class Event(EventFields):
    """Any event, its type a string (the general reading)."""

    type: str = ""


decode_event = msgspec.json.Decoder(Event).decode

# ------------------------------------------------------------ fast shapes


class _Shape(msgspec.Struct, tag_field="type", forbid_unknown_fields=True, gc=False):
    """A fast shape: its ``type`` tag, its own keys and no others."""


class TextDeltaW(_Shape, tag="text_delta"):
    text: str | None = None


class ThinkingDeltaW(_Shape, tag="thinking_delta"):
    thinking: str | None = None


class SignatureDeltaW(_Shape, tag="signature_delta"):
    signature: str | None = None


class JsonDeltaW(_Shape, tag="input_json_delta"):
    partial_json: str | None = None


FastDelta = TextDeltaW | ThinkingDeltaW | SignatureDeltaW | JsonDeltaW


class BlockDeltaW(_Shape, tag="content_block_delta"):
    index: int = -1
    delta: FastDelta | None = None


class PingW(_Shape, tag="ping", forbid_unknown_fields=False):
    # never sent: here so that a ping reads as a delta of nothing
    index: int = -1
    delta: None = None


class _Other(EventFields, tag_field="type"):
    """An event but a delta or a ping, with every field of Event."""


class BlockStartW(_Other, tag="content_block_start"): ...


class BlockStopW(_Other, tag="content_block_stop"): ...


class MessageStartW(_Other, tag="message_start"): ...


class MessageDeltaW(_Other, tag="message_delta"): ...


class MessageStopW(_Other, tag="message_stop"): ...


# the type of each of the other fast shapes (an error event is read by decode_event)
OTHER_TYPES: dict[type[EventFields], str] = {
    cls: str(cls.__struct_config__.tag)
    for cls in (BlockStartW, BlockStopW, MessageStartW, MessageDeltaW, MessageStopW)
}
decode_fast = msgspec.json.Decoder(
    BlockDeltaW | PingW | BlockStartW | BlockStopW | MessageStartW | MessageDeltaW | MessageStopW
).decode
# what decode_fast raises for a payload the general reading must read
NOT_FAST = (msgspec.DecodeError, UnicodeDecodeError)  # ValidationError is a DecodeError

# ------------------------------------------------------------ lenient reading

KNOWN_DELTAS = frozenset({"text_delta", "thinking_delta", "signature_delta", "input_json_delta"})


def _convert(value: Any, kind: type[Any]) -> Any:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError:
        return None


def lenient(data: bytes | str) -> Event | None:
    """An event read part by part: a part of a shape we do not know becomes None
    (an unknown block or delta is skipped anyway); None if even the frame is off."""
    try:
        obj = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeError):  # invalid UTF-8, a lone surrogate
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        return None
    index = obj.get("index")
    event = Event(type=obj["type"], index=index if isinstance(index, int) else -1)
    delta = obj.get("delta")
    if isinstance(delta, dict) and (
        obj["type"] == "message_delta" or delta.get("type") in KNOWN_DELTAS
    ):
        event.delta = _convert(delta, Delta)
    block = obj.get("content_block")
    if isinstance(block, dict):
        event.content_block = _convert(block, Block)
    message = obj.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        blocks = [_convert(b, Block) for b in content] if isinstance(content, list) else []
        head = {k: v for k, v in message.items() if k not in ("content", "usage")}
        event.message = _convert(head, Message) or Message()
        event.message.content = [b for b in blocks if b is not None]
        event.message.usage = _convert(message.get("usage"), WireUsage)
    event.usage = _convert(obj.get("usage"), WireUsage)
    event.error = _convert(obj.get("error"), Error)
    return event
