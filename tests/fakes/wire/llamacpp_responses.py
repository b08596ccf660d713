"""llama-server's OpenAI Responses dialect (POST .../llamacpp/.../responses).

Point a client at ``fake.base_url + "/llamacpp/v1"`` to get it. Written from
llama.cpp's tools/server source (server-task.cpp ``to_json_oaicompat_resp*``,
server-common.cpp ``convert_responses_to_chatcmpl``, ``format_oai_resp_sse``),
which differs from OpenAI's API in ways a client must survive:

* no ``output_index`` on any event, no top-level ``item_id`` on
  ``response.output_item.added``/``.done``; function_call items carry no
  ``id``, only ``call_id`` (``fc_`` + the call id), which the argument deltas
  name as their ``item_id``;
* deltas stream first, then every ``output_item.done`` comes together at the end;
* reasoning is ``response.reasoning_text.delta``; the status is always
  ``completed`` (no ``response.incomplete``);
* an input item it cannot classify is refused: 400 ``Cannot determine type of
  'item'`` (an assistant message needs ``"type": "message"`` and
  ``output_text`` parts) — see ``reject``.
"""

from __future__ import annotations

import json
from typing import Any

from ..recorded import RecordedRequest
from ..script import HttpError, Reply, split
from .openai_responses import wants_stream

__all__ = ["matches", "reject", "render_body", "render_error", "render_stream", "wants_stream"]

NAME = "llamacpp_responses"

CREATED = 1_760_000_000


def matches(method: str, path: str) -> bool:
    return method == "POST" and "/llamacpp/" in path and path.endswith("/responses")


def _body(request: RecordedRequest) -> dict[str, Any]:
    return request.json if isinstance(request.json, dict) else {}


def _is_str(item: dict[str, Any], key: str) -> bool:
    return isinstance(item.get(key), str)


def _is_list(item: dict[str, Any], key: str) -> bool:
    return isinstance(item.get(key), list)


def _item_problem(item: Any) -> str | None:
    """What convert_responses_to_chatcmpl throws for this input item, or None."""
    if not isinstance(item, dict):
        return "Cannot determine type of 'item'"
    content = item.get("content")
    if isinstance(content, str):
        content = [{"type": "input_text", "text": content}]
    role = item.get("role")
    if isinstance(content, list) and role in ("user", "system", "developer"):
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in ("input_text", "input_image"):
                return "'type' must be one of 'input_text', 'input_image', or 'input_file'"
        return None
    if isinstance(content, list) and role == "assistant" and item.get("type") == "message":
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "output_text":
                return "'type' must be 'output_text'"
            if not _is_str(part, "text"):
                return "'Output text' requires 'text'"
        return None
    kind = item.get("type")
    if kind == "function_call" and all(_is_str(item, k) for k in ("arguments", "call_id", "name")):
        return None
    output = _is_str(item, "output") or _is_list(item, "output")
    if kind == "function_call_output" and _is_str(item, "call_id") and output:
        return None
    if kind == "reasoning" and _is_list(item, "summary"):
        parts = item.get("content")
        if not isinstance(parts, list) or not parts:
            return "item['content'] is not an array"
        return None
    return "Cannot determine type of 'item'"


def reject(request: RecordedRequest) -> HttpError | None:
    """The 400 llama-server answers to a body it cannot convert, or None."""
    body = _body(request)
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return HttpError(400, "'input' must be a string or array of objects")
    for item in items:
        problem = _item_problem(item)
        if problem is not None:
            return HttpError(400, problem)
    return None


def render_error(error: HttpError, request: RecordedRequest) -> bytes:
    # format_error_response: code, message, type
    kind = "invalid_request_error" if error.status == 400 else "server_error"
    return json.dumps(
        {"error": {"code": error.status, "message": error.message, "type": kind}}
    ).encode()


def _call_id(reply: Reply, request: RecordedRequest, i: int) -> str:
    tc = reply.tool_calls[i]
    return tc.id or f"llama{request.index:03d}x{i:02d}"


