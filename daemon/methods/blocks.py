"""``agent.history`` with ``blocks``: each row's message as blocks, and what
one pass over the whole lineage tells of each row (the turn it belongs to and
how that turn ended, whether a compaction covers it, the model it was asked
of). Pure: rows in, the protocol's shapes out (docs/protocol.md, "History
blocks").

Turns: a ``user`` row with ``data.turn`` starts one; the rows after it, up to
the next such row, belong to it (rows before the first belong to none). Its
status is ``interrupted`` when an ``interrupted`` row names its first row,
``running`` when it is the live agent's current turn, ``completed`` when its
last message row is an assistant message without tool calls, else
``incomplete`` (it ended in an error, at the tool-turn limit, or the daemon
died with it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from agents.compactor import price
from providers.types import (
    Block,
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)

if TYPE_CHECKING:
    from protocol import results as R
    from providers.catalog import Catalog

Model = tuple[str, str]  # (provider, model)
_TOKENS = (
    "input_tokens",
    "output_tokens",
    "thinking_tokens",
    "cached_tokens",
    "cache_write_tokens",
)


# ---------------------------------------------------------------- blocks


def image_info(image: ImageBlock) -> R.ImageInfo:
    """An image's type and size: never its data."""
    size: int | None = None
    if image.data is not None:
        try:
            size = len(base64.b64decode(image.data))
        except (binascii.Error, ValueError):
            size = len(image.data) * 3 // 4  # not valid base64: about what it would hold
    return {"media_type": image.media_type, "bytes": size, "url": image.url}


def file_info(b: ImageBlock | DocumentBlock, known: Any = None) -> R.HistoryBlock:
    """A file attached to a prompt (a picture or a document): its name, type,
    size and sha256 (the store keeps it once per sha256), never its bytes.
    ``known``: the row's description of it (``data.files``: the store wrote
    it, and left the bytes unread); else the block's own bytes tell."""
    size: int | None = None
    sha: str | None = None
    if isinstance(known, dict) and known.get("media_type") == b.media_type:
        size, sha = known.get("size"), known.get("sha256")
        size = size if type(size) is int else None
        sha = sha if isinstance(sha, str) else None
    else:
        raw: bytes | None = None
        if b.data is not None:
            try:
                raw = base64.b64decode(b.data)
            except (binascii.Error, ValueError):
                raw = None
        elif isinstance(b, DocumentBlock) and b.text is not None:
            raw = b.text.encode("utf-8", "surrogatepass")
        if raw is not None:
            size, sha = len(raw), hashlib.sha256(raw).hexdigest()
    return {
        "type": "image" if isinstance(b, ImageBlock) else "document",
        "name": b.name,
        "media_type": b.media_type,
        "bytes": size,
        "sha256": sha,
        "url": b.url,
    }


def _signed(out: R.HistoryBlock, signature: str | None, signatures: bool) -> R.HistoryBlock:
    out["signed"] = signature is not None
    if signatures:
        out["signature"] = signature
    return out


def block(b: Block, signatures: bool, known: Any = None) -> R.HistoryBlock:
    """One block as the protocol shows it (``known``: file_info's)."""
    if isinstance(b, TextBlock):
        return _signed({"type": "text", "text": b.text}, b.signature, signatures)
    if isinstance(b, ThinkingBlock):
        out: R.HistoryBlock = {"type": "thinking", "text": b.text, "redacted": b.redacted}
        return _signed(out, b.signature, signatures)
    if isinstance(b, ToolCallBlock):
        out = {"type": "tool_call", "id": b.id, "name": b.name, "arguments": b.arguments}
        return _signed(out, b.signature, signatures)
    if isinstance(b, ToolResultBlock):
        return {
            "type": "tool_result",
            "tool_call_id": b.tool_call_id,
            "name": b.name,
            "content": b.content,
            "is_error": b.is_error,
            "images": [image_info(i) for i in b.images],
        }
    return file_info(b, known)


def blocks(message: Message | None, signatures: bool, files: Any = None) -> list[R.HistoryBlock]:
    """The message's blocks; ``files``: the row's ``data.files``, one a file block."""
    if message is None:
        return []
    described = iter(files if isinstance(files, list) else ())
    return [
        block(b, signatures, next(described, None))
        if isinstance(b, ImageBlock | DocumentBlock)
        else block(b, signatures)
        for b in message.content
    ]


# ---------------------------------------------------------------- the pass over the lineage


class Facts(NamedTuple):
    """What the lineage tells of one row."""

    turn: str | None
    turn_status: R.HistoryTurnStatus | None
    compacted: bool
    requested: Model | None  # the model its agent asked for then (None: unknown)


class _Turn:
    __slots__ = ("calls", "id", "interrupted", "last")

    def __init__(self, turn_id: str) -> None:
        self.id = turn_id
        self.last: str = "user"  # kind of its last message row
        self.calls = False  # that row is an assistant message with tool calls
        self.interrupted = False

    def status(self, running: str | None) -> R.HistoryTurnStatus:
        if self.interrupted:
            return "interrupted"
        if self.id == running:
            return "running"
        if self.last == "assistant" and not self.calls:
            return "completed"
        return "incomplete"


