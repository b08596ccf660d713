"""The rules the real APIs enforce on the pictures and documents of a request,
so the fake answers 400 where they do (tests/fakes/rules.py calls these; the
fake must be at least as strict as they are). Each function takes a parsed
request body and returns the problem in words, or None: the real API's 400
message where it is known (its source quoted beside it), else words of ours,
marked "(ours)".

Written apart from providers/attachment_limits.py on purpose (the same
figures, found again from the same documents): tests/providers/
test_attachment_limits.py checks that whatever ``refusal`` lets through
encodes to a body these rules accept, on every API.

Sources: Anthropic "Vision" and "PDF support" (JPEG, PNG, GIF, WebP; 5 MB an
image; 100 images; 32 MB a request; 100 PDF pages; a base64 document source is
application/pdf, a text source text/plain); OpenAI "Images and vision" and
"File inputs" (the same four image types; 20 MB an image, 50 MB a request,
500 images; Chat Completions takes PDFs only, as a data URL with a filename;
100 pages and 32 MB of file content a request); Gemini "Image understanding"
and "Document understanding" (PNG, JPEG, WEBP, HEIC, HEIF; inline data while
the request stays under 20 MB; 1,000 pages).

One difference: Anthropic answers a request over 32 MB with 413
request_too_large; the fake answers every rule's problem with 400.
"""

from __future__ import annotations

import binascii
import json
import re
from typing import Any

MB = 1024 * 1024
_IMAGES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_GEMINI_IMAGES = ("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif")
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
# what OpenAI's input_file takes besides PDF (File inputs: text, code, office files)
_OPENAI_FILES = (
    "application/pdf",
    "application/json",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
)
_IMAGE_URL_HELP = (
    "Expected a base64-encoded data URL with an image MIME type "
    "(e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got"
)
_PDF_URL_HELP = (
    "Expected a base64-encoded data URL with an application/pdf MIME type "
    "(e.g. 'data:application/pdf;base64,SGVsbG8sIFdvcmxkIQ=='), but got"
)


def _decoded(data: Any) -> bytes | None:
    """The bytes of strict base64 ``data``, or None."""
    if not isinstance(data, str) or not data:
        return None
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return None


def _pages(raw: bytes) -> int:
    return len(_PAGE.findall(raw))


def _body_size(body: Any) -> int:
    """Bytes of the body as JSON (what the API measures a request by)."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "replace"))


def _data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a ``data:...;base64,...`` URL, or None."""
    head, comma, data = url.partition(",")
    if not comma or not head.startswith("data:") or not head.endswith(";base64"):
        return None
    return head[len("data:") : -len(";base64")], data


# ------------------------------------------------------------------ Anthropic


def _anthropic_image(at: str, block: dict[str, Any]) -> str | None:
    source = block.get("source")
    if not isinstance(source, dict):
        return f"{at}.image.source: Field required"
    if source.get("type") == "url":
        ok = isinstance(source.get("url"), str)
        return None if ok else f"{at}.image.source.url: Input should be a valid string"
    if source.get("type") != "base64":
        return f"{at}.image.source.type: Input should be 'base64' or 'url' (ours)"
    if source.get("media_type") not in _IMAGES:
        # github.com/expectedparrot/edsl/issues/2057 quotes this 400
        return (
            f"{at}.image.source.base64.media_type: Input should be 'image/jpeg', "
            "'image/png', 'image/gif' or 'image/webp'"
        )
    if _decoded(source.get("data")) is None:
        return f"{at}.image.source.base64.data: The image data is not valid base64 (ours)"
    if len(source["data"]) > 5 * MB:  # Vision: 5 MB an image, counted as base64
        return (
            f"{at}.image.source.base64: image exceeds 5 MB maximum: "
            f"{len(source['data'])} bytes > {5 * MB} bytes"
        )
    return None


def _anthropic_document(at: str, block: dict[str, Any]) -> tuple[str | None, int]:
    """(problem, PDF pages) of a ``document`` block."""
    source = block.get("source")
    if not isinstance(source, dict):
        return f"{at}.document.source: Field required", 0
    if "title" in block and not isinstance(block["title"], str | None):
        return f"{at}.document.title: Input should be a valid string", 0
    kind = source.get("type")
    if kind == "base64":
        if source.get("media_type") != "application/pdf":
            return f"{at}.document.source.base64.media_type: Input should be 'application/pdf'", 0
        raw = _decoded(source.get("data"))
        if raw is None or b"%PDF-" not in raw[:1024]:
            return f"{at}.pdf.source.base64.data: The PDF specified was not valid. (ours)", 0
        return None, _pages(raw)
    if kind == "text":
        if source.get("media_type") != "text/plain":
            return f"{at}.document.source.text.media_type: Input should be 'text/plain'", 0
        if not isinstance(source.get("data"), str):
            return f"{at}.document.source.text.data: Input should be a valid string", 0
        return None, 0
    if kind == "url":
        ok = isinstance(source.get("url"), str)
        return (None if ok else f"{at}.document.source.url: Input should be a valid string"), 0
    if kind in ("content", "file"):
        return None, 0
    return (
        f"{at}.document.source: Input tag {kind!r} found using 'type' does not match any of "
        "the expected tags: 'base64', 'content', 'text', 'url', 'file'",
        0,
    )


