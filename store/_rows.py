"""Rows both ways: what the caller gives, checked and turned into rows to
insert; what SQL returns, turned into the records the store hands out.

Nothing here touches a connection; the concern modules do the SQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar

import msgspec

from providers.types import (
    THINKING_LEVELS,
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)

from ._blobs import Blob, stored_message
from ._errors import InvalidEntry
from ._replay import decode_message
from ._types import MESSAGE_ROLES, AgentRecord, Entry, MailRecord, MessageRecord, QueuedPrompt

MAX_NAME = 200

R = TypeVar("R", bound=msgspec.Struct)

_encode = msgspec.json.encode


class Prepared(NamedTuple):
    """One messages row, checked and ready to insert."""

    kind: str
    content: str
    data: dict[str, Any] | None = None
    message_json: str | None = None  # user, assistant and tool_result rows
    message: Message | None = None  # the Message message_json encodes, for the returned record
    # the bytes of its attached files, stored apart once each (_blobs.py)
    blobs: tuple[Blob, ...] = ()


def now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------- checks on the way in


def check_name(name: str) -> None:
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise InvalidEntry(f"agent name {name!r} must be non-empty without surrounding spaces")
    if len(name) > MAX_NAME or any(ch.isspace() or not ch.isprintable() for ch in name):
        raise InvalidEntry(
            f"agent name {name!r} must be at most {MAX_NAME} printable characters, no spaces"
        )


def check_level(level: str) -> None:
    if level not in THINKING_LEVELS:
        raise InvalidEntry(f"thinking level {level!r} is not one of {', '.join(THINKING_LEVELS)}")


def plain(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """Caller data as plain JSON values (Structs and the like converted)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise InvalidEntry(f"row data must be a dict, not {type(data).__name__}")
    try:
        return msgspec.to_builtins(data, str_keys=True)
    except (TypeError, msgspec.EncodeError) as e:
        raise InvalidEntry(f"row data is not JSON-able: {e}") from None


def usage_dict(value: Any, kind: str) -> dict[str, int]:
    if value is None:
        raise InvalidEntry(f"a {kind} row's usage is missing")
    try:
        usage = value if isinstance(value, Usage) else msgspec.convert(value, Usage)
    except msgspec.ValidationError as e:
        raise InvalidEntry(f"a {kind} row's usage is not valid: {e}") from None
    return msgspec.to_builtins(usage)


