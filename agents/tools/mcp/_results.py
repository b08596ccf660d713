"""The SDK's results as our ToolOutput: text joined, pictures as images,
resources named, everything bounded (a server may answer 10 MB)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from providers.types import ImageBlock

from .._api import ToolOutput
from .._text import clip, cut_middle

MAX_TEXT = 1024 * 1024  # characters kept of a result (the registry cuts further, per tool)
MAX_IMAGES = 16
MAX_IMAGE = 8 * 1024 * 1024  # characters of one image's base64
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class _Builder:
    """Text parts and images, stopping at the limits instead of building
    strings nobody will read."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.images: list[ImageBlock] = []

    def text(self, text: str) -> None:
        room = MAX_TEXT - self.size
        if room <= 0:
            if self.parts and not self.parts[-1].startswith("[... more output"):
                self.parts.append("[... more output cut ...]")
            return
        if len(text) > room:
            text = cut_middle(text, room)
        self.parts.append(text)
        self.size += len(text)

    def image(self, data: Any, mime: Any, what: str) -> None:
        mime = str(mime or "")
        if not isinstance(data, str) or mime not in _IMAGE_TYPES:
            self.text(f"[{what}: {clip(mime, 60) or 'unknown type'}, not shown]")
        elif len(data) > MAX_IMAGE:
            self.text(f"[{what}: {mime}, {len(data) * 3 // 4} bytes, too big to show]")
        elif len(self.images) >= MAX_IMAGES:
            self.text(f"[{what}: {mime}, not shown: more than {MAX_IMAGES} images]")
        elif not _is_base64(data):
            self.text(f"[{what}: {mime}, not valid base64]")
        else:
            self.images.append(ImageBlock(media_type=mime, data=data))

    def resource(self, res: Any) -> None:
        uri = clip(str(getattr(res, "uri", "")), 500)
        mime = getattr(res, "mime_type", None)
        text = getattr(res, "text", None)
        if isinstance(text, str):
            self.text(f"[resource {uri}]\n{text}")
            return
        blob = getattr(res, "blob", None)
        if isinstance(blob, str) and str(mime or "") in _IMAGE_TYPES:
            self.image(blob, mime, f"image resource {uri}")
            return
        size = len(blob) * 3 // 4 if isinstance(blob, str) else 0
        self.text(f"[binary resource {uri} ({clip(str(mime or 'no type'), 60)}, {size} bytes)]")

    def output(self, is_error: bool) -> ToolOutput:
        return ToolOutput("\n".join(self.parts), is_error=is_error, images=tuple(self.images))


def _is_base64(data: str) -> bool:
    try:
        base64.b64decode(data[:4096 - 4096 % 4] if len(data) > 4096 else data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def call_output(result: Any) -> ToolOutput:
    """A ``CallToolResult`` as a ToolOutput."""
    out = _Builder()
    has_text = False
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            out.text(str(block.text))
            has_text = True
        elif kind == "image":
            out.image(block.data, block.mime_type, "image")
        elif kind == "audio":
            out.text(f"[audio: {clip(str(block.mime_type), 60)}, not shown]")
        elif kind == "resource":
            out.resource(block.resource)
            has_text = True
        elif kind == "resource_link":
            name = clip(str(getattr(block, "name", "") or ""), 200)
            link = clip(str(block.uri), 500)
            out.text(f"[resource link {link}: {name}]" if name else f"[resource link {link}]")
        else:
            out.text(f"[content of type {clip(str(kind), 40)!r}, not shown]")
    structured = getattr(result, "structured_content", None)
    if structured is not None and not has_text:
        try:
            out.text(json.dumps(structured, ensure_ascii=False))
        except (TypeError, ValueError, RecursionError):
            out.text("[structured content that is not JSON]")
    is_error = bool(getattr(result, "is_error", False))
    if not out.parts and not out.images:
        out.text("the tool failed and said nothing" if is_error else "(no output)")
    return out.output(is_error)


def resource_output(result: Any) -> ToolOutput:
    """A ``ReadResourceResult`` as a ToolOutput."""
    out = _Builder()
    for res in getattr(result, "contents", None) or []:
        out.resource(res)
    if not out.parts and not out.images:
        out.text("(the resource is empty)")
    return out.output(False)
