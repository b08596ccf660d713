"""A rough count of a request's input tokens, with no tokenizer and no I/O.

Every provider tokenizes differently and none ships its tokenizer with the
API, so this is deliberately simple: about ``CHARS_PER_TOKEN`` bytes of the
JSON a part would be sent as make one token, plus a few tokens of framing per
message and per tool. It is meant to be wrong in a known direction by a
roughly constant factor: the agent calibrates it with the input tokens the
provider reports for each call (agents/meter.py), and asks the provider's own
count (Anthropic count_tokens, Gemini countTokens) when close to the window.

It runs before every model call, so each message costs one JSON encode.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from .documents import decoded_size, is_pdf, pdf_pages
from .types import DocumentBlock, ImageBlock, Message, Request, TextBlock, Tool, ToolResultBlock

CHARS_PER_TOKEN = 4
# role, separators and the block framing each provider wraps a message in
MESSAGE_OVERHEAD = 4
# name, the schema's framing, the tool-use preamble some providers add per tool
TOOL_OVERHEAD = 8
# An image is priced by its pixels, not by its base64 length (which would
# count a 1 MB photo as 330,000 tokens). Anthropic's largest images cost about
# 1,600 tokens, OpenAI's high detail ~800-1,100, Gemini's 258: the largest.
IMAGE_TOKENS = 1600
# A PDF is priced per page: each page goes as its text and a picture of it
# (Anthropic 1,500-3,000 tokens a page, OpenAI alike; Gemini 258): near the
# top of that range. Pages are counted in the file; a PDF whose pages cannot
# be seen (compressed object streams) or one given by URL is guessed from its
# size, PDF_BYTES_PER_PAGE a page, or as URL_PDF_PAGES.
PDF_PAGE_TOKENS = 2500
PDF_BYTES_PER_PAGE = 100_000
URL_PDF_PAGES = 10

_encode = msgspec.json.encode


def _json_size(value: Any) -> int:
    """Bytes of ``value`` as JSON."""
    try:
        return len(_encode(value))
    except UnicodeEncodeError:
        # a lone surrogate (from a JSON "\ud800" escape) cannot be UTF-8: it
        # counts as the one "?" byte the "replace" handler puts in its place
        text = json.dumps(msgspec.to_builtins(value), ensure_ascii=False, separators=(",", ":"))
        return len(text.encode("utf-8", "replace"))


def _tokens(size: int) -> int:
    return -(-size // CHARS_PER_TOKEN)  # ceiling: a non-empty part is never free


def estimate_text(text: str) -> int:
    """Tokens of a plain text (UTF-8 bytes / CHARS_PER_TOKEN, rounded up)."""
    return _tokens(len(text) if text.isascii() else len(text.encode("utf-8", "replace")))


def estimate_message(msg: Message) -> int:
    """Tokens of one message: its content (and opaque provider state: thinking
    signatures, encrypted reasoning) as JSON, each image a fixed
    ``IMAGE_TOKENS``, each PDF page ``PDF_PAGE_TOKENS`` (a text document
    counts as its text), plus ``MESSAGE_OVERHEAD``."""
    if msg.provider_data:
        size = _json_size((msg.content, msg.provider_data))
    else:
        size = _json_size(msg.content)
    images = 0
    pages = 0
    for block in msg.content:
        if type(block) is DocumentBlock and block.text is None:
            pages += _pdf_pages(block)
            if block.data is not None:
                size -= len(block.data)
        elif type(block) is ImageBlock:
            images += 1
            if block.data is not None:
                # base64 is ASCII and msgspec escapes none of its characters
                size -= len(block.data)
        elif type(block) is ToolResultBlock and block.images:
            for image in block.images:  # a tool's screenshot costs what a prompt's does
                images += 1
                if image.data is not None:
                    size -= len(image.data)
    return (
        _tokens(max(size, 0)) + images * IMAGE_TOKENS + pages * PDF_PAGE_TOKENS + MESSAGE_OVERHEAD
    )


def _pdf_pages(block: DocumentBlock) -> int:
    """The pages a PDF is priced as (another binary file goes as a note line)."""
    if not is_pdf(block):
        return 0
    if block.data is None:
        return URL_PDF_PAGES if block.url is not None else 0
    return pdf_pages(block.data) or max(1, -(-decoded_size(block.data) // PDF_BYTES_PER_PAGE))


def estimate_messages(messages: Iterable[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_system(blocks: Sequence[TextBlock]) -> int:
    """Tokens of the system prompt blocks (none: 0)."""
    if not blocks:
        return 0
    return sum(estimate_text(b.text) for b in blocks) + MESSAGE_OVERHEAD


def estimate_tools(tools: Sequence[Tool]) -> int:
    """Tokens of the tool definitions (names, descriptions, JSON schemas)."""
    if not tools:
        return 0
    return _tokens(_json_size(tools)) + TOOL_OVERHEAD * len(tools)


def estimate_request(req: Request) -> int:
    """Tokens of a whole request's input: system, messages and tools."""
    return estimate_system(req.system) + estimate_messages(req.messages) + estimate_tools(req.tools)


__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "PDF_PAGE_TOKENS",
    "TOOL_OVERHEAD",
    "estimate_message",
    "estimate_messages",
    "estimate_request",
    "estimate_system",
    "estimate_text",
    "estimate_tools",
]
