"""ikigai's events and history rows as ACP session updates, and ACP prompt
blocks as ikigai's prompt: plain data in, plain data out (the JSON shapes of
the ACP schema, camelCase), so the mapping is tested without a connection.

ACP protocol version 1 (schema as of agent-client-protocol 0.12, schema
v1.19). The update shapes are ``session/update``'s ``update`` member."""

from __future__ import annotations

import os
from typing import Any

__all__ = [
    "IMAGE_TYPES",
    "PromptParts",
    "history_updates",
    "prompt_parts",
    "stop_reason",
    "tool_kind",
    "tool_locations",
    "tool_start",
    "tool_title",
]

# what ikigai sends a model as a picture (agent.prompt attachments)
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_TITLE = 120  # characters of a tool call's title: an editor shows it on one line
_RESULT = 20_000  # characters of a tool result replayed from history

_KINDS = {
    "bash": "execute",
    "file_read": "read",
    "file_write": "edit",
    "file_edit": "edit",
    "grep": "search",
    "glob": "search",
    "fork": "other",
    "send": "other",
    "wait": "other",
    "kill": "other",
}


def tool_kind(name: str) -> str:
    """The ACP ToolKind of an ikigai tool (an editor picks its icon by it)."""
    kind = _KINDS.get(name)
    if kind is not None:
        return kind
    low = name.lower()
    for word, guess in (
        ("fetch", "fetch"),
        ("read", "read"),
        ("search", "search"),
        ("delete", "delete"),
    ):
        if word in low:
            return guess
    return "other"


def _one_line(text: str, limit: int = _TITLE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """What the editor shows for a call: the command, the file or the pattern."""

    def arg(key: str) -> str | None:
        value = arguments.get(key)
        return value if isinstance(value, str) and value else None

    if name == "bash" and arg("command"):
        return _one_line(f"$ {arg('command')}")
    if name in ("file_read", "file_write", "file_edit") and arg("path"):
        verb = {"file_read": "Read", "file_write": "Write", "file_edit": "Edit"}[name]
        return _one_line(f"{verb} {arg('path')}")
    if name in ("grep", "glob") and arg("pattern"):
        return _one_line(f"{name} {arg('pattern')}")
    return _one_line(name)


def tool_locations(arguments: dict[str, Any], cwd: str | None) -> list[dict[str, Any]]:
    """The files a call touches, absolute (the editor follows along in them)."""
    path = arguments.get("path")
    if not isinstance(path, str) or not path or "\x00" in path or len(path) > 4096:
        return []
    if not os.path.isabs(path):
        if not cwd:
            return []
        path = os.path.normpath(os.path.join(cwd, path))
    location: dict[str, Any] = {"path": path}
    line = arguments.get("line") or arguments.get("offset")
    if type(line) is int and 0 < line < 1 << 31:
        location["line"] = line
    return [location]


def tool_start(
    call_id: str, name: str, arguments: dict[str, Any], cwd: str | None, status: str = "pending"
) -> dict[str, Any]:
    """The ``tool_call`` update that announces a call."""
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": tool_title(name, arguments),
        "kind": tool_kind(name),
        "status": status,
        "locations": tool_locations(arguments, cwd),
        "rawInput": arguments,
    }


def tool_done(call_id: str, content: str, is_error: bool) -> dict[str, Any]:
    """The ``tool_call_update`` of a finished call, its result as text."""
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if is_error else "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": content}}],
        "rawOutput": {"content": content, "is_error": is_error},
    }


def text_chunk(kind: str, text: str) -> dict[str, Any]:
    """``agent_message_chunk``, ``agent_thought_chunk`` or ``user_message_chunk``."""
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def stop_reason(status: str, finish_reason: str | None) -> str | None:
    """The prompt's StopReason for a turn that ended with ``status`` (its last
    model answer's ``finish_reason``); None: the turn failed, an error."""
    if status in ("cancelled", "interrupted"):
        return "cancelled"
    if status == "tool_limit":
        return "max_turn_requests"
    if status == "completed":
        if finish_reason == "length":
            return "max_tokens"
        if finish_reason == "content_filter":
            return "refusal"
        return "end_turn"
    return None


class PromptParts:
    """An ACP prompt as ikigai takes one: the text (resources inlined with
    their names) and the pictures as ``agent.prompt`` attachments."""

    __slots__ = ("attachments", "text")

    def __init__(self, text: str, attachments: list[dict[str, str]]) -> None:
        self.text = text
        self.attachments = attachments


