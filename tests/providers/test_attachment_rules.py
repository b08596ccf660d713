"""The fake provider is as strict as the real APIs about pictures and documents
(tests/fakes/attachment_rules.py, called by tests/fakes/rules.py): each rule
answers the real API's 400 to a body our codecs made and a test then broke.
A body the codecs make from good files passes (tests/providers/
test_documents.py, test_attachment_limits.py)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from providers.registry import codec_for, make_provider
from providers.settings import settings_for
from providers.types import DocumentBlock, ImageBlock, Message, ProviderFailure, Request, TextBlock
from tests.fakes import attachment_rules, rules
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider

ENV = {"ANTHROPIC_API_KEY": "k-a", "OPENAI_API_KEY": "k-o", "GEMINI_API_KEY": "k-g"}
MODELS = {
    "messages": ("anthropic", "claude-sonnet-4-5"),
    "chat": ("openai", "gpt-4o"),
    "responses": ("openai", "gpt-5"),
    "generate_content": ("google", "gemini-2.5-flash"),
}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
MB = 1024 * 1024


def pdf(pages: int = 1) -> str:
    objs = b"".join(b"<< /Type /Page >>\n" for _ in range(pages))
    return base64.b64encode(b"%PDF-1.4\n" + objs).decode()


PDF_DOC = DocumentBlock(media_type="application/pdf", data=pdf(2), name="r.pdf")
TEXT_DOC = DocumentBlock(media_type="text/plain", text="hello", name="t.txt")
IMAGE = ImageBlock(media_type="image/png", data=PNG)


def body(api: str, *blocks: ImageBlock | DocumentBlock) -> dict[str, Any]:
    provider, model = MODELS[api]
    codec = codec_for(settings_for(provider, env=ENV, api=api))  # type: ignore[arg-type]
    request = Request(
        model=model,
        messages=[Message(role="user", content=[TextBlock(text="look"), *blocks])],
        provider_data={"cache": False},
    )
    out: dict[str, Any] = json.loads(codec.encode(request, stream=True).body)
    return out


def part(api: str, out: dict[str, Any], k: int = 1) -> dict[str, Any]:
    """The k-th part of the (only) user message."""
    if api == "messages":
        got: dict[str, Any] = out["messages"][0]["content"][k]
    elif api == "chat":
        got = out["messages"][0]["content"][k]
    elif api == "responses":
        got = out["input"][0]["content"][k]
    else:
        got = out["contents"][0]["parts"][k]
    return got


# ------------------------------------------------------------ Anthropic


def test_anthropic_refuses_what_the_messages_api_refuses():
    base = body("messages", IMAGE, PDF_DOC, TEXT_DOC)
    assert rules.anthropic(base) is None

    out = copy.deepcopy(base)
    part("messages", out, 1)["source"]["media_type"] = "image/bmp"
    assert rules.anthropic(out) == (
        "messages.0.content.1.image.source.base64.media_type: Input should be 'image/jpeg', "
        "'image/png', 'image/gif' or 'image/webp'"
    )
    out = copy.deepcopy(base)
    part("messages", out, 1)["source"]["data"] = "A" * (5 * MB + 4)
    assert rules.anthropic(out) == (
        "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: "
        f"{5 * MB + 4} bytes > {5 * MB} bytes"
    )
    out = copy.deepcopy(base)
    part("messages", out, 2)["source"]["media_type"] = "text/plain"
    assert rules.anthropic(out) == (
        "messages.0.content.2.document.source.base64.media_type: Input should be 'application/pdf'"
    )
    out = copy.deepcopy(base)
    part("messages", out, 2)["source"]["data"] = base64.b64encode(b"not a pdf").decode()
    assert "messages.0.content.2.pdf.source.base64.data: The PDF specified was not valid." in (
        rules.anthropic(out) or ""
    )
    out = copy.deepcopy(base)
    part("messages", out, 3)["source"]["media_type"] = "text/markdown"
    assert rules.anthropic(out) == (
        "messages.0.content.3.document.source.text.media_type: Input should be 'text/plain'"
    )
    out = copy.deepcopy(base)
    part("messages", out, 3)["source"] = {"type": "docx", "data": "x"}
    assert "does not match any of the expected tags" in (rules.anthropic(out) or "")
    out = copy.deepcopy(base)
    del part("messages", out, 3)["source"]
    assert rules.anthropic(out) == "messages.0.content.3.document.source: Field required"


def test_anthropic_counts_pdf_pages_across_the_request():
    sixty = DocumentBlock(media_type="application/pdf", data=pdf(60))
    assert rules.anthropic(body("messages", sixty)) is None
    # github.com/warpdotdev/warp/issues/8114: the real answer, on the PDF that crosses 100
    assert rules.anthropic(body("messages", sixty, sixty)) == (
        "messages.0.content.2.pdf.source.base64.data: A maximum of 100 PDF pages may be provided."
    )


def test_anthropic_counts_pictures_and_the_request_size():
    assert rules.anthropic(body("messages", *[IMAGE] * 100)) is None
    assert "101 > 100" in (rules.anthropic(body("messages", *[IMAGE] * 101)) or "")
    big = ImageBlock(media_type="image/png", data="A" * (5 * MB - 4))
    assert rules.anthropic(body("messages", *[big] * 6)) is None
    assert rules.anthropic(body("messages", *[big] * 7)) == "Request exceeds the maximum allowed number of bytes."


# ------------------------------------------------------------ OpenAI


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_refuses_a_picture_that_is_not_an_image_data_url(api: str):
    base = body(api, IMAGE)
    assert rules.openai_chat(base) is None if api == "chat" else rules.openai_responses(base) is None
    rule = rules.openai_chat if api == "chat" else rules.openai_responses
    at = "messages[0].content[1].image_url.url" if api == "chat" else "input[0].content[1].image_url"

    def broken(url: str) -> dict[str, Any]:
        out = copy.deepcopy(base)
        p = part(api, out)
        if api == "chat":
            p["image_url"]["url"] = url
        else:
            p["image_url"] = url
        return out

    # github.com/mkht/PSOpenAI/issues/43 quotes this 400 (Responses)
    assert rule(broken("data:application/pdf;base64," + PNG)) == (
        f"Invalid '{at}'. Expected a base64-encoded data URL with an image MIME type "
        "(e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got unsupported MIME type "
        "'application/pdf'."
    )
    assert "invalid base64-encoded value" in (rule(broken("data:image/png;base64,@@@")) or "")
    assert "over 20 MB" in (rule(broken("data:image/png;base64," + "A" * (20 * MB + 4))) or "")
    assert rule(broken("https://example.com/a.png")) is None


def test_chat_completions_refuses_a_file_part_without_filename_or_data_url():
    base = body("chat", PDF_DOC)
    assert rules.openai_chat(base) is None
    out = copy.deepcopy(base)
    del part("chat", out)["file"]["filename"]
    # github.com/openai/openai-agents-python/pull/1513 quotes this 400
    assert rules.openai_chat(out) == "Missing required parameter: 'messages[0].content[1].file.file_id'."
    out = copy.deepcopy(base)
    part("chat", out)["file"]["file_data"] = pdf()  # raw base64, not a data URL
    # github.com/vercel/ai/issues/7266 quotes this 400
    assert rules.openai_chat(out) == (
        "Invalid file data: 'messages[0].content[1].file.file_data'. Expected a base64-encoded "
        "data URL with an application/pdf MIME type (e.g. 'data:application/pdf;base64,"
        "SGVsbG8sIFdvcmxkIQ=='), but got an invalid base64-encoded value."
    )
    out = copy.deepcopy(base)
    part("chat", out)["file"]["file_data"] = "data:text/plain;base64,aGVsbG8="
    assert "unsupported MIME type 'text/plain'" in (rules.openai_chat(out) or "")


def test_responses_refuses_an_input_file_without_filename_or_data_url():
    base = body("responses", PDF_DOC)
    assert rules.openai_responses(base) is None
    out = copy.deepcopy(base)
    del part("responses", out)["filename"]
    assert rules.openai_responses(out) == "Missing required parameter: 'input[0].content[1].filename'."
    out = copy.deepcopy(base)
    part("responses", out)["file_data"] = pdf()
    # github.com/strands-agents/harness-sdk/pull/3576 quotes this 400
    assert rules.openai_responses(out) == "Invalid 'input[0].content[1].file_data'."
    out = copy.deepcopy(base)
    part("responses", out)["file_data"] = "data:image/png;base64," + PNG
    assert "unsupported MIME type 'image/png'" in (rules.openai_responses(out) or "")
    # Responses takes text files and a file by URL
    out = copy.deepcopy(base)
    part("responses", out)["file_data"] = "data:text/csv;base64,YSxi"
    assert rules.openai_responses(out) is None
    assert rules.openai_responses(body("responses", DocumentBlock(media_type="application/pdf", url="https://e.x/a.pdf"))) is None


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_per_request_limits(api: str):
    rule = rules.openai_chat if api == "chat" else rules.openai_responses
    assert rule(body(api, *[IMAGE] * 500)) is None
    assert "501 > 500" in (rule(body(api, *[IMAGE] * 501)) or "")
    fifty = DocumentBlock(media_type="application/pdf", data=pdf(50), name="a.pdf")
    assert rule(body(api, fifty, fifty)) is None
    assert "over 100 pages or 32 MB" in (rule(body(api, fifty, fifty, PDF_DOC)) or "")
    twenty = DocumentBlock(media_type="application/pdf", data=pdf() + "A" * (17 * MB), name="b.pdf")
    assert "over 100 pages or 32 MB" in (rule(body(api, twenty, twenty)) or "")
    picture = ImageBlock(media_type="image/png", data="A" * (18 * MB))
    assert rule(body(api, picture, picture)) is None
    assert "50 MB" in (rule(body(api, picture, picture, picture)) or "")


# ------------------------------------------------------------ Gemini


def test_gemini_refuses_what_generate_content_refuses():
    base = body("generate_content", IMAGE, PDF_DOC)
    assert rules.google(base) is None
    out = copy.deepcopy(base)
    part("generate_content", out, 1)["inlineData"]["mimeType"] = "image/gif"
    assert rules.google(out) == "contents[0].parts[1].inlineData.mimeType: Unsupported MIME type: image/gif"
    out = copy.deepcopy(base)
    part("generate_content", out, 2)["inlineData"]["data"] = "%%%"
    assert rules.google(out) == (
        "Invalid value at 'contents[0].parts[2].inline_data.data' (TYPE_BYTES), Base64 decoding failed"
    )
    out = copy.deepcopy(base)
    part("generate_content", out, 2).pop("inlineData")
    part("generate_content", out, 2)["fileData"] = {"mimeType": "application/pdf"}
    assert "file_uri" in (rules.google(out) or "")


def test_gemini_limits_the_request_to_20_mb_and_pages_to_1000():
    ten = DocumentBlock(media_type="application/pdf", data=pdf() + "A" * (10 * MB))
    assert rules.google(body("generate_content", ten)) is None
    # the real answer's form: github.com/google-gemini/deprecated-generative-ai-android/issues/26
    assert rules.google(body("generate_content", ten, ten)) == (
        "Request payload size exceeds the limit: 20971520 bytes."
    )
    many = DocumentBlock(media_type="application/pdf", data=pdf(600))
    assert rules.google(body("generate_content", many)) is None
    assert "1200" in (rules.google(body("generate_content", many, many)) or "")


def test_the_hostile_shapes_are_answered_not_raised():
    for rule in (attachment_rules.anthropic, attachment_rules.openai_chat,
                 attachment_rules.openai_responses, attachment_rules.google):  # fmt: skip
        for hostile in (None, [], "x", {"messages": "x", "input": 3, "contents": {}},
                        {"messages": [None, {"content": [None, 3, {"type": "image"}]}]},
                        {"input": [{"content": [{"type": "input_file"}]}]},
                        {"contents": [{"parts": [{"inlineData": None}, {"fileData": 3}]}]}):  # fmt: skip
            rule(hostile)  # a problem in words or None, never an exception


# ------------------------------------------------------------ the fake server answers them


async def test_the_fake_server_answers_the_real_400_over_loopback(fake_provider: FakeProvider):
    s = settings_for("anthropic", env=ENV, base_url=fake_provider.base_url)
    client = make_provider(s)
    sixty = DocumentBlock(media_type="application/pdf", data=pdf(60))
    request = Request(
        model="claude-sonnet-4-5",
        messages=[Message(role="user", content=[TextBlock(text="read"), sixty, sixty])],
    )
    fake_provider.push(Reply(text="not sent: the request is refused first"))
    try:
        with pytest.raises(ProviderFailure) as info:
            await client.complete(request)
    finally:
        await client.aclose()
    error = info.value.error
    assert error.http_status == 400 and error.category == "invalid_request"
    assert "A maximum of 100 PDF pages may be provided." in error.message
