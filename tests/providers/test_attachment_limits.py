"""providers/attachment_limits.py: what each wire API takes as attachments,
and ``refusal``, which the daemon asks before a prompt is sent. Each limit is
tried on each API, and (hypothesis) whatever ``refusal`` lets through encodes
to a body the fake provider's rules accept (tests/fakes/attachment_rules.py,
written apart from the table), on every API."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.attachment_limits import LIMITS, MB, REQUEST_HEADROOM, refusal
from providers.registry import codec_for
from providers.settings import settings_for
from providers.types import DocumentBlock, ImageBlock, Message, Request, TextBlock
from tests.fakes import rules

ENV = {"ANTHROPIC_API_KEY": "k-a", "OPENAI_API_KEY": "k-o", "GEMINI_API_KEY": "k-g"}
APIS = {
    "messages": ("anthropic", "claude-sonnet-4-5", rules.anthropic),
    "chat": ("openai", "gpt-4o", rules.openai_chat),
    "responses": ("openai", "gpt-5", rules.openai_responses),
    "generate_content": ("google", "gemini-2.5-flash", rules.google),
}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
HEAD = base64.b64encode(b"%PDF-1.4\n").decode()  # 12 characters, no padding


def pdf(pages: int = 1) -> str:
    objs = b"".join(b"<< /Type /Page >>\n" for _ in range(pages))
    return base64.b64encode(b"%PDF-1.4\n" + objs + b"%%EOF\n").decode()


def big_pdf(size: int) -> str:
    """A PDF's base64 of ``size`` characters (a header, then zero bytes)."""
    return HEAD + "A" * (size - len(HEAD))


def image(data: str = PNG, media_type: str = "image/png", **kw: Any) -> ImageBlock:
    return ImageBlock(media_type=media_type, data=data, **kw)


def doc(data: str | None = None, media_type: str = "application/pdf", **kw: Any) -> DocumentBlock:
    return DocumentBlock(media_type=media_type, data=data, **kw)


def check(api: str, *blocks: ImageBlock | DocumentBlock, documents: bool = True, vision: bool = True):
    return refusal(api, list(blocks), documents=documents, vision=vision)


ALL = list(APIS)


# ------------------------------------------------------------ types and capabilities


@pytest.mark.parametrize("api", ALL)
def test_small_files_of_every_kind_go(api: str):
    text = DocumentBlock(media_type="text/markdown", text="# hi", name="n.md")
    assert check(api, image(), doc(pdf(3), name="r.pdf"), text) is None


@pytest.mark.parametrize("api", ALL)
def test_a_picture_needs_vision_and_a_pdf_needs_documents(api: str):
    assert check(api, image(), vision=False) == (0, "data", "the model takes no pictures")
    assert check(api, image(), doc(pdf()), documents=False) == (1, "data", "the model takes no PDF documents")
    # a text file goes as text to any model
    text = DocumentBlock(media_type="text/plain", text="hello")
    assert check(api, text, documents=False, vision=False) is None


@pytest.mark.parametrize("api", ALL)
def test_image_types(api: str):
    assert check(api, image(media_type="image/jpeg")) is None
    at, field, why = check(api, image(media_type="image/svg+xml")) or (None, None, "")
    assert (at, field) == (0, "media_type") and "image/svg+xml" in why
    gif = check(api, image(media_type="image/gif"))
    if api == "generate_content":  # Gemini takes no GIF (PNG, JPEG, WEBP, HEIC, HEIF)
        assert gif is not None and gif[1] == "media_type" and "generateContent" in gif[2]
    else:
        assert gif is None
    heic = check(api, image(media_type="image/heic"))
    assert (heic is None) is (api == "generate_content")


@pytest.mark.parametrize("api", ALL)
def test_document_types(api: str):
    zipped = doc(base64.b64encode(b"PK\x03\x04").decode(), media_type="application/zip")
    at, field, why = check(api, zipped) or (None, None, "")
    assert (at, field) == (0, "media_type") and "application/zip" in why and "PDF" in why
    # a caller's media type is quoted bounded
    huge = check(api, image(media_type="x" * 100_000), doc(pdf(), media_type="y" * 100_000))
    assert huge is not None and len(huge[2]) < 300


