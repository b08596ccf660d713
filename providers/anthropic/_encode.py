"""Build the JSON body of a Messages request from a Request.

Anthropic's rules this module follows:

* ``system`` is a list of text blocks; messages alternate user/assistant, so
  consecutive messages of one role are merged, and tool results travel as
  ``tool_result`` blocks in a user message (all results of a turn in one
  message, ahead of any text, as the API asks); a result with images has a
  list of blocks as its content (text, then images), as the API allows;
* thinking blocks with their signature and redacted thinking blocks go back
  unchanged, but only to Anthropic: another provider's thinking is dropped;
* ``max_tokens`` is always set; a thinking budget must be below it;
* empty text blocks are rejected by the API, so none is sent.
"""

from __future__ import annotations

import re
from typing import Any

from ..catalog import ModelEntry
from ..documents import inline_text, is_pdf, note
from ..schema_fit import fit_for_request
from ..thinking import ThinkingMapping, map_thinking
from ..types import (
    DocumentBlock,
    ImageBlock,
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    tool_result_images,
    with_notes,
)

MIN_BUDGET = 1024  # the API's smallest thinking budget
_CACHE = {"type": "ephemeral"}
_TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")
_TOOL_ID_BAD = re.compile(r"[^a-zA-Z0-9_-]")
# sampling parameters a Request may carry in provider_data
_SAMPLING = ("temperature", "top_p", "top_k")
_PASSTHROUGH = ("stop_sequences", "metadata", "service_tier")
# the image types the Messages API takes (in a tool result as anywhere)
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def tool_id(value: str) -> str:
    """Anthropic ids match ^[a-zA-Z0-9_-]+$; ids made by other providers may not."""
    if _TOOL_ID.fullmatch(value):
        return value
    return _TOOL_ID_BAD.sub("_", value) or "toolu_empty"


class ThinkingPlan:
    """What one request sends for thinking and output length."""

    __slots__ = ("config", "effort", "enabled", "max_tokens")

    def __init__(
        self, max_tokens: int, config: dict[str, Any] | None = None, effort: str | None = None
    ) -> None:
        self.max_tokens = max_tokens
        self.config = config
        self.effort = effort
        self.enabled = config is not None and config.get("type") != "disabled"


def plan_thinking(request: Request, entry: ModelEntry) -> ThinkingPlan:
    limit = entry.max_output_tokens if entry.max_output_tokens > 0 else request.max_output_tokens
    wanted = max(1, min(request.max_output_tokens, limit))
    mapping: ThinkingMapping = map_thinking(
        entry.thinking, request.thinking.level, model=request.model
    )
    if request.tool_choice.mode in ("required", "tool"):
        # Anthropic rejects thinking together with a forced tool (tool_choice any
        # or tool): such a request goes out without thinking. A turn that forces
        # a tool is a mechanical step, so this is the useful choice, and it is
        # not worth a warning to the person.
        return ThinkingPlan(wanted)
    if not mapping.supported or not mapping.enabled:
        # Thinking off is the API's default; no parameter is the form every
        # model accepts (some reject an explicit {"type": "disabled"}).
        return ThinkingPlan(wanted)
    display = "summarized" if request.thinking.include_summary else "omitted"
    if mapping.kind == "budget" and mapping.budget:
        # The budget counts inside max_tokens and must stay below it: raise
        # max_tokens so the answer keeps the room it asked for, up to the model's
        # limit, then shrink the budget if that limit leaves too little room.
        max_tokens = min(mapping.budget + wanted, limit)
        budget = min(mapping.budget, max(MIN_BUDGET, max_tokens - wanted))
        if budget >= max_tokens:
            budget = max_tokens - 1
        if budget < MIN_BUDGET:
            return ThinkingPlan(wanted)
        config: dict[str, Any] = {"type": "enabled", "budget_tokens": budget}
        if not request.thinking.include_summary:
            config["display"] = display
        return ThinkingPlan(max_tokens, config)
    if mapping.kind == "adaptive":
        # Newer models default to display "omitted": ask for the summary explicitly.
        return ThinkingPlan(wanted, {"type": "adaptive", "display": display}, mapping.effort)
    if mapping.kind == "effort" and mapping.effort:
        return ThinkingPlan(wanted, None, mapping.effort)
    return ThinkingPlan(wanted)  # "always": the model takes no parameter


# ------------------------------------------------------------------ content


def _same_provider(block_provider: str | None, provider: str) -> bool:
    return block_provider in (provider, "anthropic")


def _block(block: Any, provider: str) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, ToolCallBlock):
        return {
            "type": "tool_use",
            "id": tool_id(block.id),
            "name": block.name,
            "input": block.arguments if block.raw_arguments is None else {},
        }
    if isinstance(block, ToolResultBlock):
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id(block.tool_call_id)}
        images, notes = tool_result_images(block, IMAGE_TYPES, urls=True)
        text = with_notes(block.content, notes)
        if images:
            # content as a list of blocks: the text (never an empty one), then the images
            parts = [{"type": "text", "text": text}] if text else []
            out["content"] = parts + [b for b in map(_image, images) if b is not None]
        elif text:
            out["content"] = text
        if block.is_error:
            out["is_error"] = True
        return out
    if isinstance(block, ThinkingBlock):
        # Another provider's reasoning is never sent (its signature means nothing
        # here and must not be passed off as ours); unsigned thinking cannot be
        # sent to Anthropic either.
        if not _same_provider(block.provider, provider) or not block.signature:
            return None
        if block.redacted:
            return {"type": "redacted_thinking", "data": block.signature}
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    if isinstance(block, ImageBlock):
        return _image(block)
    if isinstance(block, DocumentBlock):
        return _document(block)
    return None


