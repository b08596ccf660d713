"""Attached files' bytes, stored once per content (table ``blobs``, 0012).

A message whose image or document blocks carry bytes (a picture's or PDF's
base64 ``data``, a text file's ``text``) is stored with each such block's
bytes in ``blobs`` (keyed by their sha256, inserted only when absent, in the
transaction that writes the row) and, in the row's ``message_json``, the
block without them and with a reference instead::

    {"type":"document","media_type":"application/pdf","name":"a.pdf",
     "blob":{"sha256":"9f86d0…","size":120394,"field":"data"}}

``field`` says which key the bytes go back to (``data`` as base64, ``text``
as UTF-8). A prompt waiting in ``prompt_queue`` keeps its files' references
in its meta the same way. Reading rows back (replay, history, the queue)
puts the bytes back, so everything above the store sees whole blocks; rows
written before 0012, with the bytes inline, read as they are. So a file
attached in many turns, or inherited by many forks, is one blob row.

Blobs are never deleted by a write: a purge deletes those no row refers to
any more (``drop_unreferenced``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import msgspec
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from providers.types import DocumentBlock, ImageBlock, Message

from ._schema import blobs, messages, prompt_queue

# how a reference starts in message_json (msgspec writes no spaces): a row
# without it has nothing to restore, found without parsing it
MARKER = '"blob":{"sha256":"'
_FILES = (ImageBlock, DocumentBlock)
_TYPES = ("image", "document")
_encode = msgspec.json.encode
_decode = msgspec.json.decode
_CHUNK = 500  # shas per IN (...): within every engine's bound on parameters


class Blob(NamedTuple):
    sha256: str
    media_type: str
    data: bytes


class BlobRecord(NamedTuple):
    """A stored blob, as export carries it."""

    sha256: str
    media_type: str
    size: int
    data: bytes


# ---------------------------------------------------------------- blocks -> references


def _bytes_of(block: dict[str, Any]) -> tuple[str, bytes] | None:
    """(field, bytes) of a builtins image/document block, or None when it
    carries none (a URL) or they cannot be read (not base64: kept inline)."""
    if block.get("type") not in _TYPES or "blob" in block:
        return None
    data, text = block.get("data"), block.get("text")
    if isinstance(data, str) and data:
        try:
            return "data", binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError):
            return None
    if isinstance(text, str) and text and block.get("type") == "document":
        try:
            return "text", text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: no database takes them anyway
            return None
    return None


def referenced(block: dict[str, Any]) -> tuple[dict[str, Any], Blob | None]:
    """A builtins block with its bytes replaced by a reference, and the blob
    to store; the block as it is when it carries no bytes."""
    found = _bytes_of(block)
    if found is None:
        return block, None
    field, raw = found
    sha = hashlib.sha256(raw).hexdigest()
    out = {k: v for k, v in block.items() if k != field}
    out["blob"] = {"sha256": sha, "size": len(raw), "field": field}
    return out, Blob(sha, str(block.get("media_type") or "application/octet-stream"), raw)


class Stored(NamedTuple):
    """A message as its row keeps it."""

    message_json: str
    blobs: tuple[Blob, ...] = ()
    # each attached file's {media_type, name?, size, sha256} (or url), in
    # order: the row's data.files, so history describes them unread
    files: tuple[dict[str, Any], ...] = ()


def stored_message(msg: Message) -> Stored:
    """A message's ``message_json``, the blobs its files go to, and their descriptions."""
    if not any(isinstance(b, _FILES) for b in msg.content):
        return Stored(_encode(msg).decode())
    whole = msgspec.to_builtins(msg)
    content: list[Any] = []
    found: list[Blob] = []
    files: list[dict[str, Any]] = []
    for block in whole["content"]:
        ref, blob = referenced(block)
        content.append(ref)
        if blob is not None:
            found.append(blob)
        if block.get("type") in _TYPES:
            files.append(_described(ref))
    whole["content"] = content
    return Stored(_encode(whole).decode(), tuple(found), tuple(files))


def _described(ref: dict[str, Any]) -> dict[str, Any]:
    out = {k: ref[k] for k in ("media_type", "name", "url") if ref.get(k) is not None}
    blob = ref.get("blob")
    if isinstance(blob, dict):
        out["size"], out["sha256"] = blob["size"], blob["sha256"]
    return out


def stored_items(items: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Blob]]:
    """A queued prompt's files (builtins blocks) as its meta keeps them."""
    refs: list[dict[str, Any]] = []
    found: list[Blob] = []
    for item in items:
        ref, blob = referenced(dict(item))
        refs.append(ref)
        if blob is not None:
            found.append(blob)
    return refs, found


def put_blobs(conn: sa.Connection, found: Iterable[Blob]) -> None:
    """Store each blob not stored yet (in the caller's transaction)."""
    todo = {b.sha256: b for b in found}
    if not todo:
        return
    have = _existing(conn, list(todo))
    rows = [
        {"sha256": b.sha256, "media_type": b.media_type[:255], "size": len(b.data), "data": b.data}
        for sha, b in todo.items()
        if sha not in have
    ]
    if not rows:
        return
    at = datetime.now(UTC)
    for row in rows:
        row["created_at"] = at
    dialect = conn.dialect.name
    # a concurrent writer (another daemon, the group's other member) may
    # store the same content first: theirs is the same bytes
    if dialect == "postgresql":
        stmt: Any = postgresql.insert(blobs).on_conflict_do_nothing(index_elements=["sha256"])
    elif dialect == "sqlite":
        stmt = sqlite.insert(blobs).on_conflict_do_nothing(index_elements=["sha256"])
    else:
        stmt = blobs.insert()
    conn.execute(stmt, rows)