@pytest.mark.parametrize("api", ALL)
def test_data_must_be_base64_and_a_pdf_a_pdf(api: str):
    assert check(api, image(data="not base64!")) == (0, "data", "not valid base64")
    assert check(api, image(data="")) == (0, "data", "not valid base64")
    assert check(api, doc("%%%%")) == (0, "data", "not valid base64")
    not_pdf = base64.b64encode(b"hello, world").decode()
    assert check(api, doc(not_pdf)) == (0, "data", "not a PDF (it has no %PDF- header)")
    assert check(api, doc()) == (0, "data", "the document has no data, text or URL")
    assert check(api, ImageBlock(media_type="image/png")) == (0, "data", "the picture has no data and no URL")


@pytest.mark.parametrize("api", ALL)
def test_urls(api: str):
    assert check(api, ImageBlock(media_type="image/png", url="https://example.com/a.png")) is None
    assert check(api, ImageBlock(media_type="image/png", url="file:///etc/passwd")) == (
        0,
        "url",
        "not an http(s) URL",
    )
    by_url = check(api, doc(url="https://example.com/a.pdf"))
    if api == "chat":  # Chat Completions: "External file URL (file_url)... Not supported"
        assert by_url == (0, "url", "the Chat Completions API takes no document by URL")
    else:
        assert by_url is None
    assert check(api, doc(url="https://example.com/a.pdf"), documents=False) == (
        0,
        "data",
        "the model takes no PDF documents",
    )


def test_an_api_the_table_does_not_know_refuses_nothing():
    assert check("carrier-pigeon", image(media_type="image/bmp")) is None


# ------------------------------------------------------------ sizes, pages, counts


@pytest.mark.parametrize("api", ALL)
def test_one_picture_over_the_api_limit(api: str):
    most = LIMITS[api].max_image_bytes
    if most <= LIMITS[api].max_request_bytes - REQUEST_HEADROOM:  # else the request's limit comes first
        assert check(api, image(data="A" * most)) is None
    at, field, why = check(api, image(data="A" * (most + 4))) or (None, None, "")
    assert (at, field) == (0, "data")
    assert f"at most {most // MB} MB" in why


def test_anthropic_takes_a_picture_of_5_mb_of_base64_and_not_one_more_character():
    assert check("messages", image(data="A" * (5 * MB))) is None
    assert check("messages", image(data="A" * (5 * MB + 4))) == (
        0,
        "data",
        "a picture is at most 5 MB as base64 on the Anthropic Messages API (this one is 5.0 MB)",
    )


@pytest.mark.parametrize("api", ALL)
def test_one_pdf_over_the_api_limit(api: str):
    most = LIMITS[api].max_document_bytes
    at, field, why = check(api, doc(big_pdf(most + 4))) or (None, None, "")
    assert (at, field) == (0, "data") and f"{most // MB} MB" in why


@pytest.mark.parametrize(("api", "each", "words"), [
    ("messages", 17 * MB, "together"),
    ("chat", 17 * MB, "together"),
    ("responses", 17 * MB, "together"),
    ("generate_content", 10 * MB, "requests of at most 20 MB"),
])  # fmt: skip
def test_pdfs_together_over_the_api_limit(api: str, each: int, words: str):
    one = doc(big_pdf(each))
    assert check(api, one) is None
    at, field, why = check(api, one, one) or (None, None, "")
    assert (at, field) == (1, "data") and words in why


@pytest.mark.parametrize("api", ALL)
def test_the_request_limit_counts_every_file_and_keeps_room_for_the_conversation(api: str):
    room = LIMITS[api].max_request_bytes - REQUEST_HEADROOM
    text = DocumentBlock(media_type="text/plain", text="t" * (room - 1000), name="t.txt")
    assert check(api, text) is None
    at, field, why = check(api, text, image(data="A" * 1004)) or (None, None, "")
    assert (at, field) == (1, "data")
    assert f"at most {LIMITS[api].max_request_bytes // MB} MB" in why and "kept for the conversation" in why


