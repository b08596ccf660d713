"""What the Chat Completions and Responses adapters share, in one place:

* ``OpenAICodec``, the base of both codecs: headers, URL, thinking, the raw
  body fields, tools and user messages in either API's shape, whole answers
  and HTTP errors;
* tool arguments and results, images, strict schemas for tools and responses;
* ``token_usage`` (both usage shapes) and ``stream_error`` (an error object
  inside a stream or an answer), which the stream decoders use too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec

from ..base import HttpRequest
from ..catalog import Catalog, WireApi, default_catalog
from ..documents import inline_text, is_pdf, note
from ..errors import classify, error_from_http, provider_error
from ..ratelimits import RateLimits, openai_limits
from ..schema_fit import fit_for_request
from ..settings import ProviderSettings
from ..thinking import ThinkingMapping, map_thinking
from ..types import (
    DocumentBlock,
    ImageBlock,
    Message,
    ProviderError,
    ProviderFailure,
    Request,
    TextBlock,
    Tool,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
    tool_result_images,
    with_notes,
)
from ._schema import strict_schema

_encode = msgspec.json.Encoder().encode
# the image types OpenAI takes (PNG, JPEG, WEBP, non-animated GIF)
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def json_bytes(body: dict[str, Any]) -> bytes:
    return _encode(body)


def tool_arguments(block: ToolCallBlock) -> str:
    """The call's arguments as JSON text: ``{}`` when the model's were not a JSON
    object (``raw_arguments``; most often cut off by the output limit). Servers
    answer 400 or 500 to invalid JSON sent back, and would on every retry; the
    raw text stays in history and the call's error result quotes it."""
    if block.raw_arguments is not None:
        return "{}"
    return _encode(block.arguments).decode()


def tool_result_text(block: ToolResultBlock) -> str:
    if block.is_error and not block.content.lower().startswith("error"):
        return f"Error: {block.content}"
    return block.content


def image_url(block: ImageBlock) -> str:
    if block.url:
        return block.url
    return f"data:{block.media_type};base64,{block.data or ''}"


def document_part(block: DocumentBlock, *, responses: bool) -> dict[str, Any] | None:
    """A document as a user content part (developers.openai.com, File inputs:
    Chat Completions takes a PDF as a ``file`` part with ``filename`` and a
    ``file_data`` data URL, and no file by URL; Responses an ``input_file``
    with ``filename`` and ``file_data``, or a ``file_url``). A text file goes
    as a text part holding its text, as the guide says for Chat Completions
    (Responses too: the model then reads the text as sent)."""
    text_type = "input_text" if responses else "text"
    if block.text is not None:
        return {"type": text_type, "text": inline_text(block)}
    if block.data is not None:
        if not is_pdf(block):
            return {"type": text_type, "text": note(block, "this API takes PDF documents only")}
        filename = block.name or "document.pdf"  # required with file_data
        data_url = f"data:application/pdf;base64,{block.data}"
        if responses:
            return {"type": "input_file", "filename": filename, "file_data": data_url}
        return {"type": "file", "file": {"filename": filename, "file_data": data_url}}
    if block.url is not None:
        if responses:
            return {"type": "input_file", "file_url": block.url}
        return {"type": text_type, "text": note(block, "this API cannot fetch a file by URL")}
    return None


def tool_schema(tool: Tool) -> tuple[dict[str, Any], bool]:
    """(parameters, strict): strict only when asked for and the schema can take it."""
    if tool.strict:
        converted = strict_schema(tool.parameters)
        if converted is not None:
            return converted, True
    return tool.parameters, False


