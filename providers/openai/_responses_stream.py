"""Decode a Responses API stream (SSE ``event: response.*`` frames) into
StreamEvents; a whole answer is read as the stream's last event (see
ResponsesCodec).

An event finds its output item by ``output_index`` first (some servers rotate
item ids between the events of one item), then by any id it names (the
item's own ``id`` or ``call_id``, the event's ``item_id``: llama-server sends
no ``output_index`` and no top-level ``item_id`` on output_item events), then
by order of appearance (an event that names nothing belongs to the latest
item of its kind; an ``output_item.done`` naming nothing known, to the oldest
unfinished one). Each output item that carries something the project models
(reasoning, message text, function call) is a canonical block, numbered when
it first shows content. Server-side tools (web search, code interpreter, MCP,
shell...) and unknown events are skipped.
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
        "_at",
        "_calls",
        "_items",
        "_model",
        "_named",
        "_started",
        "malformed",
    )

    take_partial = True  # a last event without its empty line is taken rather than lost

    def __init__(self, provider: str, model: str) -> None:
        super().__init__(provider)
        self._model = model
        self._started = False
        self._items: list[_Item] = []  # in order of appearance
        self._at: dict[Any, _Item] = {}  # by output_index
        self._named: dict[str, _Item] = {}  # by item id, call id or event item_id
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
                self._item_done(ev, ev.item, out)
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

    def _item(self, ev: WireEvent, kind: str) -> _Item:
        """The item a delta event extends (made if new): by output_index, else
        by item_id, else the latest item when it is of ``kind``."""
        index = ev.output_index
        if index is not None:
            if index.__class__ is list or index.__class__ is dict:
                index = None  # a list or object names no item
            else:
                it = self._at.get(index)
                if it is not None:
                    return it
        name = ev.item_id
        if name.__class__ is not str:
            name = None
        elif (it := self._named.get(name)) is not None:
            if index is not None:
                self._at[index] = it
            return it
        if index is None and name is None and self._items:
            it = self._items[-1]
            if it.kind == kind and not it.done:
                return it
        return self._new(kind, index, (name,))

    def _new(self, kind: str, index: Any, names: tuple[str | None, ...]) -> _Item:
        it = _Item(kind)
        self._items.append(it)
        if index is not None:
            self._at[index] = it
        for name in names:
            if name is not None:
                self._named.setdefault(name, it)
        return it

    def _find(self, ev: WireEvent | None, item: dict[str, Any], kind: str, *, done: bool) -> _Item:
        """The item an output_item event is about (made if new). It is named by
        output_index, the item's ``id`` and ``call_id`` and the event's
        ``item_id``; every name is remembered for the events that follow. A
        ``done`` that names no known item is the oldest unfinished one of its
        kind (a server that sends no output_index). Without an event (the
        items of a whole answer), each item is its own."""
        if ev is None:
            return self._new(kind, None, ())
        index = ev.output_index
        if index.__class__ is list or index.__class__ is dict:
            index = None
        names = tuple(
            v if isinstance(v, str) and v else None
            for v in (item.get("id"), item.get("call_id"), ev.item_id)
        )
        it = self._at.get(index) if index is not None else None
        if it is None:
            for name in names:
                if name is not None and (it := self._named.get(name)) is not None:
                    break
        if it is None and done and index is None and kind != "skip":
            it = next((i for i in self._items if i.kind == kind and not i.done), None)
        if it is None:
            return self._new(kind, index, names)
        if index is not None:
            self._at.setdefault(index, it)
        for name in names:
            if name is not None:
                self._named.setdefault(name, it)
        return it

    def _added(self, ev: WireEvent, out: list[StreamEvent]) -> None:
        item = ev.item
        if not isinstance(item, dict):
            return
        kind = _kind(item)
        it = self._find(ev, item, kind, done=False)
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

    def _item_done(
        self, ev: WireEvent | None, item: dict[str, Any], out: list[StreamEvent]
    ) -> None:
        kind = _kind(item)
        it = self._find(ev, item, kind, done=True)
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
                    str(s.get("text") or "") for s in _parts(item, "summary") if isinstance(s, dict)
                ) or "".join(
                    str(c.get("text") or "") for c in _parts(item, "content") if isinstance(c, dict)
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
            for item in resp.output:
                if isinstance(item, dict):
                    self._item_done(None, item, out)
        for it in self._items:
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
