"""Anthropic Messages (POST /v1/messages, POST /v1/messages/count_tokens).

Renders a Reply the way the API does: a streamed body is SSE with an
``event:`` line naming each event and the same name as the payload's ``type``,
in the real order (message_start, content_block_start, ping,
content_block_delta..., content_block_stop, ..., message_delta, message_stop).
Blocks come as thinking (signed, one signature_delta before its stop), redacted
thinking, text, then tool_use blocks whose input arrives as input_json_delta
pieces (none for an empty input). Usage follows the API: ``input_tokens``
leaves out what was read from or written to the cache.

Errors are ``{"type": "error", "error": {"type", "message"}, "request_id"}``
with the error type of the status. A mid-stream ``error`` event is scripted
with ``Malformed(garbage=error_event("overloaded_error", "Overloaded"),
before_event=k)``: the decoder must stop at it.

The server adds only content-type headers; ``response_headers`` gives the
ones the real API sends (request-id), for a server that asks for them.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from .. import rules
from ..recorded import RecordedRequest
from ..script import HttpError, Reply, ToolCall, split

NAME = "anthropic"

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_use": "tool_use",
    "content_filter": "refusal",
    "unknown": "pause_turn",
    "error": "end_turn",  # the API has no such stop reason; script an error event instead
}

_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz123456789"


def matches(method: str, path: str) -> bool:
    return method == "POST" and (path.endswith("/v1/messages") or path.endswith("/v1/messages/count_tokens"))


def _is_count(request: RecordedRequest) -> bool:
    return request.path.endswith("/count_tokens")


def wants_stream(request: RecordedRequest) -> bool:
    return not _is_count(request) and bool(isinstance(request.json, dict) and request.json.get("stream"))


def _ident(prefix: str, *parts: object) -> str:
    """A stable id in the API's shape (msg_01..., toolu_01..., req_011...)."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return prefix + "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:22])


def signature_for(thinking: str) -> str:
    """The signature the fake gives a thinking text when the reply names none."""
    return base64.b64encode(b"fake-signature:" + hashlib.sha256(thinking.encode()).digest()).decode()


def response_headers(reply: Reply | None, request: RecordedRequest) -> dict[str, str]:
    return {"request-id": _ident("req_011", "request", request.index, request.body)}


def error_event(kind: str, message: str) -> bytes:
    """An ``error`` event as the API sends it inside a 200 stream."""
    payload = {"type": "error", "error": {"type": kind, "message": message}}
    return b"event: error\ndata: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _frame(payload: dict[str, Any]) -> bytes:
    return (
        b"event: "
        + payload["type"].encode()
        + b"\ndata: "
        + json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        + b"\n\n"
    )


def _model(reply: Reply, request: RecordedRequest) -> str:
    if reply.model:
        return reply.model
    if isinstance(request.json, dict) and isinstance(request.json.get("model"), str):
        return request.json["model"]
    return "claude-sonnet-4-5-20250929"


def _usage(reply: Reply, *, final: bool) -> dict[str, Any]:
    u = reply.usage
    usage: dict[str, Any] = {
        "input_tokens": max(0, u.input - u.cached - u.cache_write),
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cached,
    }
    if not final:
        usage["cache_creation"] = {"ephemeral_5m_input_tokens": u.cache_write, "ephemeral_1h_input_tokens": 0}
    usage["output_tokens"] = u.output if final else 1
    if final and u.thinking:
        usage["output_tokens_details"] = {"thinking_tokens": u.thinking}
    if not final:
        usage["service_tier"] = "standard"
    return usage


def _tool_id(call: ToolCall, request: RecordedRequest, n: int) -> str:
    return call.id or _ident("toolu_01", "tool", request.index, n, call.name)


def _arguments_text(call: ToolCall) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(call.arguments, separators=(",", ":")) if call.arguments else ""


def _signature(reply: Reply) -> str:
    return reply.thinking_signature or signature_for(reply.thinking)


