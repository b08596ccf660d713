"""The files of an exported agent (daemon/methods/transfer.py): the store
keeps an attached file once, by sha256, and a message's block names it
(store/_blobs.py); an export document does the same. Its ``blobs`` holds
each file once (``{sha256: {media_type, size, data (base64)}}``) and its
messages keep the blocks' references, so a file attached in every turn
travels once. An import puts the bytes back into each block before the
document is read, checking that each file is there and is what its name
(its sha256) says."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import TYPE_CHECKING, Any

import protocol as p
from protocol import params as P

if TYPE_CHECKING:
    from store._blobs import BlobRecord

_TYPES = ("image", "document")


def exported_blobs(found: dict[str, BlobRecord]) -> dict[str, dict[str, Any]]:
    """The document's ``blobs``."""
    return {
        sha: {
            "media_type": b.media_type,
            "size": b.size,
            "data": base64.b64encode(b.data).decode("ascii"),
        }
        for sha, b in sorted(found.items())
    }


def _bad(where: str, what: str) -> p.RpcError:
    return p.RpcError(
        p.INVALID_PARAMS, f"invalid params for agent.import: {where}: {P.excerpt(what, 400)}"
    )


def _files(raw: Any) -> dict[str, bytes]:
    """The document's ``blobs``, each checked against its sha256."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _bad("document.blobs", "must be an object: sha256 -> {media_type, size, data}")
    out: dict[str, bytes] = {}
    for sha, entry in raw.items():
        where = f"document.blobs.{P.excerpt(sha, 70)}"
        data = entry.get("data") if isinstance(entry, dict) else None
        if not isinstance(data, str):
            raise _bad(f"{where}.data", "required: the file's bytes in base64")
        try:
            content = binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError):
            raise _bad(f"{where}.data", "not valid base64") from None
        if hashlib.sha256(content).hexdigest() != sha:
            raise _bad(where, "its data does not have this sha256")
        out[sha] = content
    return out


def with_files(raw: dict[str, Any]) -> dict[str, Any]:
    """The document with each message block's file back in it (and without
    ``blobs``): RpcError -32602 for a block naming a file it lacks."""
    files = _files(raw.get("blobs"))
    rows = raw.get("messages")
    out = {k: v for k, v in raw.items() if k != "blobs"}
    if not isinstance(rows, list):
        return out  # the document's own check says what is wrong
    restored: list[Any] = []
    for i, row in enumerate(rows):
        message = row.get("message") if isinstance(row, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            restored.append(row)
            continue
        blocks = [
            _restored(b, files, f"document.messages[{i}].message.content[{j}]")
            for j, b in enumerate(content)
        ]
        restored.append({**row, "message": {**message, "content": blocks}})
    out["messages"] = restored
    return out


def _restored(block: Any, files: dict[str, bytes], where: str) -> Any:
    if not isinstance(block, dict) or block.get("type") not in _TYPES or "blob" not in block:
        return block
    ref = block["blob"]
    sha = ref.get("sha256") if isinstance(ref, dict) else None
    if not isinstance(sha, str):
        raise _bad(f"{where}.blob", "must be {sha256, size, field}")
    content = files.get(sha)
    if content is None:
        raise _bad(f"{where}.blob", f"file {P.excerpt(sha, 70)} is not in document.blobs")
    out = {k: v for k, v in block.items() if k != "blob"}
    if ref.get("field") == "text":
        try:
            out["text"] = content.decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(f"{where}.blob", "a text file's bytes are not UTF-8") from None
    else:
        out["data"] = base64.b64encode(content).decode("ascii")
    return out
