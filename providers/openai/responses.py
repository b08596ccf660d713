"""OpenAI Responses (``POST {base_url}/responses``), used statelessly.

Every request carries the whole conversation with ``store: false``; reasoning
comes back as encrypted items (``include: ["reasoning.encrypted_content"]``)
that are kept on ThinkingBlocks (text = the summary, signature = the encrypted
content, provider_data = {"id": item id}) and sent back to the same provider
only. No conversation state lives at the provider.

Stream events are keyed by ``output_index`` (some servers rotate item ids
between the events of one item); each output item that carries something the
project models (reasoning, message text, function call) gets the next canonical
block index when it first shows content. Server-side tools (web search, code
interpreter, MCP, shell...) and unknown events are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..accumulate import collect
from ..base import HttpRequest
from ..catalog import Catalog, default_catalog
from ..errors import transport_error
from ..settings import ProviderSettings
from ..sse import SSEDecoder
from ..thinking import ThinkingMapping
from ..types import (
    DoneEvent,
    ErrorEvent,
    FinishReason,
    ImageBlock,
    Message,
    ProviderError,
    ProviderFailure,
    Request,
    Response,
    StartEvent,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    ToolResultBlock,
    Usage,
)
from ._common import (
    as_int,
    decode_http_error,
    headers_for,
    image_url,
    json_bytes,
    response_schema,
    stream_error,
    thinking_for,
    tool_arguments,
    tool_result_text,
    tool_schema,
    url_for,
)

INCOMPLETE: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


class _Resp(msgspec.Struct):
    id: Any = None
    model: Any = None
    status: Any = None
    usage: Any = None
    incomplete_details: Any = None
    error: Any = None
    output: Any = None


class _Event(msgspec.Struct):
    type: Any = None
    delta: Any = None
    output_index: Any = None
    item_id: Any = None
    summary_index: Any = None
    item: Any = None
    response: _Resp | None = None
    arguments: Any = None
    error: Any = None
    code: Any = None
    message: Any = None


_decode_event = msgspec.json.Decoder(_Event).decode


def responses_usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    inp = as_int(raw.get("input_tokens"))
    out = as_int(raw.get("output_tokens"))
    total = as_int(raw.get("total_tokens"))
    itd = raw.get("input_tokens_details")
    itd = itd if isinstance(itd, dict) else {}
    otd = raw.get("output_tokens_details")
    otd = otd if isinstance(otd, dict) else {}
    reasoning = as_int(otd.get("reasoning_tokens"))
    if reasoning and total == inp + out + reasoning:
        out += reasoning  # a server that counts reasoning apart from output
    return Usage(
        input_tokens=inp,
        output_tokens=out,
        thinking_tokens=reasoning,
        cached_tokens=as_int(itd.get("cached_tokens")),
        cache_write_tokens=as_int(itd.get("cache_write_tokens")),
    )


class _Item:
    __slots__ = (
        "args_seen",
        "done",
        "emitted",
        "id",
        "index",
        "kind",
        "name",
        "part",
        "pending",
        "started",
    )

    def __init__(self, kind: str) -> None:
        self.kind = kind  # message | reasoning | call | skip
        self.index = -1
        self.emitted = False  # text or thinking text sent for it
        self.part: Any = None  # last reasoning summary_index seen
        self.id = ""
        self.name = ""
        self.started = False
        self.args_seen = False
        self.done = False
        self.pending: list[str] = []


_KINDS = {"message": "message", "reasoning": "reasoning", "function_call": "call"}


class ResponsesStreamDecoder:
    """Responses SSE bytes (any chunking) -> StreamEvents."""

    def __init__(self, provider: str, model: str) -> None:
        self._provider = provider
        self._model = model
        self._sse = SSEDecoder()
        self._started = False
        self._closed = False
        self._next = 0
        self._items: dict[Any, _Item] = {}
        self._calls = 0
        self.malformed = 0

    # ------------------------------------------------------------ public

    def feed(self, data: bytes) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._closed:
            return out
        for ev in self._sse.feed(data):
            try:
                event = _decode_event(ev.data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                self.malformed += 1
                continue
            self.event(event, out)
            if self._closed:
                break
        return out

    def close(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._closed:
            return out
        if self._sse.pending:
            out.extend(self.feed(b"\n\n"))
            if self._closed:
                return out
        self._closed = True
        out.append(
            ErrorEvent(
                error=transport_error(
                    "network",
                    "the stream ended before the response was finished",
                    provider=self._provider,
                )
            )
        )
        return out

    # ------------------------------------------------------------ events

    def event(self, ev: _Event, out: list[StreamEvent]) -> None:
        kind = ev.type
        if not self._started:
            self._start(ev.response if kind == "response.created" else None, out)
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = ev.delta
            if delta.__class__ is str and delta:
                it = self._item(ev, "message")
                if it.kind == "message":
                    it.emitted = True
                    out.append(TextDelta(index=self._index(it), text=delta))
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
                    out.append(ThinkingDelta(index=self._index(it), text=delta))
        elif kind == "response.function_call_arguments.delta":
            delta = ev.delta
            if delta.__class__ is str and delta:
                it = self._item(ev, "call")
                if it.kind == "call":
                    it.args_seen = True
                    if it.started:
                        out.append(ToolCallDelta(index=it.index, arguments=delta))
                    else:
                        it.pending.append(delta)
        elif kind == "response.function_call_arguments.done":
            it = self._item(ev, "call")
            if (
                it.kind == "call"
                and not it.args_seen
                and isinstance(ev.arguments, str)
                and ev.arguments
            ):
                it.args_seen = True
                if it.started:
                    out.append(ToolCallDelta(index=it.index, arguments=ev.arguments))
                else:
                    it.pending.append(ev.arguments)
        elif kind == "response.output_item.added":
            self._added(ev, out)
        elif kind == "response.output_item.done":
            if isinstance(ev.item, dict):
                self._item_done(self._key(ev), ev.item, out)
        elif kind == "response.completed" or kind == "response.incomplete":
            self._finish(ev.response, out)
        elif kind == "response.failed":
            resp = ev.response
            err = resp.error if resp is not None else None
            self._fail(err or {"message": "the response failed"}, out)
        elif kind == "error":
            err = (
                ev.error if isinstance(ev.error, dict) else {"code": ev.code, "message": ev.message}
            )
            self._fail(err, out)
        # anything else (created, in_progress, part added/done, server-side tools...) is skipped

    def _start(self, resp: _Resp | None, out: list[StreamEvent]) -> None:
        self._started = True
        rid = resp.id if resp is not None and isinstance(resp.id, str) else None
        if resp is not None and isinstance(resp.model, str) and resp.model:
            self._model = resp.model
        out.append(StartEvent(model=self._model, provider_data={"id": rid} if rid else None))

    def _key(self, ev: _Event) -> Any:
        return ev.output_index if ev.output_index is not None else ev.item_id

    def _item(self, ev: _Event, kind: str) -> _Item:
        key = self._key(ev)
        it = self._items.get(key)
        if it is None:
            it = self._items[key] = _Item(kind)
        return it

    def _index(self, it: _Item) -> int:
        if it.index < 0:
            it.index = self._next
            self._next += 1
        return it.index

    def _added(self, ev: _Event, out: list[StreamEvent]) -> None:
        item = ev.item
        if not isinstance(item, dict):
            return
        key = self._key(ev)
        kind = _KINDS.get(item.get("type"), "skip")
        it = self._items.get(key)
        if it is None:
            it = self._items[key] = _Item(kind)
        if kind == "call":
            self._start_call(it, item, out)
            args = item.get("arguments")
            if isinstance(args, str) and args:
                it.args_seen = True
                out.append(ToolCallDelta(index=it.index, arguments=args))

    def _start_call(self, it: _Item, item: dict[str, Any], out: list[StreamEvent]) -> None:
        if it.started:
            return
        it.kind = "call"
        it.started = True
        call_id = item.get("call_id") or item.get("id") or f"call_{self._calls}"
        name = item.get("name")
        self._calls += 1
        out.append(
            ToolCallStart(
                index=self._index(it), id=str(call_id), name=name if isinstance(name, str) else ""
            )
        )
        if it.pending:
            out.append(ToolCallDelta(index=it.index, arguments="".join(it.pending)))
            it.pending = []

    def _item_done(self, key: Any, item: dict[str, Any], out: list[StreamEvent]) -> None:
        kind = _KINDS.get(item.get("type"), "skip")
        it = self._items.get(key)
        if it is None:
            it = self._items[key] = _Item(kind)
        if kind == "skip" or it.done:
            return
        it.done = True
        if kind == "call":
            self._start_call(it, item, out)
            args = item.get("arguments")
            if not it.args_seen and isinstance(args, str) and args:
                it.args_seen = True
                out.append(ToolCallDelta(index=it.index, arguments=args))
            out.append(ToolCallDone(index=it.index))
        elif kind == "message":
            if not it.emitted:
                text = "".join(
                    str(p.get("text") or p.get("refusal") or "")
                    for p in item.get("content") or ()
                    if isinstance(p, dict)
                )
                if text:
                    it.emitted = True
                    out.append(TextDelta(index=self._index(it), text=text))
        elif kind == "reasoning":
            text = ""
            if not it.emitted:
                text = "\n\n".join(
                    str(s.get("text") or "")
                    for s in item.get("summary") or ()
                    if isinstance(s, dict)
                ) or "".join(
                    str(c.get("text") or "")
                    for c in item.get("content") or ()
                    if isinstance(c, dict)
                )
            enc = item.get("encrypted_content")
            enc = enc if isinstance(enc, str) and enc else None
            if text or enc or it.index >= 0:
                rid = item.get("id")
                out.append(
                    ThinkingDelta(
                        index=self._index(it),
                        text=text,
                        signature=enc,
                        provider_data={"id": rid} if isinstance(rid, str) and rid else None,
                    )
                )
                it.emitted = it.emitted or bool(text)

    def _finish(self, resp: _Resp | None, out: list[StreamEvent]) -> None:
        self._closed = True
        if resp is None:
            resp = _Resp(status="completed")
        if self._next == 0 and isinstance(resp.output, list):
            # a server that sent no item events: take the items from the response
            for i, item in enumerate(resp.output):
                if isinstance(item, dict):
                    self._item_done(("output", i), item, out)
        for it in self._items.values():
            if it.kind == "call" and it.started and not it.done:
                it.done = True
                out.append(ToolCallDone(index=it.index))
        finish: FinishReason
        if resp.status == "incomplete":
            details = resp.incomplete_details if isinstance(resp.incomplete_details, dict) else {}
            finish = INCOMPLETE.get(details.get("reason"), "unknown")
        else:
            finish = "tool_use" if self._calls else "stop"
        model = resp.model if isinstance(resp.model, str) and resp.model else None
        rid = resp.id if isinstance(resp.id, str) and resp.id else None
        out.append(
            DoneEvent(
                finish_reason=finish,
                usage=responses_usage(resp.usage),
                model=model,
                provider_data={"id": rid} if rid else None,
            )
        )

    def _fail(self, err: Any, out: list[StreamEvent]) -> None:
        self._closed = True
        out.append(ErrorEvent(error=stream_error(self._provider, err)))


# ---------------------------------------------------------------- the codec


class ResponsesCodec:
    """Request -> Responses API bytes; bytes -> StreamEvents / Response."""

    def __init__(self, settings: ProviderSettings, catalog: Catalog | None = None) -> None:
        self.settings = settings
        self.provider = settings.name
        self.catalog = catalog or default_catalog()

    def thinking(self, request: Request) -> ThinkingMapping:
        return thinking_for(self.catalog, self.provider, request)

    # ------------------------------------------------------------ encode

    def encode(self, request: Request, *, stream: bool) -> HttpRequest:
        headers = headers_for(self.settings, stream=stream)
        body = self.body(request, stream=stream)
        return HttpRequest("POST", url_for(self.settings, "responses"), headers, json_bytes(body))

    def body(self, request: Request, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model}
        system = "\n\n".join(b.text for b in request.system if b.text)
        if system:
            body["instructions"] = system
        body["input"] = self._input(request)
        body["max_output_tokens"] = request.max_output_tokens
        if stream:
            body["stream"] = True
        body["store"] = False
        m = self.thinking(request)
        if m.kind != "none":
            body["include"] = ["reasoning.encrypted_content"]
        if m.supported and m.kind != "none":
            reasoning: dict[str, Any] = {}
            effort = m.effort if m.effort is not None else m.level_name
            if effort is not None:
                reasoning["effort"] = effort
            if m.enabled and request.thinking.include_summary:
                reasoning["summary"] = "auto"
            if reasoning:
                body["reasoning"] = reasoning
        if request.tools:
            tools = []
            for tool in request.tools:
                params, strict = tool_schema(tool)
                spec: dict[str, Any] = {"type": "function", "name": tool.name}
                if tool.description:
                    spec["description"] = tool.description
                spec["parameters"] = params
                spec["strict"] = strict
                tools.append(spec)
            body["tools"] = tools
            choice = request.tool_choice
            if choice.mode == "tool":
                body["tool_choice"] = {"type": "function", "name": choice.name}
            else:
                body["tool_choice"] = choice.mode
            body["parallel_tool_calls"] = request.parallel_tool_calls
        if request.response_schema is not None:
            name, schema, strict = response_schema(request.response_schema)
            body["text"] = {
                "format": {"type": "json_schema", "name": name, "schema": schema, "strict": strict}
            }
        if request.provider_data:
            extra = request.provider_data.get("body")
            if isinstance(extra, dict):
                body.update(extra)
        return body

    def _input(self, request: Request) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for m in request.messages:
            if m.role == "assistant":
                self._assistant(m, items)
            else:
                self._user(m, items)
        return items

    def _user(self, m: Message, items: list[dict[str, Any]]) -> None:
        parts: list[dict[str, Any]] = []
        for b in m.content:
            if isinstance(b, ToolResultBlock):
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": b.tool_call_id,
                        "output": tool_result_text(b),
                    }
                )
            elif isinstance(b, TextBlock):
                parts.append({"type": "input_text", "text": b.text})
            elif isinstance(b, ImageBlock):
                parts.append({"type": "input_image", "image_url": image_url(b)})
        if not parts:
            return
        if len(parts) == 1 and parts[0]["type"] == "input_text":
            items.append({"role": "user", "content": parts[0]["text"]})
        else:
            items.append({"role": "user", "content": parts})

    def _assistant(self, m: Message, items: list[dict[str, Any]]) -> None:
        text: list[str] = []

        def flush() -> None:
            if text:
                items.append({"role": "assistant", "content": "".join(text)})
                text.clear()

        for b in m.content:
            if isinstance(b, TextBlock):
                if b.text:
                    text.append(b.text)
            elif isinstance(b, ThinkingBlock):
                rid = (b.provider_data or {}).get("id")
                # encrypted reasoning goes back only to the provider that made it
                if b.provider == self.provider and b.signature and rid and not b.redacted:
                    flush()
                    items.append(
                        {
                            "type": "reasoning",
                            "id": rid,
                            "summary": [{"type": "summary_text", "text": b.text}] if b.text else [],
                            "encrypted_content": b.signature,
                        }
                    )
            elif isinstance(b, ToolCallBlock):
                flush()
                items.append(
                    {
                        "type": "function_call",
                        "call_id": b.id,
                        "name": b.name,
                        "arguments": tool_arguments(b),
                    }
                )
        flush()

    # ------------------------------------------------------------ decode

    def stream_decoder(self, request: Request) -> ResponsesStreamDecoder:
        return ResponsesStreamDecoder(self.provider, request.model)

    def decode_response(self, body: bytes, request: Request) -> Response:
        try:
            data = msgspec.json.decode(body)
        except msgspec.DecodeError:
            raise ProviderFailure(
                ProviderError(
                    category="server",
                    message="the response body is not JSON",
                    provider=self.provider,
                    retryable=True,
                )
            ) from None
        if not isinstance(data, dict):
            data = {}
        if data.get("error") is not None and (data.get("status") in (None, "failed")):
            raise ProviderFailure(stream_error(self.provider, data["error"]))
        try:
            resp = msgspec.convert(data, _Resp)
        except msgspec.ValidationError:
            resp = _Resp()
        decoder = ResponsesStreamDecoder(self.provider, request.model)
        events: list[StreamEvent] = []
        decoder._start(resp, events)
        decoder._finish(resp, events)
        return collect(events, provider=self.provider)

    def decode_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> ProviderError:
        return decode_http_error(self.provider, status, body, headers)