def test_escaped_characters_count_as_they_are_sent():
    # a newline is two bytes in a JSON body
    room = LIMITS["messages"].max_request_bytes - REQUEST_HEADROOM
    lines = DocumentBlock(media_type="text/plain", text="\n" * (room // 2 + 10))
    assert check("messages", lines) is not None


@pytest.mark.parametrize("api", ALL)
def test_pages_over_the_api_limit(api: str):
    most = LIMITS[api].max_pages
    assert most is not None
    assert check(api, doc(pdf(most))) is None
    at, field, why = check(api, doc(pdf(most + 1))) or (None, None, "")
    assert (at, field) == (0, "data") and f"at most {most} PDF pages" in why
    # the pages of every PDF of the request together
    half = most // 2 + 1
    assert check(api, doc(pdf(half)), doc(pdf(half)))[:2] == (1, "data")  # type: ignore[index]


@pytest.mark.parametrize("api", ALL)
def test_files_over_the_api_count(api: str):
    most = LIMITS[api].max_count
    tiny = image()
    assert check(api, *[tiny] * most) is None
    at, field, why = check(api, *[tiny] * (most + 1)) or (None, None, "")
    assert (at, field) == (most, "data") and f"at most {most} files" in why


def test_the_first_file_at_fault_is_named():
    assert check("messages", image(), image(media_type="image/bmp"), image(data="!")) == (
        1,
        "media_type",
        "'image/bmp' is not a picture the Anthropic Messages API takes "
        "(image/gif, image/jpeg, image/png, image/webp)",
    )


# ------------------------------------------------------------ what refusal lets through, the API takes

_pdf_data = st.integers(min_value=0, max_value=120).map(pdf)
_b64 = st.binary(max_size=48).map(lambda b: base64.b64encode(b).decode())
_junk = st.text(max_size=24)
_names = st.one_of(st.none(), st.text(max_size=30))
_urls = st.one_of(st.none(), st.just("https://example.com/f"), _junk)
_images = st.builds(
    ImageBlock,
    media_type=st.one_of(
        st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp", "image/heic", "image/jpg", "IMAGE/PNG"]),
        _junk,
    ),
    data=st.one_of(st.none(), st.just(PNG), _b64, _junk),
    url=_urls,
    name=_names,
)
_documents = st.builds(
    DocumentBlock,
    media_type=st.one_of(
        st.sampled_from(["application/pdf", "text/plain", "text/markdown", "application/json", "application/zip"]),
        _junk,
    ),
    data=st.one_of(st.none(), _pdf_data, _b64, _junk),
    text=st.one_of(st.none(), st.text(max_size=80)),
    url=_urls,
    name=_names,
)

# the shapes the daemon makes, so that many lists pass refusal and reach the fake
_good = st.one_of(
    st.builds(DocumentBlock, media_type=st.just("application/pdf"), data=_pdf_data, name=_names),
    st.builds(DocumentBlock, media_type=st.just("application/pdf"), data=_b64),  # not a PDF inside
    st.builds(DocumentBlock, media_type=st.just("application/pdf"), url=st.just("https://example.com/a.pdf")),
    st.builds(DocumentBlock, media_type=st.sampled_from(["text/plain", "text/x-python"]), text=st.text(), name=_names),
    st.builds(ImageBlock, media_type=st.sampled_from(["image/png", "image/jpeg", "image/webp"]), data=_b64, name=_names),
)


def encoded(api: str, blocks: list[ImageBlock | DocumentBlock]) -> dict[str, Any]:
    provider, model, _ = APIS[api]
    codec = codec_for(settings_for(provider, env=ENV, api=api))  # type: ignore[arg-type]
    request = Request(
        model=model,
        messages=[Message(role="user", content=[TextBlock(text="look"), *blocks])],
        provider_data={"cache": False},
    )
    out: dict[str, Any] = json.loads(codec.encode(request, stream=True).body)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    blocks=st.lists(st.one_of(_good, _images, _documents), max_size=5),
    documents=st.booleans(),
    vision=st.booleans(),
)
def test_whatever_refusal_lets_through_the_fake_api_takes(
    blocks: list[ImageBlock | DocumentBlock], documents: bool, vision: bool
):
    for api, (_, _, rule) in APIS.items():
        found = refusal(api, blocks, documents=documents, vision=vision)
        if found is not None:
            at, field, why = found
            assert 0 <= at < len(blocks) and field in ("media_type", "data", "url") and why
            continue
        problem = rule(encoded(api, blocks))
        assert problem is None, (api, problem)
