"""OpenAI Chat Completions (``POST {base_url}/chat/completions``) and every
OpenAI-compatible service that speaks it (DeepSeek, xAI, OpenRouter, Groq,
Mistral, Ollama, llama.cpp, vLLM...), with the service's dialect flags.

Dialect flags (``ProviderSettings.dialect``, from the catalog):

* ``reasoning_content``: reasoning arrives in ``reasoning_content``. It is read
  whatever the flag; with ``thinking_toggle`` too (DeepSeek) the reasoning of
  the assistant messages of the current tool-call loop is sent back.
* ``openrouter_reasoning``: OpenRouter's ``reasoning`` request object, and its
  ``reasoning``/``reasoning_details`` deltas (details go back to OpenRouter).
* ``thinking_toggle``: ``thinking: {type: enabled|disabled}`` plus
  ``reasoning_effort`` (DeepSeek V4).
* ``content_thinking_chunks``: reasoning as ``{"type": "thinking"}`` content
  parts (Mistral); content lists are read whatever the flag.
* ``max_tokens_field``: ``max_tokens`` instead of ``max_completion_tokens``.
* ``no_stream_usage``: no ``stream_options`` (the service rejects it).
"""

from __future__ import annotations

import secrets
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

FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "model_length": "length",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "content_filter",
}

# ---------------------------------------------------------------- wire shapes
# Leaves are ``Any`` and checked in code: a compatible server that sends an
# unexpected type in one field must not cost the whole chunk.


class _Fn(msgspec.Struct):
    name: Any = None
    arguments: Any = None


class _ToolCall(msgspec.Struct):
    index: Any = None
    id: Any = None
    function: _Fn | None = None


class _Delta(msgspec.Struct):
    content: Any = None
    reasoning_content: Any = None
    reasoning: Any = None
    reasoning_details: Any = None
    refusal: Any = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(msgspec.Struct):
    index: Any = 0
    delta: _Delta | None = None
    finish_reason: Any = None
    text: Any = None  # legacy completions


class _Chunk(msgspec.Struct):
    id: Any = None
    model: Any = None
    choices: list[_Choice] | None = None
    usage: Any = None
    error: Any = None


_decode_chunk = msgspec.json.Decoder(_Chunk).decode


def chat_usage(raw: Any) -> Usage:
    """Usage of a Chat Completions answer in the project's conventions.

    ``prompt_tokens`` includes cached tokens. ``completion_tokens`` includes
    reasoning for OpenAI and DeepSeek; xAI leaves reasoning out of it (its
    total is prompt + completion + reasoning), which is added back here.
    """
    if not isinstance(raw, dict):
        return Usage()
    prompt = as_int(raw.get("prompt_tokens"))
    completion = as_int(raw.get("completion_tokens"))
    total = as_int(raw.get("total_tokens"))
    ptd = raw.get("prompt_tokens_details")
    ptd = ptd if isinstance(ptd, dict) else {}
    ctd = raw.get("completion_tokens_details")
    ctd = ctd if isinstance(ctd, dict) else {}
    cached = as_int(ptd.get("cached_tokens")) or as_int(raw.get("prompt_cache_hit_tokens"))
    reasoning = as_int(ctd.get("reasoning_tokens"))
    output = completion
    if reasoning and total == prompt + completion + reasoning:
        output = completion + reasoning
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        thinking_tokens=reasoning,
        cached_tokens=cached,
        cache_write_tokens=as_int(ptd.get("cache_write_tokens")),
    )


def _merge_details(into: list[dict[str, Any]], details: list[Any]) -> None:
    """Fold streamed OpenRouter reasoning_details pieces into whole entries."""
    for d in details:
        if not isinstance(d, dict):
            continue
        key = (d.get("index", len(into)), d.get("type"))
        for have in into:
            if (have.get("index", -1), have.get("type")) == key:
                for field in ("text", "summary"):
                    if isinstance(d.get(field), str):
                        have[field] = (have.get(field) or "") + d[field]
                for k, v in d.items():
                    if k not in ("text", "summary") and v is not None:
                        have[k] = v
                break
        else:
            into.append(dict(d))


