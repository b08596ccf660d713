"""The ``attachments`` of ``prompt``, ``enqueue`` and ``ask`` as the daemon
takes them (agent.prompt, docs/protocol.md): a path (``str`` or
``os.PathLike``) goes as its absolute path, for the daemon to read (it runs
as the same user on this machine); ``bytes`` go inline as base64, their type
told by their first bytes; a dict goes as it is ({path | url | data +
media_type, name?})."""

from __future__ import annotations

import base64
import os

from protocol.filetypes import bytes_type

TYPE_CHECKING = False  # importing typing itself costs ikictl start-up time
if TYPE_CHECKING:
    from typing import Any

    Attachment = str | os.PathLike[str] | bytes | bytearray | memoryview | dict[str, Any]


def wire_attachments(items: list[Attachment]) -> list[dict[str, Any]]:
    """Each attachment as agent.prompt takes it (ValueError for bytes of no
    type a model takes, TypeError for anything else)."""
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            out.append(item)
        elif isinstance(item, str | os.PathLike):
            out.append({"path": os.path.abspath(os.fsdecode(os.fspath(item)))})
        elif isinstance(item, bytes | bytearray | memoryview):
            data = bytes(item)
            kind = bytes_type(data)
            if kind is None:
                raise ValueError(
                    f"attachments[{i}]: these bytes are not a picture (PNG, JPEG, GIF, WEBP), "
                    "a PDF or UTF-8 text; give a dict with their media_type"
                )
            out.append({"data": base64.b64encode(data).decode("ascii"), "media_type": kind})
        else:
            raise TypeError(
                f"attachments[{i}]: a path (str or os.PathLike), bytes or a dict, "
                f"not {type(item).__name__}"
            )
    return out


def attachments_param(items: list[Attachment] | None) -> dict[str, Any]:
    """``{"attachments": [...]}`` for agent.prompt's params ({} for none)."""
    return {"attachments": wire_attachments(items)} if items else {}
