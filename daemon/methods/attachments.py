"""``agent.prompt``'s ``attachments``, checked before anything is stored:
inline pictures (base64 ``data`` and an image ``media_type``) become the
image blocks of the turn's user message. Each refusal is -32602 naming the
attachment's field and the limit."""

from __future__ import annotations

import binascii

import protocol as p
from protocol import params as P
from providers.types import ImageBlock

__all__ = ["IMAGE_TYPES", "MAX_ATTACHMENTS", "MAX_IMAGE_BYTES", "checked_images"]

# what every wire API takes as a picture in a user message
IMAGE_TYPES = ("image/gif", "image/jpeg", "image/png", "image/webp")
_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
MAX_ATTACHMENTS = 20
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # decoded; Anthropic's limit, the strictest API's


def _refuse(i: int, field: str, why: str) -> p.RpcError:
    return p.RpcError(p.INVALID_PARAMS, f"attachments[{i}].{field}: {why}")


def checked_images(attachments: list[P.Attachment]) -> list[ImageBlock]:
    if len(attachments) > MAX_ATTACHMENTS:
        raise p.RpcError(
            p.INVALID_PARAMS,
            f"attachments: at most {MAX_ATTACHMENTS} a prompt ({len(attachments)} given)",
        )
    images = []
    for i, a in enumerate(attachments):
        if a.path is not None or a.url is not None:
            field = "path" if a.path is not None else "url"
            raise _refuse(
                i, field, "only inline pictures are taken so far: give data (base64) and media_type"
            )
        if a.media_type is None or a.data is None:
            missing = "media_type" if a.media_type is None else "data"
            raise _refuse(
                i, missing, "required (an inline picture: base64 data and its media_type)"
            )
        kind = a.media_type.strip().lower()
        kind = _ALIASES.get(kind, kind)
        if kind not in IMAGE_TYPES:
            shown = a.media_type[:60].encode("ascii", "backslashreplace").decode()
            raise _refuse(
                i, "media_type", f"{shown} is not taken (images: {', '.join(IMAGE_TYPES)})"
            )
        data = a.data
        if not data or len(data) % 4 or not data.isascii():
            raise _refuse(i, "data", "not valid base64")
        try:
            size = len(binascii.a2b_base64(data, strict_mode=True))
        except (binascii.Error, ValueError):
            raise _refuse(i, "data", "not valid base64") from None
        if size > MAX_IMAGE_BYTES:
            raise _refuse(i, "data", f"{size} bytes; a picture is at most {MAX_IMAGE_BYTES} bytes")
        images.append(ImageBlock(media_type=kind, data=data))
    return images
