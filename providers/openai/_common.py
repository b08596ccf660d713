"""What the Chat Completions and Responses codecs share: headers, thinking
parameters, tool encoding, usage and error mapping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..catalog import Catalog
from ..errors import classify, error_from_http
from ..settings import ProviderSettings
from ..thinking import ThinkingMapping, map_thinking
from ..types import (
    RETRYABLE_CATEGORIES,
    ImageBlock,
    ProviderError,
    Request,
    Tool,
    ToolCallBlock,
    ToolResultBlock,
)
from ._schema import strict_schema

_encode = msgspec.json.Encoder().encode


def json_bytes(body: dict[str, Any]) -> bytes:
    return _encode(body)


def headers_for(settings: ProviderSettings, *, stream: bool) -> dict[str, str]:
    """JSON request headers with the bearer key (none for a keyless local server)."""
    key = settings.require_key()
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
    }
    if key:
        headers["authorization"] = f"Bearer {key}"
    for name, value in settings.extra_headers.items():
        headers[name.lower()] = value
    return headers


def url_for(settings: ProviderSettings, path: str) -> str:
    return f"{settings.base_url.rstrip('/')}/{path}"


def thinking_for(catalog: Catalog, provider: str, request: Request) -> ThinkingMapping:
    entry, _ = catalog.entry_or_default(provider, request.model)
    return map_thinking(entry.thinking, request.thinking.level, model=request.model)


def tool_arguments(block: ToolCallBlock) -> str:
    """The call's argument text as the model wrote it (raw when it was not an object)."""
    if block.raw_arguments is not None:
        return block.raw_arguments
    return _encode(block.arguments).decode()


def tool_result_text(block: ToolResultBlock) -> str:
    if block.is_error and not block.content.lower().startswith("error"):
        return f"Error: {block.content}"
    return block.content


def image_url(block: ImageBlock) -> str:
    if block.url:
        return block.url
    return f"data:{block.media_type};base64,{block.data or ''}"


def tool_schema(tool: Tool) -> tuple[dict[str, Any], bool]:
    """(parameters, strict): strict only when asked for and the schema can take it."""
    if tool.strict:
        converted = strict_schema(tool.parameters)
        if converted is not None:
            return converted, True
    return tool.parameters, False


def response_schema(schema: dict[str, Any]) -> tuple[str, dict[str, Any], bool]:
    """(name, schema, strict) for a JSON-schema response format."""
    name = str(schema.get("title") or "response")
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64] or "response"
    converted = strict_schema(schema)
    if converted is not None:
        return name, converted, True
    return name, schema, False


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# ----------------------------------------------------------------- errors


def decode_http_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str]
) -> ProviderError:
    error = error_from_http(status, body, headers, provider=provider)
    if error.category == "invalid_request" and status == 413:
        return msgspec.structs.replace(error, category="context_length", retryable=False)
    if error.category == "server" and status in (503, 529):
        # OpenAI labels "engine overloaded" a server_error; the status says more
        return msgspec.structs.replace(error, category="overloaded")
    return error


def stream_error(
    provider: str, err: Any, *, fallback: str = "the stream reported an error"
) -> ProviderError:
    """An error object that arrived inside a stream (no HTTP status to go by)."""
    if isinstance(err, str):
        err = {"message": err}
    if not isinstance(err, dict):
        err = {}
    message = str(err.get("message") or fallback)
    code = err.get("code")
    kind = err.get("type")
    status = None
    if isinstance(code, int) and not isinstance(code, bool):
        status, code = code, None
    code = str(code) if code is not None else None
    kind = str(kind) if kind is not None else None
    category = classify(status=status, message=message, code=code, kind=kind)
    if category == "unknown":
        category = "server"
    return ProviderError(
        category=category,
        message=message,
        http_status=status,
        provider_code=code or kind,
        retryable=category in RETRYABLE_CATEGORIES,
        provider=provider,
    )