def _image(block: ImageBlock) -> dict[str, Any] | None:
    if block.data is not None:
        source = {"type": "base64", "media_type": block.media_type, "data": block.data}
    elif block.url is not None:
        source = {"type": "url", "url": block.url}
    else:
        return None
    return {"type": "image", "source": source}


def _document(block: DocumentBlock) -> dict[str, Any] | None:
    """A document block (docs.anthropic.com, PDF support and Citations: a
    ``document`` takes a base64 source of media_type application/pdf, a url
    source (a PDF), or a text source of media_type text/plain whatever the
    file's own text type; ``title`` names it). Anything else is a note."""
    source: dict[str, Any]
    if block.text is not None:
        if not block.text:  # an empty text source is refused like an empty text block
            return {"type": "text", "text": inline_text(block)}
        source = {"type": "text", "media_type": "text/plain", "data": block.text}
    elif block.data is not None:
        if not is_pdf(block):
            return {"type": "text", "text": note(block, "this API takes PDF documents only")}
        source = {"type": "base64", "media_type": "application/pdf", "data": block.data}
    elif block.url is not None:
        if not is_pdf(block):
            return {"type": "text", "text": note(block, "this API fetches PDF documents only")}
        source = {"type": "url", "url": block.url}
    else:
        return None
    out: dict[str, Any] = {"type": "document", "source": source}
    if block.name:
        out["title"] = block.name
    return out


def encode_messages(messages: list[Message], provider: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [b for b in (_block(x, provider) for x in message.content) if b is not None]
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for m in out:
        content = m["content"]
        if m["role"] == "user" and len(content) > 1:
            # tool results first, in their order, then what the person wrote
            results = [b for b in content if b["type"] == "tool_result"]
            if results and len(results) != len(content):
                m["content"] = results + [b for b in content if b["type"] != "tool_result"]
    return out


def _mark_cache(messages: list[dict[str, Any]]) -> None:
    """Cache breakpoints on the last message and the user message before it:
    each request reads the prefix the previous one wrote."""
    marked = 0
    for m in reversed(messages):
        if marked == 2:
            break
        if marked == 1 and m["role"] != "user":
            continue
        content = m["content"]
        for i in range(len(content) - 1, -1, -1):
            if content[i]["type"] not in ("thinking", "redacted_thinking"):
                content[i] = {**content[i], "cache_control": _CACHE}
                marked += 1
                break


def build_body(
    request: Request,
    entry: ModelEntry,
    provider: str,
    *,
    stream: bool | None,
    count_only: bool = False,
) -> dict[str, Any]:
    extra = request.provider_data or {}
    cache = bool(extra.get("cache", True)) and not count_only
    plan = plan_thinking(request, entry)
    body: dict[str, Any] = {"model": request.model}
    if not count_only:
        body["max_tokens"] = plan.max_tokens
    system: list[dict[str, Any]] = [
        {"type": "text", "text": b.text} for b in request.system if b.text
    ]
    if system:
        if cache:
            system[-1]["cache_control"] = _CACHE
        body["system"] = system
    messages = encode_messages(request.messages, provider)
    if cache:
        _mark_cache(messages)
    body["messages"] = messages
    if request.tools:
        tools = []
        for t in request.tools:
            tool: dict[str, Any] = {"name": t.name}
            if t.description:
                tool["description"] = t.description
            tool["input_schema"] = t.parameters
            if t.strict:
                tool["strict"] = True
            tools.append(tool)
        if cache:
            tools[-1]["cache_control"] = _CACHE
        body["tools"] = tools
        choice = request.tool_choice
        if choice.mode == "none":
            body["tool_choice"] = {"type": "none"}
        else:
            tc: dict[str, Any] = {
                "type": {"auto": "auto", "required": "any", "tool": "tool"}[choice.mode]
            }
            if choice.mode == "tool":
                tc["name"] = choice.name
            if not request.parallel_tool_calls:
                tc["disable_parallel_tool_use"] = True
            if tc != {"type": "auto"}:
                body["tool_choice"] = tc
    if plan.config is not None:
        body["thinking"] = plan.config
    output_config: dict[str, Any] = {}
    if plan.effort and plan.effort != "none":
        output_config["effort"] = plan.effort
    if request.response_schema is not None:
        fitted = fit_for_request("messages", request.response_schema, provider).schema
        output_config["format"] = {"type": "json_schema", "schema": fitted}
    if output_config:
        body["output_config"] = output_config
    if not count_only:
        for key in _SAMPLING:
            # With thinking on, Anthropic takes no temperature or top_k (and
            # top_p only near 1): leave sampling to the API.
            if key in extra and not plan.enabled:
                body[key] = extra[key]
        for key in _PASSTHROUGH:
            if key in extra:
                body[key] = extra[key]
        if stream:
            body["stream"] = True
    return body