def response_schema(
    schema: dict[str, Any], api: WireApi, provider: str
) -> tuple[str, dict[str, Any], bool]:
    """(name, schema, strict) for a JSON-schema response format: the schema as
    the API takes it (providers/schema_fit), strict when it can be."""
    name = str(schema.get("title") or "response")
    name = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in name)
    fitted = fit_for_request(api, schema, provider)
    return name[:64] or "response", fitted.schema, fitted.strict


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def token_usage(raw: Any, inp: str, out: str, *, cache_hits: str | None = None) -> Usage:
    """Usage from ``{inp}_tokens``, ``{out}_tokens``, ``total_tokens`` and their
    ``_details`` (``prompt``/``completion`` for Chat Completions, ``input``/
    ``output`` for Responses). Input counts cached tokens. Output counts
    reasoning: a server whose total is input + output + reasoning counted it
    apart, and it is added here. ``cache_hits``: a top-level field with the
    cached count, read when the details have none."""
    if not isinstance(raw, dict):
        return Usage()
    n_in = as_int(raw.get(f"{inp}_tokens"))
    n_out = as_int(raw.get(f"{out}_tokens"))
    total = as_int(raw.get("total_tokens"))
    in_details = _dict(raw.get(f"{inp}_tokens_details"))
    reasoning = as_int(_dict(raw.get(f"{out}_tokens_details")).get("reasoning_tokens"))
    cached = as_int(in_details.get("cached_tokens"))
    if not cached and cache_hits is not None:
        cached = as_int(raw.get(cache_hits))
    if reasoning and total == n_in + n_out + reasoning:
        n_out += reasoning
    return Usage(
        input_tokens=n_in,
        output_tokens=n_out,
        thinking_tokens=reasoning,
        cached_tokens=cached,
        cache_write_tokens=as_int(in_details.get("cache_write_tokens")),
    )


# ----------------------------------------------------------------- errors


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
    return provider_error(
        "server" if category == "unknown" else category,
        message,
        http_status=status,
        provider_code=code or kind,
        provider=provider,
    )


# ----------------------------------------------------------------- the codecs


