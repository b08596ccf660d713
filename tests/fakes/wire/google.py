"""Gemini generateContent: POST {prefix}/models/{model}:generateContent,
:streamGenerateContent?alt=sse and :countTokens (prefix /v1beta, /v1 or none).

Rendered like the real API: every streamed chunk is a whole
GenerateContentResponse (``candidates[0].content.parts`` with role "model",
``usageMetadata``, ``modelVersion``, ``responseId``), framed as
``data: {...}\\r\\n\\r\\n``. Thought summaries are text parts with
``thought: true`` (the reply's ``thinking_signature`` on the last one);
function calls arrive whole, all in one chunk, without an id unless the
script gives one, with their ``thoughtSignature`` on the part; the last chunk
carries ``finishReason`` and the final usage together with the last parts,
and the text signature (Gemini 3 style) as an empty text part of its own.
Errors are google.rpc.Status bodies; a 429 carries QuotaFailure and RetryInfo.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .. import rules
from ..recorded import RecordedRequest
from ..script import HttpError, Reply, split

NAME = "google"

_PATH = re.compile(
    r"^(?:/v1beta|/v1)?/(?:models|tunedModels)/([^/:]+):(generateContent|streamGenerateContent|countTokens)$"
)
_FINISH = {
    "stop": "STOP",
    "tool_use": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
    "error": "MALFORMED_FUNCTION_CALL",
    "unknown": "OTHER",
}
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def matches(method: str, path: str) -> bool:
    return method == "POST" and _PATH.match(path) is not None


def _method(request: RecordedRequest) -> tuple[str, str]:
    m = _PATH.match(request.path)
    assert m is not None
    return m.group(1), m.group(2)


def wants_stream(request: RecordedRequest) -> bool:
    return _method(request)[1] == "streamGenerateContent"


def _response_id(request: RecordedRequest) -> str:
    # deterministic, shaped like Google's (base64url-ish, 22 chars)
    return f"fakeResp{request.index:06d}AbCdEfGh"


def _usage(reply: Reply) -> dict[str, Any]:
    u = reply.usage
    thoughts = max(u.thinking, 0)
    candidates = max(u.output - thoughts, 0)
    usage: dict[str, Any] = {
        "promptTokenCount": u.input,
        "candidatesTokenCount": candidates,
        "totalTokenCount": u.input + candidates + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": u.input}],
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    if u.cached:
        usage["cachedContentTokenCount"] = u.cached
        usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": u.cached}]
    return usage


def _call_part(call: Any) -> dict[str, Any]:
    args = call.arguments
    if isinstance(args, str):
        # a script's invalid JSON: Gemini always sends an object; keep the text
        try:
            args = json.loads(args)
        except ValueError:
            args = {"_raw": args}
    fc: dict[str, Any] = {"name": call.name, "args": args}
    if call.id:
        fc["id"] = call.id
    part: dict[str, Any] = {"functionCall": fc}
    if call.signature:
        part["thoughtSignature"] = call.signature
    return part


def _chunk(
    reply: Reply, request: RecordedRequest, parts: list[dict[str, Any]] | None, **extra: Any
) -> dict[str, Any]:
    model = reply.model or _method(request)[0]
    cand: dict[str, Any] = {}
    if parts is not None:
        cand["content"] = {"parts": parts, "role": "model"}
    cand.update(extra)
    cand["index"] = 0
    return {"candidates": [cand], "modelVersion": model, "responseId": _response_id(request)}


def _final_extra(reply: Reply) -> dict[str, Any]:
    finish = _FINISH.get(reply.finish_reason, "OTHER")
    extra: dict[str, Any] = {"finishReason": finish}
    if reply.finish_reason == "content_filter":
        extra["safetyRatings"] = [
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
        ]
    if reply.tool_calls:
        extra["finishMessage"] = "Model generated function call(s)."
    return extra


def render_stream(reply: Reply, request: RecordedRequest) -> list[bytes]:
    if _method(request)[1] == "countTokens":
        raise NotImplementedError(f"{NAME}: countTokens does not stream")
    chunks: list[dict[str, Any]] = []
    usage = _usage(reply)
    thoughts = split(reply.thinking, reply.pieces)
    for i, piece in enumerate(thoughts):
        part: dict[str, Any] = {"text": piece, "thought": True}
        if i == len(thoughts) - 1 and reply.thinking_signature:
            part["thoughtSignature"] = reply.thinking_signature
        chunks.append(_chunk(reply, request, [part]))
    for piece in split(reply.text, reply.pieces):
        chunks.append(_chunk(reply, request, [{"text": piece}]))
    final_parts: list[dict[str, Any]] = [_call_part(c) for c in reply.tool_calls]
    if reply.text_signature:
        final_parts.append({"text": "", "thoughtSignature": reply.text_signature})
    if reply.finish_reason == "content_filter" and not final_parts:
        last = _chunk(reply, request, None, **_final_extra(reply))
    else:
        last = _chunk(reply, request, final_parts or [{"text": ""}], **_final_extra(reply))
    chunks.append(last)
    # earlier chunks report the prompt and thinking so far; the last the final figures
    early = {"promptTokenCount": usage["promptTokenCount"]}
    if "thoughtsTokenCount" in usage:
        early["thoughtsTokenCount"] = usage["thoughtsTokenCount"]
    early["totalTokenCount"] = sum(early.values())
    for c in chunks[:-1]:
        c["usageMetadata"] = early
    last["usageMetadata"] = usage
    return [b"data: " + json.dumps(c, separators=(",", ":")).encode() + b"\r\n\r\n" for c in chunks]


def render_body(reply: Reply, request: RecordedRequest) -> bytes:
    method = _method(request)[1]
    if method == "countTokens":
        u = reply.usage
        body: dict[str, Any] = {
            "totalTokens": u.input,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": u.input}],
        }
        if u.cached:
            body["cachedContentTokenCount"] = u.cached
        return json.dumps(body).encode()
    parts: list[dict[str, Any]] = []
    if reply.thinking:
        part: dict[str, Any] = {"text": reply.thinking, "thought": True}
        if reply.thinking_signature:
            part["thoughtSignature"] = reply.thinking_signature
        parts.append(part)
    if reply.text:
        part = {"text": reply.text}
        if reply.text_signature:
            part["thoughtSignature"] = reply.text_signature
        parts.append(part)
    elif reply.text_signature:
        parts.append({"text": "", "thoughtSignature": reply.text_signature})
    parts.extend(_call_part(c) for c in reply.tool_calls)
    blocked = reply.finish_reason == "content_filter" and not parts
    body = _chunk(reply, request, None if blocked else parts, **_final_extra(reply))
    body["usageMetadata"] = _usage(reply)
    return json.dumps(body, indent=2).encode()


def render_error(error: HttpError, request: RecordedRequest) -> bytes:
    status = error.code or _STATUS.get(error.status, "UNKNOWN")
    details: list[dict[str, Any]] = []
    if error.status == 429:
        lower = {k.lower(): v for k, v in error.headers.items()}
        delay = lower.get("retry-after", "30")
        details = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": _method(request)[0]},
                        "quotaValue": "10",
                    }
                ],
            },
            {
                "@type": "type.googleapis.com/google.rpc.Help",
                "links": [
                    {
                        "description": "Learn more about Gemini API quotas",
                        "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay}s"},
        ]
    err: dict[str, Any] = {"code": error.status, "message": error.message, "status": status}
    if details:
        err["details"] = details
    return json.dumps({"error": err}, indent=2).encode()


def reject(request: RecordedRequest) -> HttpError | None:
    """The 400 the real API answers to a body that breaks its rules (tests/fakes/rules.py)."""
    return rules.refusal(rules.google, request, "INVALID_ARGUMENT")


# ------------------------------------------------------------------ windows (tests/fakes/window.py)


def model_of(request: RecordedRequest) -> str:
    """The model named in the path (the body of generateContent names none)."""
    return _method(request)[0]


def is_count(request: RecordedRequest) -> bool:
    return _method(request)[1] == "countTokens"


def render_count(tokens: int, request: RecordedRequest) -> bytes:
    body = {"totalTokens": tokens, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": tokens}]}
    return json.dumps(body).encode()


def context_error(tokens: int, output: int, window: int, request: RecordedRequest) -> HttpError:
    """400 INVALID_ARGUMENT in the API's words. Gemini limits the input on its
    own, so the allowance named is the window less the output asked for."""
    message = f"The input token count ({tokens}) exceeds the maximum number of tokens allowed ({max(window - output, 0)})."
    return HttpError(400, message, code="INVALID_ARGUMENT")
