"""Decode a Chat Completions stream (SSE ``data: <chunk>`` ... ``data: [DONE]``)
into StreamEvents; a whole answer is read as one chunk (see ChatCodec).

Canonical blocks: the reasoning, the text and each tool call are a block each,
numbered when they first show content. A tool call's argument pieces are held
back until its name is known.
"""

from __future__ import annotations

import secrets
from typing import Any

import msgspec

from ..errors import transport_error
from ..sse import Frames
from ..stream import FramedDecoder, ToolCall, read_json
from ..types import DoneEvent, FinishReason, StartEvent, StreamEvent, TextDelta, ThinkingDelta
from ._common import stream_error, token_usage

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


class WireFn(msgspec.Struct):
    name: Any = None
    arguments: Any = None


class WireToolCall(msgspec.Struct):
    index: Any = None
    id: Any = None
    function: WireFn | None = None


class WireDelta(msgspec.Struct):
    content: Any = None
    reasoning_content: Any = None
    reasoning: Any = None
    reasoning_details: Any = None
    refusal: Any = None
    tool_calls: list[WireToolCall] | None = None


class WireChoice(msgspec.Struct):
    index: Any = 0
    delta: WireDelta | None = None
    finish_reason: Any = None
    text: Any = None  # legacy completions


class WireChunk(msgspec.Struct):
    id: Any = None
    model: Any = None
    choices: list[WireChoice] | None = None
    usage: Any = None
    error: Any = None


_decode_chunk = msgspec.json.Decoder(WireChunk).decode


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


class ChatStreamDecoder(FramedDecoder):
    """Chat Completions SSE bytes (any chunking) -> StreamEvents."""

    __slots__ = (
        "_calls",
        "_details",
        "_finish",
        "_id",
        "_model",
        "_request_model",
        "_slots",
        "_started",
        "_text",
        "_think",
        "_usage",
        "malformed",
    )

    take_partial = True  # a last chunk without its empty line is taken rather than lost

    def __init__(self, provider: str, model: str) -> None:
        super().__init__(provider)
        self._request_model = model
        self._model: str | None = None
        self._started = False
        self._finish: str | None = None
        self._usage: Any = None
        self._text: int = -1
        self._think: int = -1
        self._slots: dict[Any, ToolCall] = {}
        self._calls: list[ToolCall] = []
        self._details: list[dict[str, Any]] = []
        self._id = ""
        self.malformed = 0  # payloads that were not JSON chunks (skipped)

    def finish(self) -> list[StreamEvent]:
        """The answer is complete (a whole JSON answer read with ``chunk``): the
        events that end the stream, as ``data: [DONE]`` gives them."""
        out: list[StreamEvent] = []
        if not self.finished:
            self._end(out)
        return out

    # ------------------------------------------------------------ chunks

    def _read(self, frames: Frames, out: list[StreamEvent]) -> None:
        for data in frames.data:
            if data == b"[DONE]":
                self._end(out)
                return
            try:
                chunk = read_json(_decode_chunk, data)
            except msgspec.DecodeError:  # and ValidationError
                self.malformed += 1
                continue
            self.chunk(chunk, out)
            if self.finished:
                return

    def _cut(self, unfinished: bool, out: list[StreamEvent]) -> None:
        if self._finish is not None:
            self._end(out)  # the finish reason came: only [DONE] is missing
            return
        message = "the stream ended before the response was finished"
        self._fail(out, transport_error("network", message, provider=self.provider))

    def chunk(self, chunk: WireChunk, out: list[StreamEvent]) -> None:
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
            self._fail(out, stream_error(self.provider, chunk.error))
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

    def _delta(self, delta: WireDelta, out: list[StreamEvent]) -> None:
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
                    self._text = self.blocks.new()
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
            self._text = self.blocks.new()
        out.append(TextDelta(index=self._text, text=text))

    def _thinking(self, text: str, out: list[StreamEvent]) -> None:
        if self._think < 0:
            self._think = self.blocks.new()
        out.append(ThinkingDelta(index=self._think, text=text))

    def _tool(self, tc: WireToolCall, out: list[StreamEvent]) -> None:
        tc_id = tc.id if isinstance(tc.id, str) and tc.id else None
        key = tc.index if isinstance(tc.index, int) else None
        call = (
            self._slots.get(key) if key is not None else (self._calls[-1] if self._calls else None)
        )
        if call is None or (tc_id is not None and call.id and tc_id != call.id):
            # a new call; also when a server reuses an index for another id
            call = ToolCall()
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
            call.piece(args, out)

    def _start(self, call: ToolCall, out: list[StreamEvent]) -> None:
        if not call.id:
            call.id = f"call_{secrets.token_hex(12)}"
        call.start(self.blocks, out)

    def _close_calls(self, out: list[StreamEvent]) -> None:
        for call in self._calls:
            if not call.done:
                if not call.started:
                    self._start(call, out)
                call.end(out)

    def _end(self, out: list[StreamEvent]) -> None:
        self.finished = True
        self._close_calls(out)
        if self._details:
            if self._think < 0:
                self._think = self.blocks.new()
            out.append(
                ThinkingDelta(index=self._think, provider_data={"reasoning_details": self._details})
            )
        finish: FinishReason = FINISH.get(self._finish or "", "unknown")
        if finish == "stop" and self._calls:
            finish = "tool_use"  # servers that say "stop" after tool calls
        out.append(
            DoneEvent(
                finish_reason=finish,
                # completion_tokens counts reasoning for OpenAI and DeepSeek, not for
                # xAI; DeepSeek names its cached tokens prompt_cache_hit_tokens
                usage=token_usage(
                    self._usage, "prompt", "completion", cache_hits="prompt_cache_hit_tokens"
                ),
                model=self._model,
            )
        )
