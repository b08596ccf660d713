"""What the attachment tests share: small real files (a PNG, a PDF, a text
file), a daemon home whose four wire APIs all point at the fake provider
(and deepseek, a model that takes no pictures), and a loopback web server
the daemon fetches ``url`` attachments from (the fake provider's server
with a responder: each path's answer scripted)."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.daemon.conftest import write_home
from tests.fakes.recorded import RecordedRequest
from tests.fakes.script import Raw, RawStream, Reply
from tests.fakes.server import FakeProvider, fake_provider

# a 1x1 PNG
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
PDF = (
    b"%PDF-1.4\n1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n"
    b"2 0 obj <</Type/Pages/Kids[3 0 R]/Count 1>> endobj\n"
    b"3 0 obj <</Type/Page/Parent 2 0 R/MediaBox[0 0 72 72]>> endobj\n"
    b"trailer <</Root 1 0 R>>\n%%EOF\n"
)
TEXT = "# notes\nthe answer is 42 \u2713\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# a model of each wire API that takes pictures (and PDFs, where the API does)
MODELS = {
    "messages": "anthropic/claude-sonnet-4-5",
    "responses": "openai/gpt-5",
    "chat": "openai/gpt-4o",
    "generate_content": "google/gemini-3-flash-preview",
}
BLIND = "deepseek/deepseek-v4-flash"  # chat, no pictures, no PDFs


def write_attach_home(home: Path, fake: FakeProvider, **config: Any) -> None:
    write_home(
        home,
        fake,
        providers={
            "anthropic": {"base_url": fake.base_url},
            "openai": {"base_url": f"{fake.base_url}/v1"},
            "google": {"base_url": f"{fake.base_url}/v1beta"},
            "deepseek": {"base_url": f"{fake.base_url}/v1"},
        },
        **config,
    )
    creds = home / "credentials.json"
    keys = json.loads(creds.read_text())
    creds.write_text(json.dumps({**keys, "deepseek": "test-deepseek-key"}))


def documents(model: str) -> bool:
    """Whether the catalog says ``model`` (provider/name) takes PDFs."""
    from providers.catalog import default_catalog

    catalog = default_catalog()
    provider, _, name = model.partition("/")
    entry, _ = catalog.entry_or_default(provider, name)
    flag = getattr(entry.capabilities, "documents", None)
    if flag is None:
        return catalog.wire_api(provider, name) in ("messages", "responses", "generate_content")
    return bool(flag)


def user_parts(body: dict[str, Any]) -> str:
    """The JSON of the last user message of a request body, whatever the API."""
    if "contents" in body:  # Gemini
        turns = [c for c in body["contents"] if c.get("role") == "user"]
    elif "input" in body:  # Responses
        turns = [i for i in body["input"] if isinstance(i, dict) and i.get("role") == "user"]
    else:
        turns = [m for m in body["messages"] if m.get("role") == "user"]
    return json.dumps(turns[-1])


def picture_in(api: str, body: dict[str, Any], png: bytes = PNG) -> bool:
    """The request's last user message holds the PNG in ``api``'s own form."""
    data, part = b64(png), user_parts(body)
    if api == "messages":
        source = {"type": "base64", "media_type": "image/png", "data": data}
        return json.dumps({"type": "image", "source": source}) in part
    if api == "chat":
        return f"data:image/png;base64,{data}" in part and '"image_url"' in part
    if api == "responses":
        return '"input_image"' in part and f"data:image/png;base64,{data}" in part
    return '"inlineData"' in part and data in part and '"image/png"' in part


def pdf_in(api: str, body: dict[str, Any], pdf: bytes = PDF) -> bool:
    """The last user message holds the PDF as ``api``'s document."""
    data, part = b64(pdf), user_parts(body)
    marker = {
        "messages": '"document"',
        "responses": '"input_file"',
        "chat": '"file"',
        "generate_content": '"inlineData"',
    }[api]
    return marker in part and data in part and "application/pdf" in part


def text_in(body: dict[str, Any], text: str = TEXT, name: str = "notes.md") -> bool:
    """The last user message holds the text file inline, with its name."""
    part = json.loads(user_parts(body))
    flat = json.dumps(part, ensure_ascii=False)
    return text.strip() in flat.replace("\\n", "\n") and name in flat


def responder(routes: dict[str, Raw | RawStream]) -> Any:
    def answer(request: RecordedRequest) -> Reply | None:
        found = routes.get(request.path)
        return Reply(fault=found if found is not None else Raw(b"not here", status=404, content_type="text/plain"))

    return answer


@asynccontextmanager
async def web(routes: dict[str, Raw | RawStream]) -> AsyncIterator[FakeProvider]:
    """A loopback web server answering each path of ``routes`` (else 404)."""
    async with fake_provider(responder=responder(routes)) as server:
        yield server
