"""Documents a user attached (issue 35: PDFs and text files) on every wire API.

Each encoder sends a PDF in its API's own document form: Anthropic a
``document`` block (base64, or url, source), Chat Completions a ``file`` part
with a filename and a data URL, Responses an ``input_file`` (file_data or
file_url), Gemini ``inlineData``/``fileData``. A text file goes as text with
its name (Anthropic: a text-source document). What an API cannot take (a
binary that is not a PDF; a URL on Chat Completions) becomes a note line, so a
history that holds it stays sendable. The fake provider (tests/fakes/rules.py)
answers 400 where the real APIs do, so a request it accepts is one they accept.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import msgspec
import pytest

from agents.compaction import transcript
from providers.catalog import default_catalog
from providers.registry import codec_for, make_provider
from providers.settings import settings_for
from providers.tokens import IMAGE_TOKENS, PDF_PAGE_TOKENS, estimate_message
from providers.types import DocumentBlock, ImageBlock, Message, Request, TextBlock
from tests.fakes import rules
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider

ENV = {"ANTHROPIC_API_KEY": "k-a", "OPENAI_API_KEY": "k-o", "GEMINI_API_KEY": "k-g"}


def pdf_bytes(pages: int = 1) -> bytes:
    """A small PDF with ``pages`` page objects (enough for the page counts)."""
    objs = "".join(f"{n + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj\n" for n in range(pages))
    return f"%PDF-1.4\n2 0 obj << /Type /Pages /Count {pages} >> endobj\n{objs}%%EOF\n".encode()


PDF = base64.b64encode(pdf_bytes(2)).decode()
PDF_DOC = DocumentBlock(media_type="application/pdf", data=PDF, name="report.pdf")
TEXT_DOC = DocumentBlock(media_type="text/markdown", text="# Notes\nship it", name="notes.md")
URL_DOC = DocumentBlock(media_type="application/pdf", url="https://example.com/a.pdf", name="a.pdf")
# (provider, api, model, base path on the fake)
APIS = [
    ("anthropic", "messages", "claude-sonnet-4-5", ""),
    ("openai", "chat", "gpt-4o", "/v1"),
    ("openai", "responses", "gpt-5", "/v1"),
    ("google", "generate_content", "gemini-2.5-flash", "/v1beta"),
]
RULES = {
    "messages": rules.anthropic,
    "chat": rules.openai_chat,
    "responses": rules.openai_responses,
    "generate_content": rules.google,
}


def prompt(model: str, *docs: DocumentBlock) -> Request:
    return Request(
        model=model,
        messages=[Message(role="user", content=[TextBlock(text="read these"), *docs])],
        provider_data={"cache": False},
    )


def body(api: str, *docs: DocumentBlock) -> dict[str, Any]:
    provider, _, model, _ = next(a for a in APIS if a[1] == api)
    codec = codec_for(settings_for(provider, env=ENV, api=api))  # type: ignore[arg-type]
    out: dict[str, Any] = json.loads(codec.encode(prompt(model, *docs), stream=True).body)
    return out


def parts(api: str, *docs: DocumentBlock) -> list[Any]:
    """The user message's parts after its text."""
    out = body(api, *docs)
    if api == "messages":
        return list(out["messages"][-1]["content"][1:])
    if api == "chat":
        return list(out["messages"][-1]["content"][1:])
    if api == "responses":
        return list(out["input"][-1]["content"][1:])
    return list(out["contents"][-1]["parts"][1:])


# ------------------------------------------------------------ the documented shapes


def test_anthropic_sends_document_blocks():
    assert parts("messages", PDF_DOC, TEXT_DOC, URL_DOC) == [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            "title": "report.pdf",
        },
        # a text source is text/plain whatever the file's own text type
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "# Notes\nship it"},
            "title": "notes.md",
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}, "title": "a.pdf"},
    ]


