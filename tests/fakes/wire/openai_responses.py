"""OpenAI Responses (POST /v1/responses or /responses).

Any path that ends in ``/responses`` is taken. Streams follow the real API:
``event:`` + ``data:`` frames with ``sequence_number``; response.created,
response.in_progress, then per output item (reasoning, message, function
calls) output_item.added, its part/delta/done events and output_item.done,
and a final response.completed, response.incomplete (finish ``length`` ->
max_output_tokens, ``content_filter``) or response.failed (finish ``error``).
Reasoning items carry encrypted content when the request includes
``reasoning.encrypted_content`` (the reply's ``thinking_signature``, or one
made up).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from .. import rules
from ..recorded import RecordedRequest
from ..script import HttpError, Reply, split
from .openai_chat import error_body

NAME = "openai_responses"

CREATED = 1_760_000_000


def matches(method: str, path: str) -> bool:
    return method == "POST" and path.endswith("/responses")


def wants_stream(request: RecordedRequest) -> bool:
    return bool(isinstance(request.json, dict) and request.json.get("stream"))


def _body(request: RecordedRequest) -> dict[str, Any]:
    return request.json if isinstance(request.json, dict) else {}


def _rid(request: RecordedRequest, kind: str, n: int = 0) -> str:
    return f"{kind}_fake{request.index:04d}{n:04d}"


def _arguments(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, separators=(",", ":"))


def _usage(reply: Reply) -> dict[str, Any]:
    u = reply.usage
    return {
        "input_tokens": u.input,
        "input_tokens_details": {"cached_tokens": u.cached},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": u.thinking},
        "total_tokens": u.input + u.output,
    }


def _encrypted(reply: Reply, request: RecordedRequest) -> str | None:
    include = _body(request).get("include") or []
    if "reasoning.encrypted_content" not in include:
        return None
    if reply.thinking_signature:
        return reply.thinking_signature
    return "gAAAAA" + base64.urlsafe_b64encode(reply.thinking.encode()).decode()


def _items(reply: Reply, request: RecordedRequest) -> list[dict[str, Any]]:
    """The completed output items of the reply."""
    items: list[dict[str, Any]] = []
    if reply.thinking or reply.thinking_signature:
        item: dict[str, Any] = {
            "id": _rid(request, "rs"),
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": reply.thinking}] if reply.thinking else [],
        }
        enc = _encrypted(reply, request)
        if enc is not None:
            item["encrypted_content"] = enc
        items.append(item)
    if reply.text:
        items.append(
            {
                "id": _rid(request, "msg"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "annotations": [], "logprobs": [], "text": reply.text}
                ],
            }
        )
    for i, tc in enumerate(reply.tool_calls):
        items.append(
            {
                "id": _rid(request, "fc", i),
                "type": "function_call",
                "status": "completed",
                "arguments": _arguments(tc.arguments),
                "call_id": tc.id or f"call_fake{request.index:03d}x{i:02d}",
                "name": tc.name,
            }
        )
    return items


def _response(reply: Reply, request: RecordedRequest, *, final: bool) -> dict[str, Any]:
    body = _body(request)
    status, incomplete, error = "in_progress", None, None
    if final:
        finish = reply.finish_reason
        status = "completed"
        if finish == "length":
            status, incomplete = "incomplete", {"reason": "max_output_tokens"}
        elif finish == "content_filter":
            status, incomplete = "incomplete", {"reason": "content_filter"}
        elif finish == "error":
            status, error = (
                "failed",
                {"code": "server_error", "message": "The model failed to answer."},
            )
    return {
        "id": _rid(request, "resp"),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": incomplete,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": reply.model or body.get("model") or "gpt-5",
        "output": _items(reply, request) if final else [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
        "store": body.get("store", True),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "usage": _usage(reply) if final else None,
        "metadata": {},
    }


def render_stream(reply: Reply, request: RecordedRequest) -> list[bytes]:
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": len(events), **fields}
        data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        events.append(f"event: {kind}\ndata: {data}\n\n".encode())

    emit("response.created", response=_response(reply, request, final=False))
    emit("response.in_progress", response=_response(reply, request, final=False))
    for n, item in enumerate(_items(reply, request)):
        kind, iid = item["type"], item["id"]
        if kind == "reasoning":
            emit(
                "response.output_item.added",
                output_index=n,
                item={**item, "summary": [], "encrypted_content": None},
            )
            for s, part in enumerate(item["summary"]):
                text = part["text"]
                base = {"item_id": iid, "output_index": n, "summary_index": s}
                emit(
                    "response.reasoning_summary_part.added",
                    **base,
                    part={"type": "summary_text", "text": ""},
                )
                for piece in split(text, reply.pieces):
                    emit("response.reasoning_summary_text.delta", **base, delta=piece)
                emit("response.reasoning_summary_text.done", **base, text=text)
                emit(
                    "response.reasoning_summary_part.done",
                    **base,
                    part={"type": "summary_text", "text": text},
                )
        elif kind == "message":
            text = item["content"][0]["text"]
            emit(
                "response.output_item.added",
                output_index=n,
                item={**item, "status": "in_progress", "content": []},
            )
            base = {"item_id": iid, "output_index": n, "content_index": 0}
            empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            emit("response.content_part.added", **base, part=empty)
            for piece in split(text, reply.pieces):
                emit("response.output_text.delta", **base, delta=piece, logprobs=[])
            emit("response.output_text.done", **base, text=text, logprobs=[])
            emit("response.content_part.done", **base, part={**empty, "text": text})
        else:
            emit(
                "response.output_item.added",
                output_index=n,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            base = {"item_id": iid, "output_index": n}
            for piece in split(item["arguments"], reply.pieces):
                emit("response.function_call_arguments.delta", **base, delta=piece)
            emit("response.function_call_arguments.done", **base, arguments=item["arguments"])
        emit("response.output_item.done", output_index=n, item=item)
    final = _response(reply, request, final=True)
    kind = {"completed": "response.completed", "incomplete": "response.incomplete"}.get(
        final["status"], "response.failed"
    )
    emit(kind, response=final)
    return events


def render_body(reply: Reply, request: RecordedRequest) -> bytes:
    return json.dumps(_response(reply, request, final=True), ensure_ascii=False).encode()


def render_error(error: HttpError, request: RecordedRequest) -> bytes:
    return error_body(error)


def reject(request: RecordedRequest) -> HttpError | None:
    """The 400 the real API answers to a body that breaks its rules (tests/fakes/rules.py)."""
    return rules.refusal(rules.openai_responses, request, "invalid_request_error")


# ------------------------------------------------------------------ windows (tests/fakes/window.py)


def context_error(tokens: int, output: int, window: int, request: RecordedRequest) -> HttpError:
    """400 ``context_length_exceeded`` as the Responses API words it (no figures)."""
    message = "Your input exceeds the context window of this model. Please adjust your input and try again."
    body = {"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}
    return HttpError(400, message, code="context_length_exceeded", body=body)
