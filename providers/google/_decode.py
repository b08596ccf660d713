"""Gemini stream decoding: SSE bytes -> canonical StreamEvents.

See ``providers.google.codec`` for the block-index and signature rules.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from typing import Any

import msgspec

from ..errors import transport_error
from ..sse import Frames
from ..stream import FramedDecoder, ToolCall
from ..types import (
    DoneEvent,
    FinishReason,
    StartEvent,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    Usage,
)
from ._errors import status_error
from ._wire import CHUNK_DECODER, Chunk, FunctionCall, PartialArg, UsageMetadata

FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "MALFORMED_RESPONSE": "error",
    "NO_IMAGE": "error",
}

SYNTHETIC_ID = "synthetic_id"
_ENCODE = msgspec.json.encode


def new_call_id() -> str:
    """An id for a function call Gemini sent without one."""
    return "call_" + uuid.uuid4().hex


def usage_of(u: UsageMetadata | None) -> Usage:
    if u is None:
        return Usage()
    thoughts = u.thoughts_token_count
    return Usage(
        input_tokens=u.prompt_token_count,
        output_tokens=u.candidates_token_count + thoughts,
        thinking_tokens=thoughts,
        cached_tokens=u.cached_content_token_count,
    )


# ------------------------------------------------------------ streamed arguments


def _path(json_path: str) -> list[str | int]:
    """'$.recipe.steps[2].name' -> ['recipe', 'steps', 2, 'name']."""
    path = json_path[1:] if json_path.startswith("$") else json_path
    out: list[str | int] = []
    for piece in path.split("."):
        if not piece:
            continue
        bracket = piece.find("[")
        if bracket < 0:
            out.append(piece)
            continue
        if bracket:
            out.append(piece[:bracket])
        for index in piece[bracket + 1 :].rstrip("]").split("]["):
            out.append(int(index) if index.isdigit() else index.strip("'\""))
    return out


class _StreamedArgs:
    """Builds the argument object of a function call streamed as partialArgs."""

    __slots__ = ("open_string", "value")

    def __init__(self) -> None:
        self.value: dict[str, Any] = {}
        self.open_string: list[str | int] | None = None

    def apply(self, args: list[PartialArg]) -> None:
        for arg in args:
            path = _path(arg.json_path)
            if not path:
                continue
            if arg.string_value is not None:
                if self.open_string == path:
                    self._set(path, self._get(path) + arg.string_value)
                else:
                    self._set(path, arg.string_value)
                self.open_string = path if arg.will_continue else None
                continue
            self.open_string = None
            if arg.number_value is not None:
                n = arg.number_value
                self._set(path, int(n) if n.is_integer() and abs(n) < 2**53 else n)
            elif arg.bool_value is not None:
                self._set(path, arg.bool_value)
            elif arg.null_value is not msgspec.UNSET:
                self._set(path, None)

    def _get(self, path: list[str | int]) -> str:
        node: Any = self.value
        for key in path:
            node = node[key]
        return node if isinstance(node, str) else ""

    def _set(self, path: list[str | int], value: Any) -> None:
        node: Any = self.value
        for key, nxt in itertools.pairwise(path):
            child_new: Any = [] if isinstance(nxt, int) else {}
            if isinstance(node, list):
                assert isinstance(key, int)
                while len(node) <= key:
                    node.append(None)
                if not isinstance(node[key], list | dict):
                    node[key] = child_new
                node = node[key]
            else:
                child = node.get(key)
                if not isinstance(child, list | dict):
                    child = node[key] = child_new
                node = child
        last = path[-1]
        if isinstance(node, list):
            if not isinstance(last, int):
                return
            while len(node) <= last:
                node.append(None)
            node[last] = value
        else:
            node[last] = value


# ------------------------------------------------------------ the decoder


class GeminiStreamDecoder(FramedDecoder):
    """Incremental decoder of one ``streamGenerateContent?alt=sse`` body."""

    __slots__ = (
        "_calls",
        "_model",
        "_new_id",
        "_open_index",
        "_open_signed",
        "_open_thought",
        "_response_id",
        "_secret",
        "_started",
        "_streaming",
        "_usage",
    )

    def __init__(
        self,
        *,
        provider: str = "google",
        secret: str | None = None,
        new_id: Callable[[], str] = new_call_id,
    ) -> None:
        super().__init__(provider)
        self._secret = secret
        self._new_id = new_id
        self._started = False
        self._open_thought: bool | None = None  # the kind of block a plain part extends, if any
        self._open_index = -1
        self._open_signed = False
        self._calls = 0
        self._streaming: tuple[ToolCall, _StreamedArgs] | None = None  # an open partialArgs call
        self._usage: UsageMetadata | None = None
        self._model = ""
        self._response_id: str | None = None

    def _read(self, frames: Frames, out: list[StreamEvent]) -> None:
        decode = CHUNK_DECODER.decode
        handle = self.handle
        for data in frames.data:
            if not data or data == b"[DONE]":
                continue
            try:
                chunk = decode(data)
            except (msgspec.DecodeError, UnicodeDecodeError):
                # read as the SSE spec gives it: text, undecodable bytes replaced
                self._payload(data.decode("utf-8", "replace"), out)
            else:
                handle(chunk, out)
            if self.finished:
                return

    def _payload(self, payload: str, out: list[StreamEvent]) -> None:
        try:
            chunk = CHUNK_DECODER.decode(payload)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            self._fail(
                out,
                transport_error("server", f"malformed stream event: {exc}", provider=self.provider),
            )
            return
        self.handle(chunk, out)

    def _cut(self, unfinished: bool, out: list[StreamEvent]) -> None:
        why = (
            "the stream was cut inside an event"
            if unfinished
            else "the stream ended without a finishReason"
        )
        self._fail(out, transport_error("network", why, provider=self.provider))

    # -------------------------------------------------------- chunks

    def handle(self, chunk: Chunk, out: list[StreamEvent]) -> None:
        """Turn one decoded GenerateContentResponse into events appended to ``out``."""
        if chunk.error is not None:
            self._fail(
                out, status_error(None, chunk.error, provider=self.provider, secret=self._secret)
            )
            return
        if not self._started:
            self._started = True
            self._model = chunk.model_version or ""
            self._response_id = chunk.response_id
            out.append(
                StartEvent(
                    model=self._model,
                    provider_data={"response_id": chunk.response_id} if chunk.response_id else None,
                )
            )
        usage = chunk.usage_metadata
        if usage is not None:
            self._usage = usage
        model = chunk.model_version
        if model:
            self._model = model
        candidates = chunk.candidates
        if not candidates:
            feedback = chunk.prompt_feedback
            if feedback is not None and feedback.block_reason:
                data = {"block_reason": feedback.block_reason}
                if feedback.block_reason_message:
                    data["block_reason_message"] = feedback.block_reason_message
                self._done(out, "content_filter", data)
            return
        cand = candidates[0]
        content = cand.content
        if content is not None and content.parts:
            for part in content.parts:
                text = part.text
                if text and part.thought_signature is None and part.function_call is None:
                    # the usual part: a piece of answer or thought text, unsigned
                    thought = part.thought
                    if thought is self._open_thought and not self._open_signed:
                        index = self._open_index
                    else:
                        index = self._open(thought)
                    if thought:
                        out.append(ThinkingDelta(index=index, text=text))
                    else:
                        out.append(TextDelta(index=index, text=text))
                    continue
                fc = part.function_call
                if fc is not None:
                    self._function_call(fc, part.thought_signature, out)
                    continue
                sig = part.thought_signature
                if text is None:
                    # no text, or a signature on a part of a kind we do not model (inlineData...)
                    continue
                if not text and not sig:
                    continue
                thought = part.thought
                if thought is self._open_thought and not self._open_signed:
                    index = self._open_index
                else:
                    index = self._open(thought)
                self._open_signed = bool(sig)
                if thought:
                    out.append(ThinkingDelta(index=index, text=text, signature=sig))
                else:
                    out.append(TextDelta(index=index, text=text, signature=sig))
        if cand.finish_reason:
            raw = cand.finish_reason
            finish = FINISH_REASONS.get(raw, "unknown")
            if finish == "stop" and self._calls:
                finish = "tool_use"
            data = {"finish_reason": raw}
            if cand.finish_message:
                data["finish_message"] = cand.finish_message
            self._done(out, finish, data)

    def _open(self, thought: bool) -> int:
        """A new text (thought) block, which unsigned parts of its kind extend."""
        index = self._open_index = self.blocks.new()
        self._open_thought = thought
        self._open_signed = False
        return index

    def _done(self, out: list[StreamEvent], finish: FinishReason, data: dict[str, Any]) -> None:
        if self._streaming is not None:
            self._end_streamed(out)
            if finish == "stop":
                finish = "tool_use"
        if self._response_id:
            data["response_id"] = self._response_id
        out.append(
            DoneEvent(
                finish_reason=finish,
                usage=usage_of(self._usage),
                model=self._model or None,
                provider_data=data,
            )
        )
        self.finished = True

    def _function_call(self, fc: FunctionCall, sig: str | None, out: list[StreamEvent]) -> None:
        self._open_thought = None  # text after a call starts a new block
        if fc.name:
            if self._streaming is not None:
                self._end_streamed(out)
            self._calls += 1
            call = ToolCall(fc.id or self._new_id(), fc.name)
            call.start(
                self.blocks,
                out,
                signature=sig,
                provider_data=None if fc.id else {SYNTHETIC_ID: True},
            )
            if fc.will_continue or (fc.partial_args and fc.args is None):
                acc = _StreamedArgs()
                if fc.args:
                    acc.value.update(fc.args)
                if fc.partial_args:
                    acc.apply(fc.partial_args)
                self._streaming = (call, acc)
                if not fc.will_continue:
                    self._end_streamed(out)
                return
            call.piece(_ENCODE(fc.args or {}).decode(), out)
            call.end(out)
            return
        if self._streaming is None:
            return  # a stray continuation with no call open (e.g. an empty terminator)
        if fc.partial_args:
            self._streaming[1].apply(fc.partial_args)
        if not fc.will_continue:
            self._end_streamed(out)

    def _end_streamed(self, out: list[StreamEvent]) -> None:
        assert self._streaming is not None
        call, acc = self._streaming
        self._streaming = None
        call.piece(_ENCODE(acc.value).decode(), out)
        call.end(out)