class PromptError(ValueError):
    """A prompt block ikigai cannot take; the message names it."""


def prompt_parts(blocks: list[dict[str, Any]]) -> PromptParts:
    """The prompt blocks in order: text as it is, an embedded text resource as
    a fenced excerpt named by its URI, a link to a resource as its URI (the
    agent's tools can read a file: URI), an image as an attachment."""
    texts: list[str] = []
    images: list[dict[str, str]] = []
    for i, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text":
            texts.append(_text(i, "text", block.get("text")))
        elif kind == "image":
            media = str(block.get("mimeType") or "").lower()
            media = "image/jpeg" if media == "image/jpg" else media
            if media not in IMAGE_TYPES:
                raise PromptError(
                    f"prompt[{i}]: an image of type {_one_line(media, 60)!r} is not taken "
                    f"(images: {', '.join(sorted(IMAGE_TYPES))})"
                )
            data = _text(i, "data", block.get("data"))
            if not data:
                raise PromptError(f"prompt[{i}]: an image is taken only as data, not by uri")
            images.append({"media_type": media, "data": data})
        elif kind == "resource":
            texts.append(_resource_text(i, block.get("resource") or {}, images))
        elif kind == "resource_link":
            uri = _text(i, "uri", block.get("uri"))
            texts.append(f"[{_text(i, 'name', block.get('name')) or uri}]({uri})")
        else:
            raise PromptError(
                f"prompt[{i}]: a block of type {_one_line(str(kind), 40)!r} is not taken "
                "(ikigai takes text, images and resources)"
            )
    text = "\n\n".join(t for t in texts if t)
    if not text.strip():
        text = "(see the attached image)" if images else ""
    return PromptParts(text, images)


def _text(i: int, field: str, value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PromptError(f"prompt[{i}].{field}: must be a string")
    return value


def _resource_text(i: int, resource: dict[str, Any], images: list[dict[str, str]]) -> str:
    uri = _text(i, "resource.uri", resource.get("uri"))
    if "text" in resource:
        body = _text(i, "resource.text", resource.get("text"))
        fence = "````" if "```" in body else "```"
        return f"{uri}:\n{fence}\n{body}\n{fence}"
    media = str(resource.get("mimeType") or "").lower()
    blob = resource.get("blob")
    if media in IMAGE_TYPES and isinstance(blob, str) and blob:
        images.append({"media_type": media, "data": blob})
        return f"(image {uri} attached)"
    raise PromptError(
        f"prompt[{i}].resource: binary content of type {_one_line(media or 'unknown', 60)!r} "
        "is not taken (text resources and images are)"
    )


def history_updates(rows: list[dict[str, Any]], cwd: str | None) -> list[dict[str, Any]]:
    """A conversation's rows (``agent.history`` with blocks, oldest first) as
    the updates that replay it in an editor: what the user said, what the
    model thought and said, each tool call with its result."""
    out: list[dict[str, Any]] = []
    for row in rows:
        role = row.get("role")
        blocks = row.get("blocks") or []
        if role == "user":
            for b in blocks:
                if b.get("type") == "text" and b.get("text"):
                    out.append(text_chunk("user_message_chunk", b["text"]))
                elif b.get("type") == "image":
                    size = b.get("bytes")
                    note = f"[image: {b.get('media_type')}, {size} bytes]" if size else "[image]"
                    out.append(text_chunk("user_message_chunk", note))
        elif role == "assistant":
            for b in blocks:
                kind = b.get("type")
                if kind == "thinking" and b.get("text"):
                    out.append(text_chunk("agent_thought_chunk", b["text"]))
                elif kind == "text" and b.get("text"):
                    out.append(text_chunk("agent_message_chunk", b["text"]))
                elif kind == "tool_call":
                    args = b.get("arguments")
                    args = args if isinstance(args, dict) else {}
                    out.append(tool_start(str(b.get("id")), str(b.get("name")), args, cwd))
        elif role == "tool":
            for b in blocks:
                if b.get("type") == "tool_result":
                    content = str(b.get("content") or "")
                    if len(content) > _RESULT:
                        content = (
                            content[:_RESULT] + f"\n[… {len(content) - _RESULT} more characters]"
                        )
                    out.append(
                        tool_done(str(b.get("tool_call_id")), content, bool(b.get("is_error")))
                    )
    return out