def test_chat_completions_sends_a_file_part_and_inlines_text():
    got = parts("chat", PDF_DOC, TEXT_DOC)
    assert got == [
        {"type": "file", "file": {"filename": "report.pdf", "file_data": "data:application/pdf;base64," + PDF}},
        {"type": "text", "text": '<file name="notes.md" type="text/markdown">\n# Notes\nship it\n</file>'},
    ]


def test_an_openai_compatible_service_gets_the_same_file_part():
    codec = codec_for(settings_for("openrouter", env={"OPENROUTER_API_KEY": "k"}))
    out = json.loads(codec.encode(prompt("anthropic/claude-sonnet-4.5", PDF_DOC), stream=True).body)
    assert out["messages"][-1]["content"][1] == {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": "data:application/pdf;base64," + PDF},
    }


def test_chat_completions_names_a_document_url_in_a_note():
    [note] = parts("chat", URL_DOC)
    assert note["type"] == "text"
    assert "a.pdf" in note["text"] and "https://example.com/a.pdf" in note["text"]
    assert "cannot fetch" in note["text"]


def test_responses_sends_input_file_parts():
    assert parts("responses", PDF_DOC, TEXT_DOC, URL_DOC) == [
        {"type": "input_file", "filename": "report.pdf", "file_data": "data:application/pdf;base64," + PDF},
        {"type": "input_text", "text": '<file name="notes.md" type="text/markdown">\n# Notes\nship it\n</file>'},
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
    ]