def render_stream(reply: Reply, request: RecordedRequest) -> list[bytes]:
    model = _model(reply, request)
    msg_id = _ident("msg_01", "message", request.index, request.body)
    events = [
        _frame(
            {
                "type": "message_start",
                "message": {
                    "model": model,
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _usage(reply, final=False),
                },
            }
        )
    ]
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        events.append(_frame({"type": "content_block_start", "index": index, "content_block": start}))
        if index == 0:
            events.append(_frame({"type": "ping"}))
        for d in deltas:
            events.append(_frame({"type": "content_block_delta", "index": index, "delta": d}))
        events.append(_frame({"type": "content_block_stop", "index": index}))
        index += 1

    if reply.thinking or reply.thinking_signature:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in split(reply.thinking, reply.pieces)]
        deltas.append({"type": "signature_delta", "signature": _signature(reply)})
        block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
    if reply.redacted_thinking is not None:
        block({"type": "redacted_thinking", "data": reply.redacted_thinking}, [])
    if reply.text:
        block(
            {"type": "text", "text": ""},
            [{"type": "text_delta", "text": p} for p in split(reply.text, reply.pieces)],
        )
    for n, call in enumerate(reply.tool_calls):
        args = _arguments_text(call)
        block(
            {"type": "tool_use", "id": _tool_id(call, request, n), "name": call.name, "input": {}},
            [{"type": "input_json_delta", "partial_json": p} for p in split(args, reply.pieces)],
        )
    events.append(
        _frame(
            {
                "type": "message_delta",
                "delta": {"stop_reason": STOP_REASONS.get(reply.finish_reason, "end_turn"), "stop_sequence": None},
                "usage": _usage(reply, final=True),
            }
        )
    )
    events.append(_frame({"type": "message_stop"}))
    return events


def render_body(reply: Reply, request: RecordedRequest) -> bytes:
    if _is_count(request):
        return json.dumps({"input_tokens": reply.usage.input}).encode()
    content: list[dict[str, Any]] = []
    if reply.thinking or reply.thinking_signature:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": _signature(reply)})
    if reply.redacted_thinking is not None:
        content.append({"type": "redacted_thinking", "data": reply.redacted_thinking})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for n, call in enumerate(reply.tool_calls):
        if isinstance(call.arguments, str):
            try:
                arguments: Any = json.loads(call.arguments)
            except ValueError:
                arguments = {}
        else:
            arguments = call.arguments
        content.append({"type": "tool_use", "id": _tool_id(call, request, n), "name": call.name, "input": arguments})
    usage = _usage(reply, final=False)
    usage["output_tokens"] = reply.usage.output
    if reply.usage.thinking:
        usage["output_tokens_details"] = {"thinking_tokens": reply.usage.thinking}
    body = {
        "model": _model(reply, request),
        "id": _ident("msg_01", "message", request.index, request.body),
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": STOP_REASONS.get(reply.finish_reason, "end_turn"),
        "stop_sequence": None,
        "usage": usage,
    }
    return json.dumps(body, ensure_ascii=False).encode()


def render_error(error: HttpError, request: RecordedRequest) -> bytes:
    kind = error.code or ERROR_TYPES.get(error.status) or ("api_error" if error.status >= 500 else "invalid_request_error")
    body = {
        "type": "error",
        "error": {"type": kind, "message": error.message},
        "request_id": _ident("req_011", "request", request.index, request.body),
    }
    return json.dumps(body).encode()


def reject(request: RecordedRequest) -> HttpError | None:
    """The 400 the real API answers to a body that breaks its rules (tests/fakes/rules.py)."""
    return rules.refusal(rules.anthropic, request, "invalid_request_error")


# ------------------------------------------------------------------ windows (tests/fakes/window.py)


def is_count(request: RecordedRequest) -> bool:
    return _is_count(request)


def render_count(tokens: int, request: RecordedRequest) -> bytes:
    return json.dumps({"input_tokens": tokens}).encode()


def context_error(tokens: int, output: int, window: int, request: RecordedRequest) -> HttpError:
    """The API's two answers to a request that does not fit (400
    invalid_request_error): the prompt alone is too long, or it is the prompt
    with ``max_tokens`` on top (texts as the API words them)."""
    if tokens > window:
        message = f"prompt is too long: {tokens} tokens > {window} maximum"
    else:
        message = (
            f"input length and `max_tokens` exceed context limit: {tokens} + {output} > {window}, "
            "decrease input length or `max_tokens` and try again"
        )
    return HttpError(400, message, code="invalid_request_error")