def no_nul(value: Any) -> Any:
    """The value with every NUL replaced: PostgreSQL text and JSONB refuse it."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {no_nul(k): no_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [no_nul(v) for v in value]
    return value


def row_params(agent_uuid: str, row: Prepared, at: datetime) -> dict[str, Any]:
    """The messages-table values of one prepared row."""
    kind, text, meta, message_json = row[:4]
    return {
        "agent_uuid": agent_uuid,
        "kind": kind,
        # the readable copies must fit PostgreSQL text and JSONB: no NUL
        "content": text.replace("\x00", "\ufffd") if "\x00" in text else text,
        "data": no_nul(meta) if meta and b"\\u0000" in _encode(meta) else meta,
        "message_json": message_json,
        "created_at": at,
    }


def readable(msg: Message) -> str:
    """The content column of a Message row: its text, for people and search."""
    parts: list[str] = []
    for b in msg.content:
        if isinstance(b, TextBlock):
            parts.append(b.text)
        elif isinstance(b, ToolResultBlock):
            parts.append(("[error] " if b.is_error else "") + b.content)
            parts.extend(f"[image {i.media_type}]" for i in b.images)
        elif isinstance(b, ImageBlock | DocumentBlock):
            parts.append(attached_line(b))
    return "\n".join(p for p in parts if p)


def attached_line(b: ImageBlock | DocumentBlock) -> str:
    """``[attached notes.pdf · application/pdf · 120 KB]``: a file, as the
    readable copy of its message names it."""
    size: int | None = None
    if b.data:
        size = len(b.data) // 4 * 3 - b.data[-2:].count("=")
    elif isinstance(b, DocumentBlock) and b.text is not None:
        size = len(b.text.encode("utf-8", "surrogatepass"))
    name = b.name or b.url or ("image" if isinstance(b, ImageBlock) else "file")
    shown = [name, b.media_type] + ([] if size is None else [_size(size)])
    return f"[attached {' · '.join(shown)}]"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{round(n / 1024)} KB"
    return f"{n / (1024 * 1024):.1f} MB"


# ---------------------------------------------------------------- entries -> rows


def message_rows(agent: Any, e: Entry, kind: str, data: dict[str, Any] | None) -> list[Prepared]:
    """The rows of a user, assistant or tool_result entry: the Message row and,
    for an assistant, one tool_call row per tool call. ``agent`` (its row) fills
    an assistant's provider, model and thinking level; unused for the others."""
    msg = e.message
    if not isinstance(msg, Message):
        raise InvalidEntry(f"a {kind} row needs a providers.types.Message")
    if msg.role != MESSAGE_ROLES[kind]:
        raise InvalidEntry(
            f"a {kind} row holds a {MESSAGE_ROLES[kind]!r}-role message, not {msg.role!r}"
        )
    content = e.content if e.content is not None else readable(msg)
    message_json, blobs, files = stored_message(msg)
    if files:  # the attached files, described: history shows them without reading them
        data = {**(data or {}), "files": list(files)}
    if kind != "assistant":
        if kind == "tool_result":
            results = [
                {"tool_call_id": b.tool_call_id, "name": b.name, "is_error": b.is_error}
                for b in msg.content
                if isinstance(b, ToolResultBlock)
            ]
            data = {"results": results, **(data or {})}
        return [Prepared(kind, content, data, message_json, msg, blobs)]
    meta: dict[str, Any] = {
        "provider": msg.provider or agent.provider,
        "model": msg.model or agent.model,
        "thinking_level": msg.thinking_level or agent.thinking_level,
    }
    thinking = "\n\n".join(b.text for b in msg.content if isinstance(b, ThinkingBlock) and b.text)
    if thinking:
        meta["thinking"] = thinking
    if msg.provider_data:
        meta["provider_data"] = msg.provider_data
    meta.update(data or {})
    if "usage" in meta:
        meta["usage"] = usage_dict(meta["usage"], kind)
    out = [Prepared("assistant", content, meta, message_json, msg, blobs)]
    for b in msg.content:
        if isinstance(b, ToolCallBlock):
            args = b.raw_arguments if b.raw_arguments is not None else _encode(b.arguments).decode()
            out.append(
                Prepared(
                    "tool_call",
                    f"{b.name} {args}",
                    {"tool_call_id": b.id, "name": b.name, "arguments": b.arguments},
                )
            )
    return out


def user_row(message: Message, data: dict[str, Any]) -> Prepared:
    """The user row that starts a turn."""
    return message_rows(None, Entry(kind="user", message=message), "user", data)[0]


# ---------------------------------------------------------------- SQL rows -> records


def _from_columns(cls: type[R], r: Any, **computed: Any) -> R:
    """The record whose fields are columns of the row (by name), plus any computed ones."""
    columns = r._mapping
    return cls(**{f: columns[f] for f in cls.__struct_fields__ if f not in computed}, **computed)


def agent_record(r: Any) -> AgentRecord:
    return _from_columns(AgentRecord, r)


def message_record(r: Any, message_json: str | None = None) -> MessageRecord:
    """Per row of a history: spelled out, and the message decoded from its
    JSON (``message_json``: the row's with its files' bytes put back)."""
    text = message_json or r.message_json
    return MessageRecord(
        id=r.id,
        agent_uuid=r.agent_uuid,
        kind=r.kind,
        content=r.content,
        data=r.data,
        message=decode_message(text) if text else None,
        created_at=r.created_at,
    )


def mail_record(r: Any) -> MailRecord:
    return _from_columns(MailRecord, r)


def queued_record(r: Any) -> QueuedPrompt:
    meta = r.meta if isinstance(r.meta, dict) else {}
    choice, schema = meta.get("tool_choice"), meta.get("schema")
    return _from_columns(
        QueuedPrompt,
        r,
        mail_ids=list(r.mail_ids or []),
        attachments=queued_attachments(meta),
        tool_choice=dict(choice) if isinstance(choice, dict) else None,
        schema=dict(schema) if isinstance(schema, dict) else None,
    )


def queued_attachments(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """A queue row's files; rows from before documents kept ``images``
    ({media_type, data}), untagged."""
    files = meta.get("attachments")
    if isinstance(files, list):
        return [f for f in files if isinstance(f, dict)]
    images = meta.get("images")
    if isinstance(images, list):
        return [{"type": "image", **i} for i in images if isinstance(i, dict)]
    return []
