"""Request -> generateContent JSON body (a dict, encoded by the codec)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..documents import inline_text, is_pdf, note
from ..types import (
    DocumentBlock,
    ImageBlock,
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    tool_result_images,
    with_notes,
)
from ._decode import SYNTHETIC_ID
from ._schema import to_gemini_schema

# Google's documented value for a functionCall part whose signature is not at
# hand (history written by another model): Gemini 3 then skips validation
# instead of answering 400.
SKIP_SIGNATURE = "skip_thought_signature_validator"
# the image types Gemini takes inline (a function response's parts included)
_RESULT_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})


def is_strict_signature_model(model: str) -> bool:
    """Gemini 3 and later validate thought signatures on function calls."""
    name = model.rsplit("/", 1)[-1]
    if not name.startswith("gemini-"):
        return False
    digits = ""
    for ch in name[len("gemini-") :]:
        if not ch.isdigit():
            break
        digits += ch
    return bool(digits) and int(digits) >= 3


def tool_response(block: ToolResultBlock, content: str | None = None) -> dict[str, Any]:
    """The functionResponse ``response`` object for a tool result (``content``:
    its text when not the block's own, e.g. with note lines)."""
    if content is None:
        content = block.content
    if content[:1] == "{":
        try:
            value = msgspec.json.decode(content)
        except (msgspec.DecodeError, UnicodeError):  # a lone surrogate
            value = None
        if isinstance(value, dict):
            return value
    return {"error": content} if block.is_error else {"result": content}


class _Calls:
    """What the request's messages say about each tool call, by id."""

    def __init__(self, messages: list[Message], provider: str) -> None:
        self.names: dict[str, str] = {}
        self.wire_ids: dict[str, str] = {}  # ids Gemini issued itself
        for message in messages:
            if message.role != "assistant":
                continue
            native_message = message.provider == provider
            for block in message.content:
                if isinstance(block, ToolCallBlock):
                    self.names[block.id] = block.name
                    if _native_call(block, native_message, provider) and not (
                        block.provider_data and block.provider_data.get(SYNTHETIC_ID)
                    ):
                        self.wire_ids[block.id] = block.id


def _native_call(block: ToolCallBlock, native_message: bool, provider: str) -> bool:
    if block.provider is not None:
        return block.provider == provider
    return native_message


def _image(block: ImageBlock) -> dict[str, Any] | None:
    if block.data:
        return {"inlineData": {"mimeType": block.media_type, "data": block.data}}
    if block.url:
        return {"fileData": {"mimeType": block.media_type, "fileUri": block.url}}
    return None


def _document(block: DocumentBlock) -> dict[str, Any] | None:
    """A document as a part (ai.google.dev, Document understanding: a PDF as
    ``inlineData`` with mimeType application/pdf, or by URL as ``fileData``
    with its ``fileUri``). A text file is a text part holding its text: Gemini
    reads a non-PDF document as plain text anyway, and inline text keeps its
    name."""
    if block.text is not None:
        return {"text": inline_text(block)}
    if block.data is not None:
        if not is_pdf(block):
            return {"text": note(block, "this API takes PDF documents only")}
        return {"inlineData": {"mimeType": "application/pdf", "data": block.data}}
    if block.url is not None:
        return {"fileData": {"mimeType": block.media_type, "fileUri": block.url}}
    return None


def encode_contents(messages: list[Message], *, provider: str, model: str) -> list[dict[str, Any]]:
    calls = _Calls(messages, provider)
    strict = is_strict_signature_model(model)
    contents: list[dict[str, Any]] = []
    results_open = False  # the last content holds only functionResponse parts

    def responses(blocks: list[ToolResultBlock]) -> None:
        nonlocal results_open
        parts = []
        for b in blocks:
            # Gemini 3 takes images in a function response ("multimodal function
            # responses": functionResponse.parts); earlier models get a note line
            images, notes = tool_result_images(b, _RESULT_IMAGES if strict else frozenset())
            fr: dict[str, Any] = {
                "name": b.name or calls.names.get(b.tool_call_id) or "unknown_function",
                "response": tool_response(b, with_notes(b.content, notes) if notes else None),
            }
            wire_id = calls.wire_ids.get(b.tool_call_id)
            if wire_id:
                fr["id"] = wire_id
            if images:
                fr["parts"] = [
                    {"inlineData": {"mimeType": i.media_type, "data": i.data}} for i in images
                ]
            parts.append({"functionResponse": fr})
        if results_open:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": "user", "parts": parts})
        results_open = True

    for message in messages:
        if message.role == "tool" or (
            message.role == "user"
            and message.content
            and all(isinstance(b, ToolResultBlock) for b in message.content)
        ):
            results = [b for b in message.content if isinstance(b, ToolResultBlock)]
            if results:
                responses(results)
            continue
        if message.role == "user":
            parts: list[dict[str, Any]] = []
            results = []
            for b in message.content:
                if isinstance(b, TextBlock):
                    parts.append({"text": b.text})
                elif isinstance(b, ImageBlock):
                    img = _image(b)
                    if img is not None:
                        parts.append(img)
                elif isinstance(b, DocumentBlock):
                    doc = _document(b)
                    if doc is not None:
                        parts.append(doc)
                elif isinstance(b, ToolResultBlock):
                    results.append(b)
            if results:
                responses(results)
            if parts:
                contents.append({"role": "user", "parts": parts})
                results_open = False
            continue
        # assistant
        native_message = message.provider == provider
        parts = []
        call_parts: list[tuple[dict[str, Any], bool]] = []
        for b in message.content:
            if isinstance(b, TextBlock):
                part: dict[str, Any] = {"text": b.text}
                if b.signature and (b.provider or message.provider) == provider:
                    part["thoughtSignature"] = b.signature
                parts.append(part)
            elif isinstance(b, ThinkingBlock):
                native = (b.provider or message.provider) == provider
                if not native or b.redacted:
                    continue  # never send another provider's thinking
                part = {"text": b.text, "thought": True}
                if b.signature:
                    part["thoughtSignature"] = b.signature
                parts.append(part)
            elif isinstance(b, ToolCallBlock):
                native = _native_call(b, native_message, provider)
                # arguments that were not a JSON object (cut off) go back as {}
                args = b.arguments if b.raw_arguments is None else {}
                fc: dict[str, Any] = {"name": b.name, "args": args}
                wire_id = calls.wire_ids.get(b.id)
                if wire_id:
                    fc["id"] = wire_id
                part = {"functionCall": fc}
                if native and b.signature:
                    part["thoughtSignature"] = b.signature
                parts.append(part)
                call_parts.append((part, native))
            elif isinstance(b, ImageBlock):
                img = _image(b)
                if img is not None:
                    parts.append(img)
        if strict and call_parts and not any("thoughtSignature" in p for p, _ in call_parts):
            # No call of this step carries a signature (history from another
            # model): mark the foreign calls, and the first call in any case.
            for i, (part, native) in enumerate(call_parts):
                if i == 0 or not native:
                    part["thoughtSignature"] = SKIP_SIGNATURE
        if parts:
            contents.append({"role": "model", "parts": parts})
            results_open = False
    return contents


def _parameters(schema: dict[str, Any]) -> bool:
    """False for an object schema with no properties at all (Gemini takes none)."""
    keys = set(schema) - {"type", "properties", "$schema", "additionalProperties", "required"}
    return bool(schema.get("properties")) or bool(keys)


def encode_tools(request: Request, *, subset: bool) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if request.tools:
        decls = []
        for tool in request.tools:
            decl: dict[str, Any] = {"name": tool.name}
            if tool.description:
                decl["description"] = tool.description
            if _parameters(tool.parameters):
                if subset:
                    decl["parameters"] = to_gemini_schema(tool.parameters)
                else:
                    decl["parametersJsonSchema"] = tool.parameters
            decls.append(decl)
        body["tools"] = [{"functionDeclarations": decls}]
        choice = request.tool_choice
        config: dict[str, Any] | None = None
        if choice.mode == "none":
            config = {"mode": "NONE"}
        elif choice.mode == "required":
            config = {"mode": "ANY"}
        elif choice.mode == "tool":
            config = {"mode": "ANY", "allowedFunctionNames": [choice.name]}
        if config is not None:
            body["toolConfig"] = {"functionCallingConfig": config}
    return body
