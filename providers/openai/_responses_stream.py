"""Decode a Responses API stream (SSE ``event: response.*`` frames) into
StreamEvents; a whole answer is read as the stream's last event (see
ResponsesCodec).

Stream events are keyed by ``output_index`` (some servers rotate item ids
between the events of one item); each output item that carries something the
project models (reasoning, message text, function call) is a canonical block,
numbered when it first shows content. Server-side tools (web search, code
interpreter, MCP, shell...) and unknown events are skipped.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import transport_error
from ..sse import Frames
from ..stream import FramedDecoder, ToolCall, read_json
from ..types import DoneEvent, FinishReason, StartEvent, StreamEvent, TextDelta, ThinkingDelta
from ._common import stream_error, token_usage

INCOMPLETE: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


class WireResponse(msgspec.Struct):
    id: Any = None
    model: Any = None
    status: Any = None
    usage: Any = None
    incomplete_details: Any = None
    error: Any = None
    output: Any = None


class WireEvent(msgspec.Struct):
    type: Any = None
    delta: Any = None
    output_index: Any = None
    item_id: Any = None
    summary_index: Any = None
    item: Any = None
    response: WireResponse | None = None
    arguments: Any = None
    error: Any = None
    code: Any = None
    message: Any = None


_decode_event = msgspec.json.Decoder(WireEvent).decode


class _Item(ToolCall):
    """An output item; the ToolCall part is used when it is a function call."""

    __slots__ = ("emitted", "kind", "part")

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind  # message | reasoning | call | skip
        self.emitted = False  # text or thinking text sent for it
        self.part: Any = None  # last reasoning summary_index seen


_KINDS = {"message": "message", "reasoning": "reasoning", "function_call": "call"}


def _kind(item: dict[str, Any]) -> str:
    """What an output item is to the decoder (a ``type`` of any JSON value is read)."""
    kind = item.get("type")
    return _KINDS.get(kind, "skip") if isinstance(kind, str) else "skip"


class ResponsesStreamDecoder(FramedDecoder):
    """Responses SSE bytes (any chunking) -> StreamEvents."""

    __slots__ = (
        "_calls",
        "_items",
        "_model",
        "_started",
        "malformed",
    )

    take_partial = True  # a last event without its empty line is taken rather than lost

    def __init__(self, provider: str, model: str) -> None:
        super().__init__(provider)
        self._model = model
        self._started = False
        self._items: dict[Any, _Item] = {}
        self._calls = 0
        self.malformed = 0  # payloads that were not JSON events (skipped)

    def finish(self, response: WireResponse | None = None) -> list[StreamEvent]:
        """The answer is complete: the events that end the stream, as its
        ``response.completed`` event (carrying ``response``) gives them. A whole
        JSON answer is read this way: its items come from ``response.output``."""
        out: list[StreamEvent] = []
        if not self.finished:
            if not self._started:
                self._start(response, out)
            self._complete(response, out)
        return out

    def _read(self, frames: Frames, out: list[StreamEvent]) -> None:
        for data in frames.data:
            try:
                event = read_json(_decode_event, data)
            except msgspec.DecodeError:  # and ValidationError
                self.malformed += 1
                continue
            self.event(event, out)
            if self.finished:
                return

    def _cut(self, unfinished: bool, out: list[StreamEvent]) -> None:
        message = "the stream ended before the response was finished"
        self._fail(out, transport_error("network", message, provider=self.provider))

    # ------------------------------------------------------------ events

    def event(self, ev: WireEvent, out: list[StreamEvent]) -> None:
        kind = ev.type
        if not self._started:
            self._start(ev.response if kind == "response.created" else None, out)
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = ev.delta
            if delta.__class__ is str and delta:
                it = self._item(ev, "message")
                if it.kind == "message":
                    it.emitted = True
                    out.append(TextDelta(index=self.blocks.of(it), text=delta))
        elif (
            kind == "response.reasoning_summary_text.delta"
            or kind == "response.reasoning_text.delta"
        ):
            delta = ev.delta
            if delta.__class__ is str and delta:
                it = self._item(ev, "reasoning")
                if it.kind == "reasoning":
                    if it.emitted and ev.summary_index != it.part:
                        delta = "\n\n" + delta
                    it.part = ev.summary_index
                    it.emitted = True
                    out.append(ThinkingDelta(index=self.blocks.of(it), text=delta))
        elif kind == "response.function_call_arguments.delta":
            delta = ev.delta
            if delta.__class__ is str and delta:
                it = self._item(ev, "call")
                if it.kind == "call":
                    it.piece(delta, out)
        elif kind == "response.function_call_arguments.done":
            it = self._item(ev, "call")
            if it.kind == "call" and not it.args and isinstance(ev.arguments, str) and ev.arguments:
                it.piece(ev.arguments, out)
        elif kind == "response.output_item.added":
            self._added(ev, out)
        elif kind == "response.output_item.done":
            if isinstance(ev.item, dict):
                self._item_done(self._key(ev), ev.item, out)
        elif kind == "response.completed" or kind == "response.incomplete":
            self._complete(ev.response, out)
        elif kind == "response.failed":
            resp = ev.response
            err = resp.error if resp is not None else None
            self._fail(out, stream_error(self.provider, err or {"message": "the response failed"}))
        elif kind == "error":
            err = (
                ev.error if isinstance(ev.error, dict) else {"code": ev.code, "message": ev.message}
            )
            self._fail(out, stream_error(self.provider, err))
        # anything else (created, in_progress, part added/done, server-side tools...) is skipped

    def _start(self, resp: WireResponse | None, out: list[StreamEvent]) -> None:
        self._started = True
        rid = resp.id if resp is not None and isinstance(resp.id, str) else None
        if resp is not None and isinstance(resp.model, str) and resp.model:
            self._model = resp.model
        out.append(StartEvent(model=self._model, provider_data={"id": rid} if rid else None))

    def _key(self, ev: WireEvent) -> Any:
        key = ev.output_index if ev.output_index is not None else ev.item_id
        # a list or object names no item: such events share the slot of no key
        return None if isinstance(key, list | dict) else key

    def _item(self, ev: WireEvent, kind: str) -> _Item:
        key = self._key(ev)
        it = self._items.get(key)
        if it is None:
            it = self._items[key] = _Item(kind)
        return it

    def _added(self, ev: WireEvent, out: list[StreamEvent]) -> None:
        item = ev.item
        if not isinstance(item, dict):
            return
        key = self._key(ev)
        kind = _kind(item)
        it = self._items.get(key)
        if it is None:
            it = self._items[key] = _Item(kind)
        if kind == "call":
            self._start_call(it, item, out)
            args = item.get("arguments")
            if isinstance(args, str) and args:
                it.piece(args, out)

    def _start_call(self, it: _Item, item: dict[str, Any], out: list[StreamEvent]) -> None:
        if it.started:
            return
        it.kind = "call"
        it.id = str(item.get("call_id") or item.get("id") or f"call_{self._calls}")
        name = item.get("name")
        it.name = name if isinstance(name, str) else ""
        self._calls += 1
        it.start(self.blocks, out)

    def _item_done(self, key: Any, item: dict[str, Any], out: list[StreamEvent]) -> None:
        kind = _kind(item)
        it = self._items.get(key)
        if it is None:
            it = self._items[key] = _Item(kind)
        if kind == "skip" or it.done:
            return
        if kind == "call":
            self._start_call(it, item, out)
            args = item.get("arguments")
            if not it.args and isinstance(args, str) and args:
                it.piece(args, out)
            it.end(out)
            return
        it.done = True
        if kind == "message":
            if not it.emitted:
                text = "".join(
                    str(p.get("text") or p.get("refusal") or "")
                    for p in _parts(item, "content")
                    if isinstance(p, dict)
                )
                if text:
                    it.emitted = True
                    out.append(TextDelta(index=self.blocks.of(it), text=text))
        elif kind == "reasoning":
            text = ""
            if not it.emitted:
                text = "\n\n".join(
                    str(s.get("text") or "")
                    for s in _parts(item, "summary")
                    if isinstance(s, dict)
                ) or "".join(
                    str(c.get("text") or "")
                    for c in _parts(item, "content")
                    if isinstance(c, dict)
                )
            enc = item.get("encrypted_content")
            enc = enc if isinstance(enc, str) and enc else None
            if text or enc or it.index >= 0:
                rid = item.get("id")
                out.append(
                    ThinkingDelta(
                        index=self.blocks.of(it),
                        text=text,
                        signature=enc,
                        provider_data={"id": rid} if isinstance(rid, str) and rid else None,
                    )
                )
                it.emitted = it.emitted or bool(text)

    def _complete(self, resp: WireResponse | None, out: list[StreamEvent]) -> None:
        self.finished = True
        if resp is None:
            resp = WireResponse(status="completed")
        if self.blocks.count == 0 and isinstance(resp.output, list):
            # a server that sent no item events: take the items from the response
            for i, item in enumerate(resp.output):
                if isinstance(item, dict):
                    self._item_done(("output", i), item, out)
        for it in self._items.values():
            if it.kind == "call" and it.started:
                it.end(out)
        finish: FinishReason
        if resp.status == "incomplete":
            details = resp.incomplete_details if isinstance(resp.incomplete_details, dict) else {}
            reason = details.get("reason")
            finish = INCOMPLETE.get(reason, "unknown") if isinstance(reason, str) else "unknown"
        else:
            finish = "tool_use" if self._calls else "stop"
        model = resp.model if isinstance(resp.model, str) and resp.model else None
        rid = resp.id if isinstance(resp.id, str) and resp.id else None
        out.append(
            DoneEvent(
                finish_reason=finish,
                usage=token_usage(resp.usage, "input", "output"),
                model=model,
                provider_data={"id": rid} if rid else None,
            )
        )


def _parts(item: dict[str, Any], key: str) -> list[Any]:
    """``item[key]`` when it is a list (content, summary), else none: a
    provider's malformed field is skipped, never iterated."""
    value = item.get(key)
    return value if isinstance(value, list) else []
