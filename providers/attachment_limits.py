"""What each wire API takes as attachments (pictures and documents), as a pure
table, and ``refusal``: the first attachment of a prompt the API or the model
cannot take. The daemon asks it before a prompt is stored or sent: a file the
API refuses would make it answer 400 to this request and to every later one,
since the history is replayed.

Sizes are counted as sent: base64 characters for a picture or a PDF, the
JSON-escaped UTF-8 bytes of a text file (which every API gets as text: see
providers/documents.py). A request's own limit covers the whole body:
``refusal`` keeps ``REQUEST_HEADROOM`` of it for the conversation's text.
The history sent with the prompt is not counted here (the caller may pass
the earlier attachments first to count them too).

Sources, checked 2026-11 (the figures are the documented ones; where two
sources disagree the smaller is kept):

* Anthropic Messages: docs.anthropic.com, Vision ("5MB per image", at most
  100 images a request) and PDF support ("Maximum request size 32MB",
  "Maximum pages per request 100"); the API's 400 "A maximum of 100 PDF
  pages may be provided." (github.com/warpdotdev/warp/issues/8114). Images:
  JPEG, PNG, GIF, WebP.
* OpenAI Chat Completions and Responses: developers.openai.com, Images and
  vision ("Up to 50 MB total payload size per request", 500 images, PNG,
  JPEG, WEBP, non-animated GIF; 20 MB an image) and File inputs (PDF only on
  Chat Completions, no file by URL there; "up to 100 pages and 32MB of total
  content in a single request"; PDFs need a vision model).
* Gemini generateContent: ai.google.dev, Image understanding (PNG, JPEG,
  WEBP, HEIC, HEIF; up to 3,000 images counted here) and Document
  understanding (PDF, up to 1,000 pages; inline data while "the total
  request size" stays under 20 MB: the API's 400 "Request payload size
  exceeds the limit: 20971520 bytes."). Google now documents larger inline
  requests; the 20 MB every model takes is kept.
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from dataclasses import dataclass, replace

import msgspec

from .catalog import WireApi
from .documents import PDF, pdf_pages
from .types import DocumentBlock, ImageBlock, valid_base64

MB = 1024 * 1024
# what refusal leaves of a request's limit for the rest of it (text, tools, history)
REQUEST_HEADROOM = 1 * MB

_NAMES: dict[str, str] = {
    "messages": "Anthropic Messages",
    "chat": "Chat Completions",
    "responses": "OpenAI Responses",
    "generate_content": "Gemini generateContent",
}


@dataclass(frozen=True)
class Limits:
    """One wire API's attachment limits (sizes as sent: see the module doc)."""

    image_types: frozenset[str]
    document_types: frozenset[str]  # binary documents the API takes as documents
    max_image_bytes: int  # one picture
    max_document_bytes: int  # one PDF
    max_documents_bytes: int  # every PDF of one request together
    max_request_bytes: int  # the whole request body
    max_count: int  # pictures and documents in one request
    max_pages: int | None  # PDF pages in one request
    document_urls: bool  # a PDF given by URL


_FOUR = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_OPENAI = Limits(
    image_types=_FOUR,
    document_types=frozenset({PDF}),
    max_image_bytes=20 * MB,
    max_document_bytes=32 * MB,
    max_documents_bytes=32 * MB,
    max_request_bytes=50 * MB,
    max_count=500,
    max_pages=100,
    document_urls=False,
)

LIMITS: dict[str, Limits] = {
    "messages": Limits(
        image_types=_FOUR,
        document_types=frozenset({PDF}),
        max_image_bytes=5 * MB,
        max_document_bytes=32 * MB,
        max_documents_bytes=32 * MB,
        max_request_bytes=32 * MB,
        max_count=100,
        max_pages=100,
        document_urls=True,
    ),
    "chat": _OPENAI,
    "responses": replace(_OPENAI, document_urls=True),
    "generate_content": Limits(
        image_types=frozenset(
            {"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"}
        ),
        document_types=frozenset({PDF}),
        max_image_bytes=20 * MB,
        max_document_bytes=20 * MB,
        max_documents_bytes=20 * MB,
        max_request_bytes=20 * MB,
        max_count=3000,
        max_pages=1000,
        document_urls=True,
    ),
}


def limits_for(api: WireApi | str) -> Limits | None:
    """The table's row for ``api`` (None for an API it does not know)."""
    return LIMITS.get(api)


def _shown(media_type: str) -> str:
    """A media type as a refusal quotes it: bounded (it came from a caller)."""
    return repr(media_type[:60] + ("..." if len(media_type) > 60 else ""))


def _mb(n: int) -> str:
    return f"{n / MB:.1f} MB" if n % MB else f"{n // MB} MB"


def _text_size(text: str | None) -> int:
    """Bytes of ``text`` inside a JSON body (escapes counted: a newline is two)."""
    if not text:
        return 0
    try:
        return len(msgspec.json.encode(text)) - 2
    except UnicodeEncodeError:  # a lone surrogate: the sender replaces it
        return len(text.encode("utf-8", "replace")) * 2