def _model(data: Any, side: str) -> Model | None:
    part = data.get(side) if isinstance(data, dict) else None
    if isinstance(part, dict):
        provider, model = part.get("provider"), part.get("model")
        if isinstance(provider, str) and isinstance(model, str):
            return provider, model
    return None


def lineage_facts(
    rows: Iterable[tuple[int, str, str, dict[str, Any] | None]],
    *,
    running: str | None = None,
    models_now: Mapping[str, Model] | None = None,
) -> dict[int, Facts]:
    """Facts of every row of a lineage given oldest first as (id, agent,
    kind, data; data needed of user, interrupted, compaction and model_switch
    rows). ``running``: the live agent's current turn. ``models_now``: an
    agent's model now, the one it asked for before its first model switch
    when the lineage shows none."""
    rows = list(rows)
    first_from: dict[str, Model | None] = {}
    newest_upto = -1
    for _rid, agent, kind, data in rows:
        if kind == "model_switch" and agent not in first_from:
            first_from[agent] = _model(data, "from")
        elif kind == "compaction" and isinstance(data, dict):
            upto = data.get("upto")
            if type(upto) is int and upto > newest_upto:
                newest_upto = upto
    now = models_now or {}
    asked: dict[str, Model | None] = {}
    turns: list[_Turn] = []
    starts: dict[int, _Turn] = {}
    placed: list[tuple[int, _Turn | None, Model | None]] = []
    current: _Turn | None = None
    for rid, agent, kind, data in rows:
        if agent not in asked:
            asked[agent] = first_from[agent] if agent in first_from else now.get(agent)
        if kind == "user" and isinstance(data, dict) and isinstance(data.get("turn"), str):
            current = _Turn(data["turn"])
            turns.append(current)
            starts[rid] = current
        elif kind == "model_switch":
            asked[agent] = _model(data, "to")
        elif kind == "interrupted" and isinstance(data, dict):
            cut = starts.get(data.get("turn_start"))  # type: ignore[arg-type]
            if cut is not None:
                cut.interrupted = True
        if current is not None:
            if kind in ("user", "assistant", "tool_result"):
                current.last, current.calls = kind, False
            elif kind == "tool_call" and current.last == "assistant":
                current.calls = True
        placed.append((rid, current, asked[agent]))
    status = {id(t): t.status(running) for t in turns}
    return {
        rid: Facts(
            None if t is None else t.id,
            None if t is None else status[id(t)],
            rid <= newest_upto,
            model,
        )
        for rid, t, model in placed
    }


# ---------------------------------------------------------------- one row


def _usage(data: Mapping[str, Any]) -> R.RowUsage | None:
    raw = data.get("usage")
    if not isinstance(raw, dict):
        return None
    counts = {k: raw.get(k, 0) for k in _TOKENS}
    if not all(type(v) is int for v in counts.values()):
        return None
    return {
        "input_tokens": counts["input_tokens"],
        "output_tokens": counts["output_tokens"],
        "thinking_tokens": counts["thinking_tokens"],
        "cached_tokens": counts["cached_tokens"],
        "cache_write_tokens": counts["cache_write_tokens"],
    }


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def row_extras(
    *,
    kind: str,
    agent: str,
    data: dict[str, Any] | None,
    message: Message | None,
    facts: Facts | None,
    asked_agent: str,
    signatures: bool,
    catalog: Catalog,
) -> dict[str, Any]:
    """The keys a history row gains with ``blocks`` (results.HistoryRow)."""
    meta = data or {}
    assistant = kind == "assistant"
    provider = model = level = finish = None
    if assistant:
        provider = _text(meta.get("provider")) or (message.provider if message else None)
        model = _text(meta.get("model")) or (message.model if message else None)
        level = _text(meta.get("thinking_level")) or (message.thinking_level if message else None)
        finish = _text(meta.get("finish_reason"))
    usage = _usage(meta) if kind in ("assistant", "usage") else None
    cost: float | None = None
    if usage is not None:
        payer = provider if assistant else _text(meta.get("provider"))
        reported = model if assistant else _text(meta.get("model"))
        requested = facts.requested if facts is not None else None
        if payer is not None and reported is not None:
            asked = requested[1] if requested is not None and requested[0] == payer else None
            cost = price(catalog, payer, reported, asked, Usage(**usage))
    return {
        "blocks": blocks(message, signatures, meta.get("files")),
        "role": message.role if message is not None else None,
        "provider": provider,
        "model": model,
        "thinking_level": level,
        "usage": usage,
        "cost_usd": cost,
        "finish_reason": finish,
        "turn": facts.turn if facts is not None else None,
        "turn_status": facts.turn_status if facts is not None else None,
        "compacted": facts.compacted if facts is not None else False,
        "inherited": agent != asked_agent,
    }
