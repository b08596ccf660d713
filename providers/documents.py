"""What every codec does alike with a DocumentBlock (a file the user attached
that is not a picture): a text file inlined with its name, a note for a file
the API cannot take, and a rough count of a PDF's pages.

A text document goes to every API as text wrapped in ``<file name="...">``
(the model sees which file the lines came from; OpenAI's guide says to send a
file's text as a text part where no file part takes it). A PDF goes in each
API's own document form (the codecs). Anything else (a binary file that is
not a PDF, a URL the API cannot fetch) becomes a note line, so history that
holds it can still be sent to any model.
"""

from __future__ import annotations

import binascii
import re

from .types import DocumentBlock

PDF = "application/pdf"
# a page object's dictionary (not the /Pages tree nodes)
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")


def _attr(value: str) -> str:
    """``value`` safe inside a double-quoted attribute."""
    for bad, good in (("&", "&amp;"), ('"', "&quot;"), ("<", "&lt;"), ("\n", " "), ("\r", " ")):
        value = value.replace(bad, good)
    return value


def inline_text(block: DocumentBlock) -> str:
    """A text document as the text part that carries it."""
    head = "<file"
    if block.name:
        head += f' name="{_attr(block.name)}"'
    if block.media_type and block.media_type != "text/plain":
        head += f' type="{_attr(block.media_type)}"'
    return f"{head}>\n{block.text or ''}\n</file>"


def label(block: DocumentBlock) -> str:
    """The document as a note names it: its name, or its type."""
    return block.name or block.media_type or "document"


def note(block: DocumentBlock, why: str) -> str:
    """The line sent in place of a document the API cannot take."""
    where = f" at {block.url}" if block.url and block.data is None else ""
    return f"[attached document {label(block)} ({block.media_type}){where}: {why}]"


def is_pdf(block: DocumentBlock) -> bool:
    return block.media_type.split(";", 1)[0].strip().lower() == PDF


def pdf_pages(data: str) -> int:
    """The page objects in a base64 PDF (0 when the data is not base64).

    Rough by design: it reads no cross-reference table, and pages kept in a
    compressed object stream (PDF 1.5+) are not seen. Good enough to refuse
    a PDF plainly over an API's page limit before it is sent."""
    try:
        raw = binascii.a2b_base64(data)
    except (binascii.Error, ValueError):
        return 0
    return len(_PAGE.findall(raw))


def decoded_size(data: str) -> int:
    """Bytes that base64 ``data`` decodes to (no decoding done)."""
    return len(data) // 4 * 3 - (len(data) - len(data.rstrip("="))) if data else 0