class OpenAICodec(ABC):
    """What ChatCodec and ResponsesCodec share: settings, thinking, the HTTP
    request, tools and user messages in either API's shape, whole answers and
    errors. A subclass names its ``path``, says whether it is the Responses
    API (``responses``), and builds the body's own fields (``_fields``)."""

    path: ClassVar[str]
    responses: ClassVar[bool]

    def __init__(self, settings: ProviderSettings, catalog: Catalog | None = None) -> None:
        self.settings = settings
        self.provider = settings.name
        self.catalog = catalog or default_catalog()

    def thinking(self, request: Request) -> ThinkingMapping:
        entry, _ = self.catalog.entry_or_default(self.provider, request.model)
        return map_thinking(entry.thinking, request.thinking.level, model=request.model)

    def encode(self, request: Request, *, stream: bool) -> HttpRequest:
        # the key first: a missing one fails before any work (ProviderFailure, auth)
        key = self.settings.require_key()
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
        }
        if key:  # none for a keyless local server
            headers["authorization"] = f"Bearer {key}"
        for name, value in self.settings.extra_headers.items():
            headers[name.lower()] = value
        url = f"{self.settings.base_url.rstrip('/')}/{self.path}"
        return HttpRequest("POST", url, headers, json_bytes(self.body(request, stream=stream)))

    def body(self, request: Request, *, stream: bool) -> dict[str, Any]:
        """The JSON body, as a dict (encode() sends it): the API's fields, then
        the caller's raw ones (``provider_data["body"]``) over them."""
        body = self._fields(request, stream=stream)
        extra = (request.provider_data or {}).get("body")
        if isinstance(extra, dict):
            body.update(extra)
        return body

    @abstractmethod
    def _fields(self, request: Request, *, stream: bool) -> dict[str, Any]: ...

    def _tools(self, request: Request) -> dict[str, Any]:
        """``tools``, ``tool_choice`` and ``parallel_tool_calls`` for the request's tools."""
        responses = self.responses
        tools: list[dict[str, Any]] = []
        for tool in request.tools:
            params, strict = tool_schema(tool)
            fn: dict[str, Any] = {"name": tool.name}
            if responses:
                fn = {"type": "function", **fn}
            if tool.description:
                fn["description"] = tool.description
            fn["parameters"] = params
            if strict or responses:  # Chat Completions: only when true
                fn["strict"] = strict
            tools.append(fn if responses else {"type": "function", "function": fn})
        choice = request.tool_choice
        tool_choice: str | dict[str, Any] = choice.mode
        if choice.mode == "tool":
            named = {"name": choice.name}
            tool_choice = {"type": "function", **(named if responses else {"function": named})}
        return {
            "tools": tools,
            "tool_choice": tool_choice,
            "parallel_tool_calls": request.parallel_tool_calls,
        }

    def _user(self, message: Message, out: list[dict[str, Any]]) -> None:
        """A user message: its tool results (each an item of its own), then the
        text, images and documents as one user message (its text alone when
        that is all)."""
        responses = self.responses
        parts: list[dict[str, Any]] = []
        for b in message.content:
            if isinstance(b, ToolResultBlock):
                out.append(self._tool_output(b))
            elif isinstance(b, TextBlock):
                parts.append({"type": "input_text" if responses else "text", "text": b.text})
            elif isinstance(b, ImageBlock):
                url = image_url(b)
                if responses:
                    parts.append({"type": "input_image", "image_url": url})
                else:
                    parts.append({"type": "image_url", "image_url": {"url": url}})
            elif isinstance(b, DocumentBlock):
                part = document_part(b, responses=responses)
                if part is not None:
                    parts.append(part)
        if not parts:
            return
        content: str | list[dict[str, Any]] = parts
        if len(parts) == 1 and parts[0]["type"] in ("text", "input_text"):
            content = parts[0]["text"]
        if responses:
            # every Responses input item names its type: llama-server refuses one
            # without ("Cannot determine type of 'item'")
            out.append({"type": "message", "role": "user", "content": content})
        else:
            out.append({"role": "user", "content": content})

    def _tool_output(self, b: ToolResultBlock) -> dict[str, Any]:
        """A tool result as its own item. Responses takes a list of input_text and
        input_image parts as the output; a Chat Completions tool message takes
        text alone, so its images are named in note lines."""
        images, notes = tool_result_images(b, IMAGE_TYPES if self.responses else frozenset())
        text = with_notes(tool_result_text(b), notes)
        if not self.responses:
            return {"role": "tool", "tool_call_id": b.tool_call_id, "content": text}
        output: str | list[dict[str, Any]] = text
        if images:
            parts = [{"type": "input_text", "text": text}] if text else []
            output = parts + [{"type": "input_image", "image_url": image_url(i)} for i in images]
        return {"type": "function_call_output", "call_id": b.tool_call_id, "output": output}

    def _answer(self, body: bytes) -> dict[str, Any]:
        """A whole JSON answer as a dict ({} for any other JSON value). Raises
        ProviderFailure when it is not JSON or is an error (for Responses, an
        error with no status or status failed: an incomplete answer may carry one)."""
        try:
            data = msgspec.json.decode(body)
        except (msgspec.DecodeError, UnicodeError):  # invalid UTF-8, a lone surrogate
            error = provider_error(
                "server", "the response body is not JSON", provider=self.provider
            )
            raise ProviderFailure(error) from None
        data = _dict(data)
        if data.get("error") is not None and (
            not self.responses or data.get("status") in (None, "failed")
        ):
            raise ProviderFailure(stream_error(self.provider, data["error"]))
        return data

    def decode_limits(
        self, headers: Mapping[str, str], body: bytes, *, now: float
    ) -> RateLimits | None:
        return openai_limits(headers, now=now)

    def decode_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> ProviderError:
        error = error_from_http(status, body, headers, provider=self.provider)
        if error.category == "invalid_request" and status == 413:
            return msgspec.structs.replace(error, category="context_length", retryable=False)
        if error.category == "server" and status in (503, 529):
            # OpenAI labels "engine overloaded" a server_error; the status says more
            return msgspec.structs.replace(error, category="overloaded")
        return error
