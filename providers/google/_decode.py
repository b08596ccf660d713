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
from ..sse import SSEDecoder, SSEEvent
from ..types import (
    DoneEvent,
    ErrorEvent,
    FinishReason,
    ProviderError,
    StartEvent,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
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


class GeminiStreamDecoder:
    """Incremental decoder of one ``streamGenerateContent?alt=sse`` body."""

    def __init__(
        self,
        *,
        provider: str = "google",
        secret: str | None = None,
        new_id: Callable[[], str] = new_call_id,
    ) -> None:
        self.provider = provider
        self._secret = secret
        self._new_id = new_id
        self._sse = SSEDecoder()
        self._fast = True  # strict "data: ..." frames are cut here; anything else goes to SSEDecoder
        self._seen = False  # bytes went through the fast path
        self._buf = bytearray()  # the fast path's bytes after the last whole frame
        self._cr = False  # the last piece ended in CR
        self._started = False
        self.finished = False  # a DoneEvent or ErrorEvent was emitted
        self._next = 0  # next block index
        self._open_kind = ""  # "text" / "thought": the block a plain part extends
        self._open_index = -1
        self._open_signed = False
        self._calls = 0
        self._streaming: tuple[int, _StreamedArgs] | None = None  # an open partialArgs call
        self._usage: UsageMetadata | None = None
        self._model = ""
        self._response_id: str | None = None

    # -------------------------------------------------------- bytes in

    def feed(self, data: bytes) -> list[StreamEvent]:
        if self.finished or not data:
            return []
        if self._fast:
            if self._seen or data[:1] != b"\xef":
                self._seen = True
                out: list[StreamEvent] = []
                rest = self._feed_fast(data, out)
                if rest is None or self.finished:
                    return out
                # not the strict framing: the SSE decoder reads the rest of the
                # stream, from this frame boundary on (a blank line first, so a
                # leading EF BB BF mid-stream is not taken for a byte order mark)
                self._fast = False
                self._sse.feed(b"\n")
                return out + self._feed_general(rest)
            self._fast = False  # a byte order mark: the SSE decoder from the start
        return self._feed_general(data)

    def _feed_fast(self, data: bytes, out: list[StreamEvent]) -> bytes | None:
        """Whole frames of the form Gemini sends, ``data: <json>`` then a blank
        line, all with CRLF line ends or all with LF, are cut out here with a few
        splits checked in C, with no work per line in Python; the payloads are
        exactly what SSEDecoder gives for such frames. Returns the bytes, from a
        frame boundary on, to hand to the SSE decoder when the framing is not
        that (CR or LF alone, comments, other fields, multi-line data...)."""
        prev = self._buf
        if prev:
            if b"\n" not in data and b"\r" not in data and prev[-1] != 0x0D:
                prev += data  # no line ends here: nothing to do yet, and tiny pieces stay linear
                return None
            buf = b"".join((prev, data))
            self._buf = bytearray()
        else:
            buf = data
        crlf = b"\r" in buf
        blank = b"\r\n\r\n" if crlf else b"\n\n"
        last = buf.rfind(blank)
        if last >= 0:
            if buf[:6] != b"data: ":
                return buf
            # "data: <payload>" + blank line, over and over, iff no piece holds a
            # CR or LF (a line that is not "data: ..." would be part of one)
            payloads = buf[6:last].split(blank + b"data: ")
            whole = b"".join(payloads)
            if b"\n" in whole or (crlf and b"\r" in whole):
                return buf
            self._run(payloads, out)
            if self.finished:
                return None
            tail = buf[last + len(blank) :]
        else:
            tail = buf
        if crlf:
            # a CR or LF alone in the partial frame would end a line (and maybe
            # an event) the strict framing would wait past; a CR at the very end
            # may be the first half of a CRLF
            t = tail[:-1] if tail[-1:] == b"\r" else tail
            crlfs = t.count(b"\r\n")
            if t.count(b"\r") != crlfs or t.count(b"\n") != crlfs:
                return tail
        if tail:
            self._buf = bytearray(tail)
        return None

    def _run(self, payloads: list[bytes], out: list[StreamEvent]) -> None:
        decode = CHUNK_DECODER.decode
        handle = self.handle
        for data in payloads:
            if not data or data == b"[DONE]":
                continue
            try:
                chunk = decode(data)
            except (msgspec.DecodeError, UnicodeDecodeError):
                # read as the SSE decoder gives it: text, undecodable bytes replaced
                self._payload(data.decode("utf-8", "replace"), out)
            else:
                handle(chunk, out)
            if self.finished:
                return

    def _feed_general(self, data: bytes) -> list[StreamEvent]:
        # Gemini frames events with CRLF. CRLF and LF end lines alike in SSE, and
        # the SSE decoder is several times faster on LF-only input, so CRLF is
        # folded to LF here; a CR at the end of a piece waits for the next one.
        if self._cr:
            data = b"\r" + data
            self._cr = False
        if data[-1:] == b"\r":
            data = data[:-1]
            self._cr = True
        if b"\r\n" in data:
            data = data.replace(b"\r\n", b"\n")
        return self._events(self._sse.feed(data)) if data else []

    def _events(self, events: list[SSEEvent]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for event in events:
            if self.finished:
                break
            payload = event.data
            if not payload or payload == "[DONE]":
                continue
            self._payload(payload, out)
        return out

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

    def close(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._fast and self._buf and not self.finished:
            # the bytes after the last whole frame, to the SSE decoder to end
            self._fast = False
            self._sse.feed(b"\n")
            rest, self._buf = bytes(self._buf), bytearray()
            out = self._feed_general(rest)
        if self._cr and not self.finished:
            self._cr = False
            out += self._events(self._sse.feed(b"\r"))
        unfinished = self._sse.close()
        if self.finished:
            return out
        why = (
            "the stream was cut inside an event"
            if unfinished
            else "the stream ended without a finishReason"
        )
        self._fail(out, transport_error("network", why, provider=self.provider))
        return out

    # -------------------------------------------------------- chunks

    def _fail(self, out: list[StreamEvent], error: ProviderError) -> None:
        out.append(ErrorEvent(error=error))
        self.finished = True

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
                    if part.thought:
                        if self._open_kind == "thought" and not self._open_signed:
                            index = self._open_index
                        else:
                            index = self._next
                            self._next += 1
                            self._open_kind, self._open_index = "thought", index
                            self._open_signed = False
                        out.append(ThinkingDelta(index=index, text=text))
                    else:
                        if self._open_kind == "text" and not self._open_signed:
                            index = self._open_index
                        else:
                            index = self._next
                            self._next += 1
                            self._open_kind, self._open_index = "text", index
                            self._open_signed = False
                        out.append(TextDelta(index=index, text=text))
                    continue
                fc = part.function_call
                if fc is not None:
                    self._function_call(fc, part.thought_signature, out)
                    continue
                text = part.text
                sig = part.thought_signature
                if not text and not sig:
                    continue
                if text is None:
                    # a signature on a part of a kind we do not model (inlineData...)
                    continue
                kind = "thought" if part.thought else "text"
                if kind == self._open_kind and not self._open_signed:
                    index = self._open_index
                else:
                    index = self._next
                    self._next += 1
                    self._open_kind, self._open_index = kind, index
                    self._open_signed = False
                if sig:
                    self._open_signed = True
                if kind == "text":
                    out.append(TextDelta(index=index, text=text, signature=sig))
                else:
                    out.append(ThinkingDelta(index=index, text=text, signature=sig))
        if cand.finish_reason:
            raw = cand.finish_reason
            finish = FINISH_REASONS.get(raw, "unknown")
            if finish == "stop" and self._calls:
                finish = "tool_use"
            data = {"finish_reason": raw}
            if cand.finish_message:
                data["finish_message"] = cand.finish_message
            self._done(out, finish, data)

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
        self._open_kind = ""  # text after a call starts a new block
        if fc.name:
            if self._streaming is not None:
                self._end_streamed(out)
            index = self._next
            self._next += 1
            self._calls += 1
            call_id = fc.id
            data = None
            if not call_id:
                call_id = self._new_id()
                data = {SYNTHETIC_ID: True}
            out.append(
                ToolCallStart(
                    index=index, id=call_id, name=fc.name, signature=sig, provider_data=data
                )
            )
            if fc.will_continue or (fc.partial_args and fc.args is None):
                acc = _StreamedArgs()
                if fc.args:
                    acc.value.update(fc.args)
                if fc.partial_args:
                    acc.apply(fc.partial_args)
                self._streaming = (index, acc)
                if not fc.will_continue:
                    self._end_streamed(out)
                return
            out.append(ToolCallDelta(index=index, arguments=_ENCODE(fc.args or {}).decode()))
            out.append(ToolCallDone(index=index))
            return
        if self._streaming is None:
            return  # a stray continuation with no call open (e.g. an empty terminator)
        if fc.partial_args:
            self._streaming[1].apply(fc.partial_args)
        if not fc.will_continue:
            self._end_streamed(out)

    def _end_streamed(self, out: list[StreamEvent]) -> None:
        assert self._streaming is not None
        index, acc = self._streaming
        self._streaming = None
        out.append(ToolCallDelta(index=index, arguments=_ENCODE(acc.value).decode()))
        out.append(ToolCallDone(index=index))
