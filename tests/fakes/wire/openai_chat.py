"""OpenAI Chat Completions (POST /v1/chat/completions or /chat/completions).

Any path that ends in ``/chat/completions`` is taken, since the base URL of an
OpenAI-compatible service often carries its own prefix (``/v1``,
``/api/v1``, ``/openai/v1``...). Streams follow the real API: a first chunk
with the role, reasoning (as ``reasoning_content``, the DeepSeek/xAI dialect),
content deltas, each tool call's id and name in its first chunk then its
arguments in pieces, a chunk with the finish reason, a usage-only chunk with
``choices: []`` when ``stream_options.include_usage`` is set, then ``[DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

from .. import rules
from ..recorded import RecordedRequest
from ..script import HttpError, Reply, split

NAME = "openai_chat"

CREATED = 1_760_000_000
FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    "error": "error",
    "unknown": "unknown",
}
# error.type for the codes a scripted error may carry
ERROR_TYPES = {
    "insufficient_quota": "insufficient_quota",
    "rate_limit_exceeded": "requests",
    "server_error": "server_error",
}


def matches(method: str, path: str) -> bool:
    return method == "POST" and path.endswith("/chat/completions")


def wants_stream(request: RecordedRequest) -> bool:
    return bool(isinstance(request.json, dict) and request.json.get("stream"))


def _model(reply: Reply, request: RecordedRequest) -> str:
    if reply.model:
        return reply.model
    body = request.json if isinstance(request.json, dict) else {}
    return str(body.get("model") or "gpt-4o")


def _id(request: RecordedRequest) -> str:
    return f"chatcmpl-fake{request.index:06d}"


def _call_id(reply: Reply, i: int, request: RecordedRequest) -> str:
    tc = reply.tool_calls[i]
    return tc.id or f"call_fake{request.index:03d}x{i:02d}"


def _arguments(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, separators=(",", ":"))


def usage(reply: Reply) -> dict[str, Any]:
    u = reply.usage
    return {
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": u.thinking,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


def render_stream(reply: Reply, request: RecordedRequest) -> list[bytes]:
    body = request.json if isinstance(request.json, dict) else {}
    head = {
        "id": _id(request),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": _model(reply, request),
        "system_fingerprint": "fp_fake",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            {
                **head,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
                "usage": None,
            }
        )

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in split(reply.thinking, reply.pieces):
        events.append(chunk({"content": None, "reasoning_content": piece}))
    for piece in split(reply.text, reply.pieces):
        events.append(chunk({"content": piece}))
    for i, tc in enumerate(reply.tool_calls):
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": _call_id(reply, i, request),
                            "type": "function",
                            "function": {"name": tc.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in split(_arguments(tc.arguments), reply.pieces):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    events.append(chunk({}, FINISH.get(reply.finish_reason, reply.finish_reason)))
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        events.append(_sse({**head, "choices": [], "usage": usage(reply)}))
    events.append(b"data: [DONE]\n\n")
    return events


def render_body(reply: Reply, request: RecordedRequest) -> bytes:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if reply.text or not reply.tool_calls else None,
        "refusal": None,
    }
    if reply.thinking:
        message["reasoning_content"] = reply.thinking
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(reply, i, request),
                "type": "function",
                "function": {"name": tc.name, "arguments": _arguments(tc.arguments)},
            }
            for i, tc in enumerate(reply.tool_calls)
        ]
    return json.dumps(
        {
            "id": _id(request),
            "object": "chat.completion",
            "created": CREATED,
            "model": _model(reply, request),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": FINISH.get(reply.finish_reason, reply.finish_reason),
                }
            ],
            "usage": usage(reply),
            "system_fingerprint": "fp_fake",
        },
        ensure_ascii=False,
    ).encode()


def error_body(error: HttpError) -> bytes:
    kind = ERROR_TYPES.get(error.code or "") or (
        "server_error" if error.status >= 500 else "invalid_request_error"
    )
    return json.dumps(
        {"error": {"message": error.message, "type": kind, "param": None, "code": error.code}}
    ).encode()


def render_error(error: HttpError, request: RecordedRequest) -> bytes:
    return error_body(error)


def reject(request: RecordedRequest) -> HttpError | None:
    """The 400 the real API answers to a body that breaks its rules (tests/fakes/rules.py)."""
    return rules.refusal(rules.openai_chat, request, "invalid_request_error")


# ------------------------------------------------------------------ windows (tests/fakes/window.py)


def context_error(tokens: int, output: int, window: int, request: RecordedRequest) -> HttpError:
    """400 ``context_length_exceeded`` in the API's words."""
    if output:
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{tokens + output} tokens ({tokens} in the messages, {output} in the completion). "
            "Please reduce the length of the messages or completion."
        )
    else:
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {tokens} tokens. Please reduce the length of the messages."
        )
    body = {"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
    return HttpError(400, message, code="context_length_exceeded", body=body)