def anthropic(body: Any) -> str | None:
    msgs = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(msgs, list):
        return None  # the other rules answer for the body's shape
    count = pages = 0
    for i, m in enumerate(msgs):
        content = m.get("content") if isinstance(m, dict) else None
        for j, b in enumerate(content if isinstance(content, list) else []):
            kind = b.get("type") if isinstance(b, dict) else None
            at = f"messages.{i}.content.{j}"
            if kind == "image":
                count += 1
                problem = _anthropic_image(at, b)
            elif kind == "document":
                count += 1
                problem, n = _anthropic_document(at, b)
                pages += n
                if problem is None and pages > 100:
                    # github.com/warpdotdev/warp/issues/8114 quotes this 400
                    return f"{at}.pdf.source.base64.data: A maximum of 100 PDF pages may be provided."
            elif kind == "tool_result" and isinstance(b.get("content"), list):
                count += sum(1 for p in b["content"] if isinstance(p, dict) and p.get("type") == "image")
                continue
            else:
                continue
            if problem is not None:
                return problem
    if count > 100:  # Vision: "up to 100 images" a request
        return f"messages: too many images and documents in one request: {count} > 100 (ours)"
    if count and _body_size(body) > 32 * MB:
        # the 413 request_too_large's message (Anthropic "Errors")
        return "Request exceeds the maximum allowed number of bytes."
    return None


# ------------------------------------------------------------------ OpenAI


def _openai_image(at: str, url: Any) -> tuple[str | None, int]:
    """(problem, base64 size) of an image URL part."""
    if not isinstance(url, str):
        return f"Missing required parameter: '{at}'.", 0
    if not url.startswith("data:"):
        return None, 0
    parsed = _data_url(url)
    if parsed is None or _decoded(parsed[1]) is None:
        # github.com/mkht/PSOpenAI/issues/43 quotes the form of this 400
        return f"Invalid '{at}'. {_IMAGE_URL_HELP} an invalid base64-encoded value.", 0
    if parsed[0] not in _IMAGES:
        return f"Invalid '{at}'. {_IMAGE_URL_HELP} unsupported MIME type '{parsed[0]}'.", 0
    if len(parsed[1]) > 20 * MB:
        return f"Invalid '{at}': the image is over 20 MB (ours)", 0
    return None, len(parsed[1])


def _openai_file(
    at: str, part: dict[str, Any], *, responses: bool
) -> tuple[str | None, int, int]:
    """(problem, base64 size, PDF pages) of a file part (``file`` in Chat
    Completions, ``input_file`` in Responses)."""
    data_at = f"{at}.file_data"
    if responses:
        if isinstance(part.get("file_url"), str) or isinstance(part.get("file_id"), str):
            return None, 0, 0
    elif isinstance(part.get("file_id"), str):
        return None, 0, 0
    file_data = part.get("file_data")
    if not isinstance(file_data, str):
        missing = f"{at}.file_data" if responses else f"{at}.file_id"
        return f"Missing required parameter: '{missing}'.", 0, 0
    if not isinstance(part.get("filename"), str):
        # Chat: github.com/openai/openai-agents-python/pull/1513 quotes this 400
        # (the API names file_id); Responses: github.com/laravel/ai/pull/324
        missing = f"{at}.filename" if responses else f"{at}.file_id"
        return f"Missing required parameter: '{missing}'.", 0, 0
    parsed = _data_url(file_data)
    raw = None if parsed is None else _decoded(parsed[1])
    if parsed is None or raw is None:
        if responses:  # github.com/strands-agents/harness-sdk/pull/3576 quotes this 400
            return f"Invalid '{data_at}'.", 0, 0
        # github.com/vercel/ai/issues/7266 quotes this 400
        return f"Invalid file data: '{data_at}'. {_PDF_URL_HELP} an invalid base64-encoded value.", 0, 0
    kind = parsed[0]
    takes = kind in _OPENAI_FILES or kind.startswith("text/") if responses else kind == "application/pdf"
    if not takes:
        return f"Invalid file data: '{data_at}'. {_PDF_URL_HELP} unsupported MIME type '{kind}'.", 0, 0
    return None, len(parsed[1]), _pages(raw) if kind == "application/pdf" else 0