def _arguments(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, separators=(",", ":"))


def _ids(request: RecordedRequest) -> tuple[str, str, str]:
    n = request.index
    return f"resp_llama{n:04d}", f"rs_llama{n:04d}", f"msg_llama{n:04d}"


def _output(reply: Reply, request: RecordedRequest) -> list[dict[str, Any]]:
    _, rs_id, msg_id = _ids(request)
    out: list[dict[str, Any]] = []
    if reply.thinking:
        out.append(
            {
                "id": rs_id,
                "summary": [],
                "type": "reasoning",
                "content": [{"text": reply.thinking, "type": "reasoning_text"}],
                "encrypted_content": "",
            }
        )
    if reply.text:
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": reply.text}
        out.append(
            {
                "type": "message",
                "status": "completed",
                "id": msg_id,
                "content": [part],
                "role": "assistant",
            }
        )
    for i, tc in enumerate(reply.tool_calls):
        out.append(
            {
                "type": "function_call",
                "status": "completed",
                "arguments": _arguments(tc.arguments),
                "call_id": "fc_" + _call_id(reply, request, i),
                "name": tc.name,
            }
        )
    return out


def _usage(reply: Reply) -> dict[str, int]:
    u = reply.usage
    return {"input_tokens": u.input, "output_tokens": u.output, "total_tokens": u.input + u.output}


def _final(reply: Reply, request: RecordedRequest) -> dict[str, Any]:
    resp_id = _ids(request)[0]
    return {
        "id": resp_id,
        "object": "response",
        "created_at": CREATED,
        "status": "completed",
        "model": reply.model or _body(request).get("model") or "gemma",
        "output": _output(reply, request),
        "usage": _usage(reply),
    }


def render_stream(reply: Reply, request: RecordedRequest) -> list[bytes]:
    events: list[bytes] = []
    resp_id, rs_id, msg_id = _ids(request)

    def emit(kind: str, **fields: Any) -> None:
        data = json.dumps({"type": kind, **fields}, separators=(",", ":"), ensure_ascii=False)
        events.append(f"event: {kind}\ndata: {data}\n\n".encode())

    head = {"id": resp_id, "object": "response", "status": "in_progress"}
    emit("response.created", response=head)
    emit("response.in_progress", response=head)
    if reply.thinking:
        item = {
            "id": rs_id,
            "summary": [],
            "type": "reasoning",
            "content": [],
            "encrypted_content": "",
            "status": "in_progress",
        }
        emit("response.output_item.added", item=item)
        for piece in split(reply.thinking, reply.pieces):
            emit("response.reasoning_text.delta", delta=piece, item_id=rs_id)
    if reply.text:
        item = {
            "content": [],
            "id": msg_id,
            "role": "assistant",
            "status": "in_progress",
            "type": "message",
        }
        emit("response.output_item.added", item=item)
        emit(
            "response.content_part.added",
            item_id=msg_id,
            part={"type": "output_text", "text": ""},
        )
        for piece in split(reply.text, reply.pieces):
            emit("response.output_text.delta", item_id=msg_id, delta=piece)
    for i, tc in enumerate(reply.tool_calls):
        fc = "fc_" + _call_id(reply, request, i)
        item = {
            "arguments": "",
            "call_id": fc,
            "name": tc.name,
            "type": "function_call",
            "status": "in_progress",
        }
        emit("response.output_item.added", item=item)
        for piece in split(_arguments(tc.arguments), reply.pieces):
            emit("response.function_call_arguments.delta", delta=piece, item_id=fc)
    # the final result: every item's done event, then completed
    for item in _output(reply, request):
        if item["type"] == "message":
            part = item["content"][0]
            emit("response.output_text.done", item_id=msg_id, text=part["text"])
            emit("response.content_part.done", item_id=msg_id, part=part)
        emit("response.output_item.done", item=item)
    emit("response.completed", response=_final(reply, request))
    return events


def render_body(reply: Reply, request: RecordedRequest) -> bytes:
    return json.dumps(_final(reply, request), ensure_ascii=False).encode()