def _existing(conn: sa.Connection, shas: list[str]) -> set[str]:
    have: set[str] = set()
    for i in range(0, len(shas), _CHUNK):
        part = shas[i : i + _CHUNK]
        have.update(
            conn.execute(sa.select(blobs.c.sha256).where(blobs.c.sha256.in_(part))).scalars()
        )
    return have


def load_blobs(conn: sa.Connection, shas: Iterable[str]) -> dict[str, BlobRecord]:
    """The stored blobs of ``shas`` (those missing are left out)."""
    wanted = sorted(set(shas))
    out: dict[str, BlobRecord] = {}
    for i in range(0, len(wanted), _CHUNK):
        part = wanted[i : i + _CHUNK]
        b = blobs.c
        q = sa.select(b.sha256, b.media_type, b.size, b.data).where(b.sha256.in_(part))
        for r in conn.execute(q):
            out[r.sha256] = BlobRecord(r.sha256, r.media_type, r.size, bytes(r.data))
    return out


# ---------------------------------------------------------------- references -> blocks


def ref_of(block: Any) -> str | None:
    """The sha256 a builtins block refers to, or None."""
    if not isinstance(block, dict) or block.get("type") not in _TYPES:
        return None
    ref = block.get("blob")
    sha = ref.get("sha256") if isinstance(ref, dict) else None
    return sha if isinstance(sha, str) else None


def refs_in(text: str) -> list[str]:
    """The shas a stored message refers to."""
    if MARKER not in text:
        return []
    content = _decode(text).get("content") or ()
    return [sha for sha in map(ref_of, content) if sha is not None]


def restored(block: dict[str, Any], found: dict[str, BlobRecord]) -> dict[str, Any]:
    """A builtins block with its bytes back (a block whose blob is gone
    becomes a text block saying so: the model is told, not sent a hole)."""
    sha = ref_of(block)
    if sha is None:
        return block
    ref = block["blob"]
    out = {k: v for k, v in block.items() if k != "blob"}
    blob = found.get(sha)
    if blob is None:
        name = block.get("name") or block.get("media_type") or "file"
        return {"type": "text", "text": f"[attached {name}: its content is no longer stored]"}
    if ref.get("field") == "text":
        out["text"] = blob.data.decode("utf-8", "replace")
    else:
        out["data"] = base64.b64encode(blob.data).decode("ascii")
    return out


def restore_texts(conn: sa.Connection, texts: Sequence[str]) -> list[str]:
    """Stored messages (message_json) with their files' bytes back in."""
    if not any(MARKER in t for t in texts):
        return list(texts)
    parsed: dict[int, dict[str, Any]] = {}
    shas: set[str] = set()
    for i, text in enumerate(texts):
        if MARKER in text:
            whole = _decode(text)
            refs = [ref_of(b) for b in whole.get("content") or ()]
            if any(refs):
                parsed[i] = whole
                shas.update(s for s in refs if s)
    found = load_blobs(conn, shas)
    out = list(texts)
    for i, whole in parsed.items():
        whole["content"] = [restored(b, found) for b in whole["content"]]
        out[i] = _encode(whole).decode()
    return out


def restore_items(conn: sa.Connection, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A queued prompt's files with their bytes back in."""
    shas = [s for s in map(ref_of, items) if s is not None]
    if not shas:
        return items
    found = load_blobs(conn, shas)
    return [restored(item, found) for item in items]


# ---------------------------------------------------------------- purge


def drop_unreferenced(conn: sa.Connection, candidates: Iterable[str]) -> int:
    """Delete the blobs of ``candidates`` no message or queued prompt refers
    to any more (after a purge deleted rows that did); how many went."""
    left = set(candidates)
    if not left:
        return 0
    m, q = messages.c, prompt_queue.c
    # a reference is spelled with the marker in message_json: only those rows are read
    rows = conn.execute(sa.select(m.message_json).where(m.message_json.contains(MARKER)))
    for (text,) in rows:
        left.difference_update(refs_in(text))
        if not left:
            return 0
    for (meta,) in conn.execute(sa.select(q.meta).where(q.meta.is_not(None))):
        items = meta.get("attachments") if isinstance(meta, dict) else None
        left.difference_update(s for s in map(ref_of, items or ()) if s)
    if not left:
        return 0
    gone = sorted(left)
    for i in range(0, len(gone), _CHUNK):
        conn.execute(blobs.delete().where(blobs.c.sha256.in_(gone[i : i + _CHUNK])))
    return len(gone)


def files_of(conn: sa.Connection, where: sa.ColumnElement[bool], agent_uuid: str) -> set[str]:
    """The shas the messages matching ``where`` and the agent's queued
    prompts refer to (before a purge deletes them)."""
    m, q = messages.c, prompt_queue.c
    found: set[str] = set()
    rows = conn.execute(sa.select(m.message_json).where(where, m.message_json.contains(MARKER)))
    for (text,) in rows:
        found.update(refs_in(text))
    metas = conn.execute(sa.select(q.meta).where(q.agent_uuid == agent_uuid, q.meta.is_not(None)))
    for (meta,) in metas:
        items = meta.get("attachments") if isinstance(meta, dict) else None
        found.update(s for s in map(ref_of, items or ()) if s)
    return found