class _Call:
    __slots__ = ("args", "done", "id", "index", "name", "started")

    def __init__(self) -> None:
        self.index = -1
        self.id = ""
        self.name = ""
        self.started = False
        self.done = False
        self.args: list[str] = []  # held back until the name is known


class ChatStreamDecoder:
    """Chat Completions SSE bytes (any chunking) -> StreamEvents."""

    def __init__(self, provider: str, model: str) -> None:
        self._provider = provider
        self._sse = SSEDecoder()
        self._request_model = model
        self._model: str | None = None
        self._started = False
        self._closed = False
        self._finish: str | None = None
        self._usage: Any = None
        self._next = 0
        self._text: int = -1
        self._think: int = -1
        self._slots: dict[Any, _Call] = {}
        self._calls: list[_Call] = []
        self._details: list[dict[str, Any]] = []
        self._id = ""
        self.malformed = 0  # payloads that were not JSON chunks (skipped)

    # ------------------------------------------------------------ public

    def feed(self, data: bytes) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._closed:
            return out
        for ev in self._sse.feed(data):
            self._payload(ev.data, out)
            if self._closed:
                break
        return out

    def close(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._closed:
            return out
        if self._sse.pending:
            # a last event without its blank line: take it rather than lose it
            for ev in self._sse.feed(b"\n\n"):
                self._payload(ev.data, out)
                if self._closed:
                    return out
        if self._finish is not None:
            self._end(out)
        else:
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

    # ------------------------------------------------------------ chunks

    def _payload(self, data: str, out: list[StreamEvent]) -> None:
        if data == "[DONE]":
            self._end(out)
            return
        try:
            chunk = _decode_chunk(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.malformed += 1
            return
        self.chunk(chunk, out)

    def chunk(self, chunk: _Chunk, out: list[StreamEvent]) -> None:
        if not self._started:
            self._started = True
            if isinstance(chunk.id, str) and chunk.id:
                self._id = chunk.id
            model = (
                chunk.model if isinstance(chunk.model, str) and chunk.model else self._request_model
            )
            out.append(
                StartEvent(model=model, provider_data={"id": self._id} if self._id else None)
            )
        if chunk.error is not None:
            self._closed = True
            out.append(ErrorEvent(error=stream_error(self._provider, chunk.error)))
            return
        if isinstance(chunk.model, str) and chunk.model:
            self._model = chunk.model
        if chunk.choices:
            for choice in chunk.choices:
                if choice.index not in (0, None):
                    continue  # n > 1: only the first choice is read
                delta = choice.delta
                if delta is not None:
                    self._delta(delta, out)
                elif choice.text.__class__ is str:
                    self._text_piece(choice.text, out)
                if isinstance(choice.finish_reason, str):
                    self._finish = choice.finish_reason
                    self._close_calls(out)
        if chunk.usage is not None:
            self._usage = chunk.usage

    def _delta(self, delta: _Delta, out: list[StreamEvent]) -> None:
        content = delta.content
        if (
            content.__class__ is str
            and delta.reasoning_content is None
            and delta.reasoning is None
            and delta.tool_calls is None
            and delta.reasoning_details is None
            and delta.refusal is None
        ):
            # the hot path: plain text
            if content:
                if self._text < 0:
                    self._text = self._next
                    self._next += 1
                out.append(TextDelta(index=self._text, text=content))
            return
        # reasoning first: a message that has both thought before it answered
        thought = False
        rc = delta.reasoning_content
        if rc.__class__ is not str or not rc:
            rc = delta.reasoning
        if rc.__class__ is str and rc:
            self._thinking(rc, out)
            thought = True
        if isinstance(delta.reasoning_details, list):
            _merge_details(self._details, delta.reasoning_details)
            if not thought:
                for d in delta.reasoning_details:
                    if isinstance(d, dict):
                        piece = d.get("text") or d.get("summary")
                        if isinstance(piece, str) and piece:
                            self._thinking(piece, out)
        if content.__class__ is str:
            self._text_piece(content, out)
        elif isinstance(content, list):
            self._parts(content, out)
        refusal = delta.refusal
        if refusal.__class__ is str and refusal:
            self._text_piece(refusal, out)
        if delta.tool_calls:
            for tc in delta.tool_calls:
                self._tool(tc, out)

    def _parts(self, parts: list[Any], out: list[StreamEvent]) -> None:
        """Content as a list of parts: text, and Mistral's thinking chunks."""
        for part in parts:
            if isinstance(part, str):
                self._text_piece(part, out)
            elif isinstance(part, dict):
                kind = part.get("type")
                if kind == "text" and isinstance(part.get("text"), str):
                    self._text_piece(part["text"], out)
                elif kind == "thinking":
                    inner = part.get("thinking")
                    if isinstance(inner, str):
                        self._thinking(inner, out)
                    elif isinstance(inner, list):
                        for sub in inner:
                            text = sub.get("text") if isinstance(sub, dict) else sub
                            if isinstance(text, str) and text:
                                self._thinking(text, out)

    def _text_piece(self, text: str, out: list[StreamEvent]) -> None:
        if not text:
            return
        if self._text < 0:
            self._text = self._next
            self._next += 1
        out.append(TextDelta(index=self._text, text=text))

    def _thinking(self, text: str, out: list[StreamEvent]) -> None:
        if self._think < 0:
            self._think = self._next
            self._next += 1
        out.append(ThinkingDelta(index=self._think, text=text))

    def _tool(self, tc: _ToolCall, out: list[StreamEvent]) -> None:
        tc_id = tc.id if isinstance(tc.id, str) and tc.id else None
        key = tc.index if isinstance(tc.index, int) else None
        call = (
            self._slots.get(key) if key is not None else (self._calls[-1] if self._calls else None)
        )
        if call is None or (tc_id is not None and call.id and tc_id != call.id):
            # a new call; also when a server reuses an index for another id
            call = _Call()
            self._calls.append(call)
            self._slots[key if key is not None else len(self._calls) - 1] = call
        if tc_id is not None and not call.id:
            call.id = tc_id
        fn = tc.function
        args: Any = None
        if fn is not None:
            if isinstance(fn.name, str) and fn.name and not call.name:
                call.name = fn.name
            args = fn.arguments
            if args is not None and not isinstance(args, str):
                args = msgspec.json.encode(args).decode()  # a server that sends an object
        if not call.started and call.name:
            self._start(call, out)
        if args:
            if call.started:
                out.append(ToolCallDelta(index=call.index, arguments=args))
            else:
                call.args.append(args)

    def _start(self, call: _Call, out: list[StreamEvent]) -> None:
        call.started = True
        call.index = self._next
        self._next += 1
        if not call.id:
            call.id = f"call_{secrets.token_hex(12)}"
        out.append(ToolCallStart(index=call.index, id=call.id, name=call.name))
        if call.args:
            out.append(ToolCallDelta(index=call.index, arguments="".join(call.args)))
            call.args = []

    def _close_calls(self, out: list[StreamEvent]) -> None:
        for call in self._calls:
            if not call.done:
                if not call.started:
                    self._start(call, out)
                call.done = True
                out.append(ToolCallDone(index=call.index))

    def _end(self, out: list[StreamEvent]) -> None:
        self._closed = True
        self._close_calls(out)
        if self._details:
            if self._think < 0:
                self._think = self._next
                self._next += 1
            out.append(
                ThinkingDelta(index=self._think, provider_data={"reasoning_details": self._details})
            )
        finish: FinishReason = FINISH.get(self._finish or "", "unknown")
        if finish == "stop" and self._calls:
            finish = "tool_use"  # servers that say "stop" after tool calls
        out.append(
            DoneEvent(
                finish_reason=finish,
                usage=chat_usage(self._usage),
                model=self._model,
            )
        )


# ---------------------------------------------------------------- the codec


class ChatCodec:
    """Request -> Chat Completions bytes; bytes -> StreamEvents / Response."""

    def __init__(self, settings: ProviderSettings, catalog: Catalog | None = None) -> None:
        self.settings = settings
        self.provider = settings.name
        self.catalog = catalog or default_catalog()
        self._dialect = settings.dialect

    # ------------------------------------------------------------ encode

    def encode(self, request: Request, *, stream: bool) -> HttpRequest:
        headers = headers_for(self.settings, stream=stream)
        body = self.body(request, stream=stream)
        return HttpRequest(
            "POST", url_for(self.settings, "chat/completions"), headers, json_bytes(body)
        )

    def body(self, request: Request, *, stream: bool) -> dict[str, Any]:
        """The JSON body, as a dict (encode() sends it)."""
        dialect = self._dialect
        body: dict[str, Any] = {"model": request.model, "messages": self._messages(request)}
        if "max_tokens_field" in dialect:
            body["max_tokens"] = request.max_output_tokens
        else:
            body["max_completion_tokens"] = request.max_output_tokens
        if stream:
            body["stream"] = True
            if "no_stream_usage" not in dialect:
                body["stream_options"] = {"include_usage": True}
        if request.tools:
            tools = []
            for tool in request.tools:
                params, strict = tool_schema(tool)
                fn: dict[str, Any] = {"name": tool.name}
                if tool.description:
                    fn["description"] = tool.description
                fn["parameters"] = params
                if strict:
                    fn["strict"] = True
                tools.append({"type": "function", "function": fn})
            body["tools"] = tools
            choice = request.tool_choice
            if choice.mode == "tool":
                body["tool_choice"] = {"type": "function", "function": {"name": choice.name}}
            else:
                body["tool_choice"] = choice.mode
            body["parallel_tool_calls"] = request.parallel_tool_calls
        self._thinking(request, body)
        if request.response_schema is not None:
            name, schema, strict = response_schema(request.response_schema)
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": strict},
            }
        if request.provider_data:
            extra = request.provider_data.get("body")
            if isinstance(extra, dict):
                body.update(extra)
        return body

    def thinking(self, request: Request) -> ThinkingMapping:
        return thinking_for(self.catalog, self.provider, request)

    def _thinking(self, request: Request, body: dict[str, Any]) -> None:
        m = self.thinking(request)
        if not m.supported or m.kind in ("none", "always"):
            return
        dialect = self._dialect
        if "openrouter_reasoning" in dialect:
            reasoning: dict[str, Any]
            if m.effort is not None and m.enabled:
                reasoning = {"effort": m.effort}
            elif m.budget and m.enabled:
                reasoning = {"max_tokens": m.budget}
            elif m.level_name is not None and m.enabled:
                reasoning = {"effort": m.level_name}
            elif not m.enabled:
                reasoning = {"enabled": False}
            else:
                reasoning = {"enabled": True}
            if m.enabled and not request.thinking.include_summary:
                reasoning["exclude"] = True
            body["reasoning"] = reasoning
        elif "thinking_toggle" in dialect:
            body["thinking"] = {"type": "enabled" if m.enabled else "disabled"}
            if m.enabled and m.effort is not None:
                body["reasoning_effort"] = m.effort
        elif m.effort is not None:
            body["reasoning_effort"] = m.effort
        elif m.level_name is not None:
            body["reasoning_effort"] = m.level_name

    def _messages(self, request: Request) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        system = "\n\n".join(b.text for b in request.system if b.text)
        if system:
            out.append({"role": "system", "content": system})
        # the assistant messages after the last user text are the current tool loop
        last_user = -1
        for i, m in enumerate(request.messages):
            if m.role == "user" and any(not isinstance(b, ToolResultBlock) for b in m.content):
                last_user = i
        for i, m in enumerate(request.messages):
            if m.role == "assistant":
                msg = self._assistant(m, current_turn=i > last_user)
                if msg is not None:
                    out.append(msg)
            else:
                self._user(m, out)
        return out

    def _user(self, m: Message, out: list[dict[str, Any]]) -> None:
        parts: list[dict[str, Any]] = []
        for b in m.content:
            if isinstance(b, ToolResultBlock):
                out.append(
                    {"role": "tool", "tool_call_id": b.tool_call_id, "content": tool_result_text(b)}
                )
            elif isinstance(b, TextBlock):
                parts.append({"type": "text", "text": b.text})
            elif isinstance(b, ImageBlock):
                parts.append({"type": "image_url", "image_url": {"url": image_url(b)}})
        if not parts:
            return
        if len(parts) == 1 and parts[0]["type"] == "text":
            out.append({"role": "user", "content": parts[0]["text"]})
        else:
            out.append({"role": "user", "content": parts})

    def _assistant(self, m: Message, *, current_turn: bool) -> dict[str, Any] | None:
        text = "".join(b.text for b in m.content if isinstance(b, TextBlock))
        calls = [b for b in m.content if isinstance(b, ToolCallBlock)]
        own = [b for b in m.content if isinstance(b, ThinkingBlock) and b.provider == self.provider]
        if not text and not calls:
            return None
        msg: dict[str, Any] = {"role": "assistant", "content": text or None}
        dialect = self._dialect
        if own and calls and current_turn and {"reasoning_content", "thinking_toggle"} <= dialect:
            reasoning = "".join(b.text for b in own if not b.redacted)
            if reasoning:
                msg["reasoning_content"] = reasoning
        if own and "openrouter_reasoning" in dialect:
            details = [
                d
                for b in own
                for d in ((b.provider_data or {}).get("reasoning_details") or [])
                if isinstance(d, dict)
            ]
            if details:
                msg["reasoning_details"] = details
        if calls:
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": tool_arguments(c)},
                }
                for c in calls
            ]
        return msg

    # ------------------------------------------------------------ decode

    def stream_decoder(self, request: Request) -> ChatStreamDecoder:
        return ChatStreamDecoder(self.provider, request.model)

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
        if data.get("error") is not None:
            raise ProviderFailure(stream_error(self.provider, data["error"]))
        choices = []
        for c in data.get("choices") or ():
            if not isinstance(c, dict):
                continue
            message = c.get("message")
            if not isinstance(message, dict):
                # legacy completions put the text on the choice
                message = {"content": c.get("text")} if isinstance(c.get("text"), str) else {}
            message = dict(message)
            if isinstance(message.get("tool_calls"), list):
                message["tool_calls"] = [
                    {**tc, "index": i} if isinstance(tc, dict) else tc
                    for i, tc in enumerate(message["tool_calls"])
                ]
            choices.append(
                {
                    "index": c.get("index", 0),
                    "delta": message,
                    "finish_reason": c.get("finish_reason"),
                }
            )
        raw = {
            "id": data.get("id"),
            "model": data.get("model"),
            "choices": choices,
            "usage": data.get("usage"),
        }
        try:
            chunk = msgspec.convert(raw, _Chunk)
        except msgspec.ValidationError:
            chunk = _Chunk(id=raw["id"], model=raw["model"], usage=raw["usage"])
        decoder = ChatStreamDecoder(self.provider, request.model)
        events: list[StreamEvent] = []
        decoder.chunk(chunk, events)
        if decoder._finish is None:
            decoder._finish = "unknown"
        decoder._end(events)
        return collect(events, provider=self.provider)

    def decode_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> ProviderError:
        return decode_http_error(self.provider, status, body, headers)