def _openai_limits(images: int, image_bytes: int, file_bytes: int, pages: int, body: Any) -> str | None:
    """The per-request limits of both OpenAI APIs."""
    if images > 500:  # Images and vision: up to 500 images a request
        return f"Too many images in one request: {images} > 500 (ours)"
    if pages > 100 or file_bytes > 32 * MB:  # File inputs: 100 pages, 32 MB a request
        return f"The files of this request are over 100 pages or 32 MB ({pages} pages, {file_bytes} bytes) (ours)"
    if (image_bytes or file_bytes) and _body_size(body) > 50 * MB:
        return "The request is over the 50 MB total payload size (ours)"
    return None


def openai_chat(body: Any) -> str | None:
    msgs = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(msgs, list):
        return None
    images = image_bytes = file_bytes = pages = 0
    for i, m in enumerate(msgs):
        content = m.get("content") if isinstance(m, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            kind = part.get("type") if isinstance(part, dict) else None
            at = f"messages[{i}].content[{j}]"
            if kind == "image_url":
                images += 1
                inner = part.get("image_url")
                url = inner.get("url") if isinstance(inner, dict) else None
                problem, size = _openai_image(f"{at}.image_url.url", url)
                image_bytes += size
            elif kind == "file":
                inner = part.get("file")
                if not isinstance(inner, dict):
                    return f"Missing required parameter: '{at}.file'."
                problem, size, n = _openai_file(f"{at}.file", inner, responses=False)
                file_bytes += size
                pages += n
            else:
                continue
            if problem is not None:
                return problem
    return _openai_limits(images, image_bytes, file_bytes, pages, body)


def openai_responses(body: Any) -> str | None:
    items = body.get("input") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return None
    images = image_bytes = file_bytes = pages = 0
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("type", "message") != "message":
            continue
        content = item.get("content")
        for j, part in enumerate(content if isinstance(content, list) else []):
            kind = part.get("type") if isinstance(part, dict) else None
            at = f"input[{i}].content[{j}]"
            if kind == "input_image":
                images += 1
                if isinstance(part.get("file_id"), str):
                    continue
                problem, size = _openai_image(f"{at}.image_url", part.get("image_url"))
                image_bytes += size
            elif kind == "input_file":
                problem, size, n = _openai_file(at, part, responses=True)
                file_bytes += size
                pages += n
            else:
                continue
            if problem is not None:
                return problem
    return _openai_limits(images, image_bytes, file_bytes, pages, body)


# ------------------------------------------------------------------ Gemini


def google(body: Any) -> str | None:
    contents = body.get("contents") if isinstance(body, dict) else None
    if not isinstance(contents, list):
        return None
    images = pages = 0
    inline = False
    for i, c in enumerate(contents):
        parts = c.get("parts") if isinstance(c, dict) else None
        for k, part in enumerate(parts if isinstance(parts, list) else []):
            if not isinstance(part, dict):
                continue
            at = f"contents[{i}].parts[{k}]"
            blob = part.get("inlineData")
            if blob is not None:
                inline = True
                kind = blob.get("mimeType") if isinstance(blob, dict) else None
                if not isinstance(kind, str) or (kind.startswith("image/") and kind not in _GEMINI_IMAGES):
                    return f"{at}.inlineData.mimeType: Unsupported MIME type: {kind}"
                raw = _decoded(blob.get("data"))
                if raw is None:
                    return f"Invalid value at '{at}.inline_data.data' (TYPE_BYTES), Base64 decoding failed"
                images += kind.startswith("image/")
                pages += _pages(raw) if kind == "application/pdf" else 0
            ref = part.get("fileData")
            if ref is not None:
                inline = True
                if not isinstance(ref, dict) or not isinstance(ref.get("fileUri"), str):
                    return f"Invalid value at '{at}.file_data.file_uri': a string is required (ours)"
    if images > 3000:  # Image understanding: 3,000 images a request (Vertex's figure)
        return f"Too many images in one request: {images} > 3000 (ours)"
    if pages > 1000:  # Document understanding: "up to 1,000 pages"
        return f"The PDFs of this request are over 1000 pages ({pages}) (ours)"
    if inline and _body_size(body) > 20 * MB:
        # the form: github.com/google-gemini/deprecated-generative-ai-android/issues/26
        return f"Request payload size exceeds the limit: {20 * MB} bytes."
    return None
