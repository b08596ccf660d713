"""Images in tool results (issue 17: MCP tools return pictures) on every wire API.

Each encoder sends a tool result's images where its API takes them: Anthropic
as image blocks in the tool_result's content, OpenAI Responses as input_image
parts of the function_call_output, Gemini 3 as inlineData in the
functionResponse's parts. A Chat Completions tool message (and Gemini before 3)
takes text only: the image is named in a note line. An image no API would take
(too big, a type the API refuses, data that is not base64) is a note too: sent,
it would make the API refuse this request and every later one, since history is
replayed. The fake provider answers 400 where the real APIs do
(tests/fakes/rules.py), so a request it accepts is one they accept.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.registry import codec_for, make_provider
from providers.settings import settings_for
from providers.types import (
    MAX_TOOL_IMAGE_BASE64,
    ImageBlock,
    Message,
    Request,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    tool_result_images,
)
from store import Store
from tests.fakes import rules
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider

ENV = {"ANTHROPIC_API_KEY": "k-a", "OPENAI_API_KEY": "k-o", "GEMINI_API_KEY": "k-g"}
# a real 1x1 PNG
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
IMAGE = ImageBlock(media_type="image/png", data=PNG)
CALL_ID = "toolu_01"
# (provider, api, model, base path on the fake)
APIS = [
    ("anthropic", "messages", "claude-sonnet-4-5", ""),
    ("openai", "chat", "gpt-4o", "/v1"),
    ("openai", "responses", "gpt-5", "/v1"),
    ("google", "generate_content", "gemini-2.5-flash", "/v1beta"),
    ("google", "generate_content", "gemini-3-flash-preview", "/v1beta"),
]
RULES = {
    "messages": rules.anthropic,
    "chat": rules.openai_chat,
    "responses": rules.openai_responses,
    "generate_content": rules.google,
}


def conversation(provider: str, model: str, result: ToolResultBlock) -> Request:
    call = ToolCallBlock(id=CALL_ID, name="shot", arguments={}, provider=provider)
    return Request(
        model=model,
        messages=[
            Message(role="user", content=[TextBlock(text="take a screenshot")]),
            Message(role="assistant", provider=provider, model=model, content=[call]),
            Message(role="tool", content=[result]),
        ],
        provider_data={"cache": False},
    )


def result(content: str = "here it is", *images: ImageBlock, is_error: bool = False) -> ToolResultBlock:
    return ToolResultBlock(
        tool_call_id=CALL_ID, content=content, name="shot", is_error=is_error, images=list(images)
    )


def body(api: str, provider: str, model: str, block: ToolResultBlock) -> dict[str, Any]:
    codec = codec_for(settings_for(provider, env=ENV, api=api))  # type: ignore[arg-type]
    out: dict[str, Any] = json.loads(codec.encode(conversation(provider, model, block), stream=True).body)
    return out


def sent_result(api: str, out: dict[str, Any]) -> Any:
    """The encoded tool result: the block, item, message or part that carries it."""
    if api == "messages":
        return out["messages"][-1]["content"][0]
    if api == "chat":
        return out["messages"][-1]
    if api == "responses":
        return out["input"][-1]
    return out["contents"][-1]["parts"][0]["functionResponse"]


# ------------------------------------------------------------ the documented shapes


def test_anthropic_puts_the_image_in_the_tool_result_content():
    got = sent_result("messages", body("messages", "anthropic", "claude-sonnet-4-5", result("here it is", IMAGE)))
    assert got == {
        "type": "tool_result",
        "tool_use_id": CALL_ID,
        "content": [
            {"type": "text", "text": "here it is"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    }


def test_anthropic_an_image_alone_and_an_error_with_an_image():
    got = sent_result("messages", body("messages", "anthropic", "claude-sonnet-4-5", result("", IMAGE, is_error=True)))
    # no empty text block (the API refuses one)
    assert got["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    ]
    assert got["is_error"] is True
    by_url = ImageBlock(media_type="image/jpeg", url="https://example.com/shot.jpg")
    got = sent_result("messages", body("messages", "anthropic", "claude-sonnet-4-5", result("x", by_url)))
    assert got["content"][1] == {"type": "image", "source": {"type": "url", "url": "https://example.com/shot.jpg"}}


def test_responses_sends_input_text_and_input_image_as_the_output():
    got = sent_result("responses", body("responses", "openai", "gpt-5", result("here it is", IMAGE)))
    assert got == {
        "type": "function_call_output",
        "call_id": CALL_ID,
        "output": [
            {"type": "input_text", "text": "here it is"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
        ],
    }
    # no image: the plain string, as before
    got = sent_result("responses", body("responses", "openai", "gpt-5", result("plain")))
    assert got["output"] == "plain"


def test_chat_completions_names_the_image_in_a_note_line():
    out = body("chat", "openai", "gpt-4o", result("here it is", IMAGE))
    got = sent_result("chat", out)
    assert got["role"] == "tool" and got["tool_call_id"] == CALL_ID
    assert got["content"] == (
        "here it is\n[the tool returned an image (image/png, 70 bytes); "
        "this API cannot take images in a tool result]"
    )
    assert PNG not in json.dumps(out)


def test_gemini_3_sends_the_image_in_the_function_response_parts():
    got = sent_result("generate_content", body("generate_content", "google", "gemini-3-flash-preview", result("here it is", IMAGE)))
    assert got == {
        "name": "shot",
        "id": CALL_ID,  # the call was Gemini's own (provider google)
        "response": {"result": "here it is"},
        "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}],
    }


def test_gemini_before_3_gets_a_note_line():
    out = body("generate_content", "google", "gemini-2.5-flash", result("here it is", IMAGE))
    got = sent_result("generate_content", out)
    assert "parts" not in got
    assert got["response"]["result"].startswith("here it is\n[the tool returned an image (image/png")
    assert PNG not in json.dumps(out)


# ------------------------------------------------------------ what no API would take


@pytest.mark.parametrize(("provider", "api", "model", "_path"), APIS)
@pytest.mark.parametrize(
    ("image", "why"),
    [
        (ImageBlock(media_type="image/png", data="A" * (MAX_TOOL_IMAGE_BASE64 + 4)), "over the 5 MB"),
        (ImageBlock(media_type="image/svg+xml", data=base64.b64encode(b"<svg/>").decode()), "does not take"),
        (ImageBlock(media_type="image/png", data="not base64!"), "not valid base64"),
        (ImageBlock(media_type="image/png", data="QUJD\nRA=="), "not valid base64"),
        (ImageBlock(media_type="image/png"), "not valid base64"),
    ],
)
def test_an_image_the_api_would_refuse_becomes_a_note(provider, api, model, _path, image, why):
    out = body(api, provider, model, result("text", image))
    assert RULES[api](out) is None
    text = json.dumps(out)
    if image.data:
        assert image.data not in text
    # the note is there, and says why (Chat and Gemini before 3 say they take no images at all)
    no_images = api == "chat" or model == "gemini-2.5-flash"
    assert ("cannot take images" if no_images else why) in text


def test_image_jpg_is_sent_as_image_jpeg():
    jpg = ImageBlock(media_type="image/jpg", data=PNG)
    got = sent_result("messages", body("messages", "anthropic", "claude-sonnet-4-5", result("x", jpg)))
    assert got["content"][1]["source"]["media_type"] == "image/jpeg"


# ------------------------------------------------------------ the fake's rules are at least as strict


def test_the_fake_refuses_images_where_the_real_apis_do():
    chat = body("chat", "openai", "gpt-4o", result("x"))
    chat["messages"][-1]["content"] = [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}}]
    assert "only allowed for messages with role 'user'" in (rules.openai_chat(chat) or "")
    anth = body("messages", "anthropic", "claude-sonnet-4-5", result("x", IMAGE))
    anth["messages"][-1]["content"][0]["content"][1]["source"]["media_type"] = "image/svg+xml"
    assert "media_type" in (rules.anthropic(anth) or "")
    anth["messages"][-1]["content"][0]["content"] = [{"type": "text", "text": ""}]
    assert "non-empty" in (rules.anthropic(anth) or "")
    resp = body("responses", "openai", "gpt-5", result("x", IMAGE))
    resp["input"][-1]["output"][1]["image_url"] = "data:image/png;base64,@@@@"
    assert "image_url" in (rules.openai_responses(resp) or "")
    resp["input"][-1]["output"][1] = {"type": "image", "data": PNG}
    assert "Supported values" in (rules.openai_responses(resp) or "")
    gem = body("generate_content", "google", "gemini-3-flash-preview", result("x", IMAGE))
    sent_result("generate_content", gem)["parts"][0]["inlineData"]["data"] = "%%%"
    assert "Base64" in (rules.google(gem) or "")


@pytest.mark.parametrize(("provider", "api", "model", "path"), APIS)
async def test_the_fake_provider_accepts_the_encoded_request(fake_provider: FakeProvider, provider, api, model, path):
    s = settings_for(provider, env=ENV, api=api, base_url=fake_provider.base_url + path)  # type: ignore[arg-type]
    client = make_provider(s)
    try:
        fake_provider.push(Reply(text="I see a pixel"))
        response = await client.complete(conversation(provider, model, result("here it is", IMAGE)))
    finally:
        await client.aclose()
    assert response.blocks == [TextBlock(text="I see a pixel")]
    [sent] = fake_provider.requests
    wants_image = api in ("messages", "responses") or model.startswith("gemini-3")
    assert (PNG in json.dumps(sent.json)) is wants_image


# ------------------------------------------------------------ through the store


@pytest.mark.parametrize(("provider", "api", "model", "_path"), APIS)
def test_a_stored_tool_result_keeps_its_images_through_replay(tmp_path: Path, provider, api, model, _path):
    store = Store(f"sqlite:///{tmp_path / 'ikigai.db'}")
    try:
        agent = store.create_agent("pics", provider=provider, model=model).uuid
        want = conversation(provider, model, result("here it is", IMAGE)).messages
        store.append_user(agent, want[0])
        store.append_assistant(agent, want[1], finish_reason="tool_use")
        store.append_tool_results(agent, want[2])
        got = store.replay(agent)
    finally:
        store.close()
    assert got == want
    [stored] = got[2].content
    assert isinstance(stored, ToolResultBlock) and stored.images == [IMAGE]
    codec = codec_for(settings_for(provider, env=ENV, api=api))  # type: ignore[arg-type]
    out = json.loads(codec.encode(Request(model=model, messages=got), stream=True).body)
    wants_image = api in ("messages", "responses") or model.startswith("gemini-3")
    assert (PNG in json.dumps(out)) is wants_image


# ------------------------------------------------------------ anything encodes


_b64 = st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode())
_images = st.builds(
    ImageBlock,
    media_type=st.one_of(
        st.sampled_from(["image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp", "image/heic", "IMAGE/PNG"]),
        st.text(max_size=30),
    ),
    data=st.one_of(st.none(), _b64, st.text(max_size=40)),
    url=st.one_of(st.none(), st.just("https://example.com/a.png"), st.text(max_size=40)),
)
_results = st.builds(
    ToolResultBlock,
    tool_call_id=st.just(CALL_ID),
    content=st.text(max_size=60),
    is_error=st.booleans(),
    name=st.just("shot"),
    images=st.lists(_images, max_size=4),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block=_results)
def test_any_tool_result_with_images_encodes_for_every_api(block: ToolResultBlock):
    for provider, api, model, _ in APIS:
        out = body(api, provider, model, block)  # valid JSON, no exception
        problem = RULES[api](out)
        assert problem is None, (api, model, problem)
    for kinds in (frozenset(), frozenset({"image/png", "image/jpeg"})):
        sent, notes = tool_result_images(block, kinds, urls=True)
        # every image is either sent or named in a note, never lost
        assert len(sent) + len(notes) == len(block.images)
        assert all(len(n) < 400 and "\n" not in n for n in notes)
        if not kinds:
            assert all(i.url for i in sent)