def test_gemini_sends_inline_data_and_file_data():
    assert parts("generate_content", PDF_DOC, TEXT_DOC, URL_DOC) == [
        {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
        {"text": '<file name="notes.md" type="text/markdown">\n# Notes\nship it\n</file>'},
        {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/a.pdf"}},
    ]


def test_a_pdf_without_a_name_still_has_the_filename_openai_requires():
    bare = DocumentBlock(media_type="application/pdf", data=PDF)
    assert parts("chat", bare)[0]["file"]["filename"] == "document.pdf"
    assert parts("responses", bare)[0]["filename"] == "document.pdf"
    assert "title" not in parts("messages", bare)[0]


def test_a_hostile_name_cannot_break_out_of_the_file_wrapper():
    doc = DocumentBlock(media_type="text/plain", text="x", name='a"><evil>\n')
    [part] = parts("generate_content", doc)
    head = part["text"].split("\n", 1)[0]
    assert head == '<file name="a&quot;>&lt;evil> ">'


@pytest.mark.parametrize("api", list(RULES))
def test_a_binary_that_is_not_a_pdf_is_a_note_everywhere(api: str):
    docx = DocumentBlock(media_type="application/zip", data=base64.b64encode(b"PK\x03\x04").decode(), name="x.zip")
    [part] = parts(api, docx)
    text = part.get("text")
    assert text is not None and "x.zip" in text and "PDF documents only" in text
    assert RULES[api](body(api, docx)) is None


def test_an_empty_text_file_is_still_a_non_empty_block_for_anthropic():
    [part] = parts("messages", DocumentBlock(media_type="text/plain", text="", name="empty.txt"))
    assert part == {"type": "text", "text": '<file name="empty.txt">\n\n</file>'}


@pytest.mark.parametrize("api", list(RULES))
def test_every_encoded_document_passes_the_fake_rules(api: str):
    out = body(api, PDF_DOC, TEXT_DOC, URL_DOC)
    assert RULES[api](out) is None


# ------------------------------------------------------------ through the fake over loopback


@pytest.mark.parametrize(("provider", "api", "model", "path"), APIS)
async def test_the_fake_provider_accepts_a_prompt_with_documents(
    fake_provider: FakeProvider, provider: str, api: str, model: str, path: str
):
    s = settings_for(provider, env=ENV, api=api, base_url=fake_provider.base_url + path)  # type: ignore[arg-type]
    client = make_provider(s)
    try:
        fake_provider.push(Reply(text="two pages"))
        response = await client.complete(prompt(model, PDF_DOC, TEXT_DOC))
    finally:
        await client.aclose()
    assert response.blocks == [TextBlock(text="two pages")]
    [sent] = fake_provider.requests
    seen = json.dumps(sent.json)
    assert PDF in seen and "ship it" in seen


# ------------------------------------------------------------ tokens, compaction, catalog


def test_a_pdf_is_priced_per_page_not_per_base64_character():
    alone = estimate_message(Message(role="user", content=[TextBlock(text="read these")]))
    with_pdf = estimate_message(Message(role="user", content=[TextBlock(text="read these"), PDF_DOC]))
    extra = with_pdf - alone
    assert 2 * PDF_PAGE_TOKENS <= extra < 2 * PDF_PAGE_TOKENS + 40  # two pages + the block's JSON
    big = DocumentBlock(media_type="application/pdf", data=base64.b64encode(pdf_bytes(40)).decode())
    assert estimate_message(Message(role="user", content=[big])) >= 40 * PDF_PAGE_TOKENS


def test_a_pdf_whose_pages_cannot_be_seen_is_priced_by_its_size():
    # no page objects in sight (a compressed object stream): 100 KB a page
    blob = base64.b64encode(b"%PDF-1.7\n" + bytes(450_000)).decode()
    doc = DocumentBlock(media_type="application/pdf", data=blob)
    got = estimate_message(Message(role="user", content=[doc]))
    assert 5 * PDF_PAGE_TOKENS <= got < 5 * PDF_PAGE_TOKENS + 40
    assert got < len(blob) // 4  # far below its base64 length


def test_a_text_file_counts_as_its_text_and_a_zip_as_a_note():
    text = DocumentBlock(media_type="text/plain", text="x" * 4000)
    assert 1000 <= estimate_message(Message(role="user", content=[text])) < 1100
    zipped = DocumentBlock(media_type="application/zip", data="UEsDBA==" * 10_000)
    assert estimate_message(Message(role="user", content=[zipped])) < 50
    image = ImageBlock(media_type="image/png", data="AAAA")
    assert estimate_message(Message(role="user", content=[image])) >= IMAGE_TOKENS


def test_compaction_transcript_shows_text_files_and_names_pdfs():
    got = transcript([Message(role="user", content=[TextBlock(text="read"), PDF_DOC, TEXT_DOC, URL_DOC])])
    assert "[attached application/pdf report.pdf]" in got
    assert "[attached text/markdown notes.md]\n# Notes\nship it" in got
    assert "[attached application/pdf a.pdf]" in got  # by its name, not its URL
    assert PDF not in got
    long = DocumentBlock(media_type="text/plain", text="y" * 50_000, name="big.txt")
    assert "characters cut" in transcript([Message(role="user", content=[long])])


def test_the_catalog_says_which_models_take_pdfs():
    catalog = default_catalog()

    def takes(provider: str, model: str) -> bool:
        entry, _ = catalog.entry_or_default(provider, model)
        return entry.capabilities.documents

    assert takes("anthropic", "claude-sonnet-4-5") and takes("anthropic", "claude-3-7-sonnet-20250219")
    assert takes("anthropic", "claude-some-future-model")  # the default for unknown Claude models
    assert takes("openai", "gpt-4o") and takes("openai", "gpt-5") and takes("openai", "o4-mini")
    assert not takes("openai", "o3-mini")  # no vision: OpenAI reads PDFs with vision models only
    assert takes("google", "gemini-2.5-flash") and takes("google", "gemini-3-flash-preview")
    assert not takes("deepseek", "deepseek-chat")


def test_a_document_block_round_trips_as_json():
    for doc in (PDF_DOC, TEXT_DOC, URL_DOC):
        raw = msgspec.json.encode(Message(role="user", content=[doc]))
        assert msgspec.json.decode(raw, type=Message).content == [doc]