def _is_pdf(data: str) -> bool:
    """The decoded bytes open with a PDF header (readers accept it within 1024 bytes)."""
    try:
        head = binascii.a2b_base64(data[:1368])  # 1368 base64 characters: 1026 bytes
    except (binascii.Error, ValueError):
        return False
    return b"%PDF-" in head[:1024]


def _web(url: str) -> bool:
    return url.startswith(("https://", "http://")) and url.isprintable() and " " not in url


Refusal = tuple[int, str, str]


def refusal(
    api: WireApi | str,
    blocks: Sequence[ImageBlock | DocumentBlock],
    *,
    documents: bool,
    vision: bool,
) -> Refusal | None:
    """(index, field, why) of the first of ``blocks`` that ``api`` or the
    model (``documents``: it takes PDFs; ``vision``: pictures) cannot take,
    or None when all can go. ``field`` is the block's field at fault
    (``media_type``, ``data``, ``url``); ``why`` names the limit and the API.
    An API this table does not know: None."""
    limits = LIMITS.get(api)
    if limits is None:
        return None
    name = _NAMES[api]
    total = docs_total = pages = 0
    room = limits.max_request_bytes - REQUEST_HEADROOM
    for i, block in enumerate(blocks):
        if i + 1 > limits.max_count:
            return i, "data", f"the {name} API takes at most {limits.max_count} files a request"
        if isinstance(block, ImageBlock):
            found = _image(block, limits, name, vision=vision)
            size = len(block.data or "")
        else:
            found = _document(block, limits, name, documents=documents)
            size = len(block.data or "") + _text_size(block.text)
        if found is not None:
            return i, found[0], found[1]
        why = None
        if isinstance(block, DocumentBlock) and block.data is not None:
            docs_total += size
            pages += pdf_pages(block.data) if limits.max_pages is not None else 0
            if docs_total > limits.max_documents_bytes:
                most = _mb(limits.max_documents_bytes)
                why = f"the PDFs of one request are at most {most} as base64 together"
                why += f" on the {name} API ({_mb(docs_total)} with this one)"
            elif limits.max_pages is not None and pages > limits.max_pages:
                why = f"the {name} API takes at most {limits.max_pages} PDF pages a request"
                why += f" ({pages} with this one)"
        total += size
        if why is None and total > room:
            why = f"the {name} API takes requests of at most {_mb(limits.max_request_bytes)};"
            why += f" the files come to {_mb(total)} with this one (as sent, base64)"
            why += f" and {_mb(REQUEST_HEADROOM)} is kept for the conversation"
        if why is not None:
            return i, "data", why
    return None


def _image(block: ImageBlock, limits: Limits, name: str, *, vision: bool) -> tuple[str, str] | None:
    if not vision:
        return "data", "the model takes no pictures"
    if block.url is not None and not _web(block.url):
        return "url", "not an http(s) URL"
    if block.media_type not in limits.image_types:
        taken = ", ".join(sorted(limits.image_types))
        return (
            "media_type",
            f"{_shown(block.media_type)} is not a picture the {name} API takes ({taken})",
        )
    if block.data is not None:
        if not valid_base64(block.data):
            return "data", "not valid base64"
        if len(block.data) > limits.max_image_bytes:
            return "data", (
                f"a picture is at most {_mb(limits.max_image_bytes)} as base64 on the {name} "
                f"API (this one is {_mb(len(block.data))})"
            )
        return None
    if block.url is not None:
        return None
    return "data", "the picture has no data and no URL"


def _document(
    block: DocumentBlock, limits: Limits, name: str, *, documents: bool
) -> tuple[str, str] | None:
    if block.text is not None:
        return None  # a text file goes as text, on every API
    if block.data is None and block.url is None:
        return "data", "the document has no data, text or URL"
    if not documents:
        return "data", "the model takes no PDF documents"
    if block.url is not None and not _web(block.url):
        return "url", "not an http(s) URL"
    if block.media_type not in limits.document_types:
        return "media_type", (
            f"{_shown(block.media_type)} is not a document the {name} API takes (PDF; text files "
            "go as text)"
        )
    if block.data is None:
        assert block.url is not None
        if not limits.document_urls:
            return "url", f"the {name} API takes no document by URL"
        return None
    if not valid_base64(block.data):
        return "data", "not valid base64"
    if not _is_pdf(block.data):
        return "data", "not a PDF (it has no %PDF- header)"
    if len(block.data) > limits.max_document_bytes:
        return "data", (
            f"a PDF is at most {_mb(limits.max_document_bytes)} as base64 on the {name} API "
            f"(this one is {_mb(len(block.data))})"
        )
    return None


__all__ = ["LIMITS", "MB", "REQUEST_HEADROOM", "Limits", "limits_for", "refusal"]
