"""Request -> generateContent JSON, exactly."""

from __future__ import annotations

import json

import pytest

from providers.google._schema import to_gemini_schema
from providers.google.codec import GeminiCodec
from providers.settings import settings_for
from providers.types import (
    ImageBlock,
    Message,
    ProviderFailure,
    Request,
    TextBlock,
    ThinkingBlock,
    ThinkingConfig,
    Tool,
    ToolCallBlock,
    ToolChoice,
    ToolResultBlock,
)

from .conftest import KEY


def codec(base_url: str | None = None) -> GeminiCodec:
    return GeminiCodec(settings_for("google", env={"GOOGLE_API_KEY": KEY}, base_url=base_url))


def body(request: Request, **kw) -> dict:
    return json.loads(codec(**kw).encode(request, stream=True).body)


def hi(model: str = "gemini-2.5-flash", **kw) -> Request:
    return Request(
        model=model, messages=[Message(role="user", content=[TextBlock(text="hi")])], **kw
    )


def test_url_headers_and_key_source():
    http = codec().encode(hi(), stream=True)
    assert http.method == "POST"
    assert (
        http.url
        == "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert http.headers == {"content-type": "application/json", "x-goog-api-key": KEY}
    assert KEY not in http.url
    assert (
        codec().encode(hi(), stream=False).url.endswith("/models/gemini-2.5-flash:generateContent")
    )
    # GEMINI_API_KEY wins over GOOGLE_API_KEY; credentials.json is the fallback
    s = settings_for("google", env={"GEMINI_API_KEY": "a", "GOOGLE_API_KEY": "b"})
    assert GeminiCodec(s).encode(hi(), stream=True).headers["x-goog-api-key"] == "a"
    s = settings_for("google", env={}, credentials={"google": "from-file"})
    assert GeminiCodec(s).encode(hi(), stream=True).headers["x-goog-api-key"] == "from-file"
    s = settings_for(
        "google",
        env={"GOOGLE_GEMINI_BASE_URL": "http://proxy.local/v1beta/", "GEMINI_API_KEY": "a"},
    )
    assert (
        GeminiCodec(s).encode(hi(), stream=False).url
        == "http://proxy.local/v1beta/models/gemini-2.5-flash:generateContent"
    )


def test_missing_key_raises_auth():
    with pytest.raises(ProviderFailure) as info:
        GeminiCodec(settings_for("google", env={})).encode(hi(), stream=True)
    assert info.value.error.category == "auth"
    assert "GEMINI_API_KEY or GOOGLE_API_KEY" in info.value.error.message


@pytest.mark.parametrize(
    ("model", "level", "config"),
    [
        ("gemini-2.5-flash", "none", {"thinkingBudget": 0}),
        ("gemini-2.5-flash", "low", {"thinkingBudget": 8192, "includeThoughts": True}),
        ("gemini-2.5-flash", "high", {"thinkingBudget": 24576, "includeThoughts": True}),
        (
            "gemini-2.5-pro",
            "none",
            {"thinkingBudget": 128, "includeThoughts": True},
        ),  # cannot turn off
        (
            "gemini-2.5-pro",
            "med",
            {"thinkingBudget": 128 + round(2 * (32768 - 128) / 3), "includeThoughts": True},
        ),
        ("gemini-2.5-flash-lite", "none", {"thinkingBudget": 0}),
        (
            "gemini-2.5-flash-lite",
            "low",
            {"thinkingBudget": 512 + round((24576 - 512) / 3), "includeThoughts": True},
        ),
        (
            "gemini-2.5-flash-preview-09-2025",
            "low",
            {"thinkingBudget": 8192, "includeThoughts": True},
        ),
        ("gemini-3-pro-preview", "none", {"thinkingLevel": "LOW", "includeThoughts": True}),
        ("gemini-3-pro-preview", "med", {"thinkingLevel": "HIGH", "includeThoughts": True}),
        ("gemini-3.1-pro-preview", "med", {"thinkingLevel": "MEDIUM", "includeThoughts": True}),
        ("gemini-3-flash-preview", "none", {"thinkingLevel": "MINIMAL", "includeThoughts": True}),
        ("gemini-3-flash-preview", "low", {"thinkingLevel": "LOW", "includeThoughts": True}),
        ("gemini-2.0-flash", "none", None),
        ("gemini-2.0-flash", "high", None),
        (
            "gemini-9-ultra",
            "high",
            {"thinkingLevel": "HIGH", "includeThoughts": True},
        ),  # the default profile
    ],
)
def test_thinking_config(model: str, level: str, config: dict | None):
    gen = body(hi(model, thinking=ThinkingConfig(level=level)))["generationConfig"]
    assert gen.get("thinkingConfig") == config


def test_thinking_summary_can_be_left_out():
    request = hi(
        "gemini-3-pro-preview", thinking=ThinkingConfig(level="high", include_summary=False)
    )
    assert body(request)["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "HIGH"}


def test_max_output_tokens_capped_by_the_catalog():
    assert (
        body(hi("gemini-2.0-flash", max_output_tokens=100_000))["generationConfig"][
            "maxOutputTokens"
        ]
        == 8192
    )
    assert (
        body(hi("gemini-2.5-pro", max_output_tokens=100_000))["generationConfig"]["maxOutputTokens"]
        == 65536
    )


def test_system_tools_choice_and_response_schema():
    params = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "a file"}},
        "required": ["path"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    request = hi(
        "gemini-3-flash-preview",
        system=[TextBlock(text="You are terse."), TextBlock(text="Use tools.")],
        tools=[
            Tool(name="read", description="Read a file", parameters=params),
            Tool(name="now"),  # no parameters
        ],
        tool_choice=ToolChoice(mode="tool", name="read"),
        response_schema=schema,
        max_output_tokens=1000,
    )
    assert body(request) == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": "You are terse."}, {"text": "Use tools."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {"name": "read", "description": "Read a file", "parametersJsonSchema": params},
                    {"name": "now"},
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read"]}},
        "generationConfig": {
            "maxOutputTokens": 1000,
            "thinkingConfig": {"thinkingLevel": "MINIMAL", "includeThoughts": True},
            "responseMimeType": "application/json",
            "responseJsonSchema": schema,
        },
    }
    v1 = body(request, base_url="https://generativelanguage.googleapis.com/v1")
    assert v1["tools"][0]["functionDeclarations"][0]["parameters"] == {
        "type": "OBJECT",
        "properties": {"path": {"type": "STRING", "description": "a file"}},
        "required": ["path"],
    }
    assert v1["generationConfig"]["responseSchema"] == to_gemini_schema(schema)


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        (ToolChoice(mode="auto"), None),
        (ToolChoice(mode="none"), {"functionCallingConfig": {"mode": "NONE"}}),
        (ToolChoice(mode="required"), {"functionCallingConfig": {"mode": "ANY"}}),
    ],
)
def test_tool_choice_modes(choice: ToolChoice, config: dict | None):
    assert body(hi(tools=[Tool(name="t")], tool_choice=choice)).get("toolConfig") == config


def test_no_tools_no_tool_config():
    assert "toolConfig" not in body(hi(tool_choice=ToolChoice(mode="none")))
    assert "tools" not in body(hi())


def test_tool_results_one_content_per_turn_and_response_objects():
    calls = Message(
        role="assistant",
        provider="google",
        content=[
            ToolCallBlock(id="a", name="grep", arguments={"p": "x"}, provider="google", provider_data={"synthetic_id": True}),
            ToolCallBlock(id="b", name="ls", arguments={}, provider="google", provider_data={"synthetic_id": True}),
            ToolCallBlock(id="c", name="cat", arguments={"f": "y"}, provider="google", provider_data={"synthetic_id": True}),
        ],
    )  # fmt: skip
    request = Request(
        model="gemini-2.5-flash",
        messages=[
            Message(role="user", content=[TextBlock(text="go")]),
            calls,
            Message(role="tool", content=[ToolResultBlock(tool_call_id="a", content="3 matches")]),
            Message(
                role="tool",
                content=[ToolResultBlock(tool_call_id="b", content='{"files": ["x"]}', name="ls")],
            ),
            Message(
                role="tool",
                content=[ToolResultBlock(tool_call_id="c", content="not found", is_error=True)],
            ),
            Message(role="user", content=[TextBlock(text="and now?")]),
        ],
    )
    contents = body(request)["contents"]
    assert contents[2:] == [
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "grep", "response": {"result": "3 matches"}}},
                {"functionResponse": {"name": "ls", "response": {"files": ["x"]}}},
                {"functionResponse": {"name": "cat", "response": {"error": "not found"}}},
            ],
        },
        {"role": "user", "parts": [{"text": "and now?"}]},
    ]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "grep", "args": {"p": "x"}}},
            {"functionCall": {"name": "ls", "args": {}}},
            {"functionCall": {"name": "cat", "args": {"f": "y"}}},
        ],
    }
    # on Gemini 3 a step with no signature at all gets the documented sentinel on its first call
    g3 = body(Request(model="gemini-3-pro-preview", messages=request.messages))["contents"][1][
        "parts"
    ]
    assert [p.get("thoughtSignature") for p in g3] == [
        "skip_thought_signature_validator",
        None,
        None,
    ]


def test_tool_results_in_a_user_message_and_json_non_objects():
    request = Request(
        model="gemini-2.5-flash",
        messages=[
            Message(role="user", content=[TextBlock(text="q")]),
            Message(
                role="assistant",
                content=[ToolCallBlock(id="x1", name="calc", arguments={"e": "1+1"})],
            ),
            Message(role="user", content=[ToolResultBlock(tool_call_id="x1", content="[1, 2]")]),
        ],
    )
    assert body(request)["contents"][2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "calc", "response": {"result": "[1, 2]"}}}],
    }


def test_foreign_thinking_dropped_native_kept_and_images():
    request = Request(
        model="gemini-2.5-pro",
        messages=[
            Message(
                role="user",
                content=[
                    TextBlock(text="what is this?"),
                    ImageBlock(media_type="image/png", data="iVBORw0KGgo="),
                    ImageBlock(media_type="application/pdf", url="https://example.com/a.pdf"),
                ],
            ),
            Message(
                role="assistant",
                provider="openai",
                content=[
                    ThinkingBlock(
                        text="",
                        signature="gAAAA-encrypted",
                        provider="openai",
                        provider_data={"id": "rs_1"},
                    ),
                    TextBlock(text="A logo."),
                ],
            ),
            Message(
                role="assistant",
                provider="google",
                content=[
                    ThinkingBlock(
                        text="Summary of thoughts", signature="Z3NpZw==", provider="google"
                    ),
                    ThinkingBlock(text="unsigned thought", provider="google"),
                    TextBlock(text="Yes.", signature="dHNpZw==", provider="google"),
                ],
            ),
        ],
    )
    contents = body(request)["contents"]
    assert contents == [
        {
            "role": "user",
            "parts": [
                {"text": "what is this?"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {
                    "fileData": {
                        "mimeType": "application/pdf",
                        "fileUri": "https://example.com/a.pdf",
                    }
                },
            ],
        },
        {"role": "model", "parts": [{"text": "A logo."}]},
        {
            "role": "model",
            "parts": [
                {"text": "Summary of thoughts", "thought": True, "thoughtSignature": "Z3NpZw=="},
                {"text": "unsigned thought", "thought": True},
                {"text": "Yes.", "thoughtSignature": "dHNpZw=="},
            ],
        },
    ]


def test_a_text_signature_from_another_provider_is_not_sent():
    request = Request(
        model="gemini-3-pro-preview",
        messages=[
            Message(role="user", content=[TextBlock(text="q")]),
            Message(role="assistant", provider="vertex-proxy", content=[TextBlock(text="a", signature="b3RoZXI=", provider="vertex-proxy")]),
        ],
    )  # fmt: skip
    assert body(request)["contents"][1] == {"role": "model", "parts": [{"text": "a"}]}


def test_provider_data_passthrough():
    request = hi(
        provider_data={
            "google": {
                "safetySettings": [
                    {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}
                ],
                "generationConfig": {"temperature": 0.2},
            }
        }
    )
    b = body(request)
    assert b["safetySettings"] == [
        {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}
    ]
    assert b["generationConfig"] == {
        "maxOutputTokens": 4096,
        "thinkingConfig": {"thinkingBudget": 0},
        "temperature": 0.2,
    }


# ------------------------------------------------------------------ schema translation


def test_schema_translation():
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "$defs": {
            "Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]},
            "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}},
        },
        "properties": {
            "kind": {"const": "shape"},
            "color": {"enum": ["red", "green", None]},
            "when": {"type": "string", "format": "date-time"},
            "email": {"type": "string", "format": "email"},
            "at": {"$ref": "#/$defs/Point"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "size": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "both": {"allOf": [{"$ref": "#/$defs/Point"}, {"properties": {"z": {"type": "number"}}, "required": ["z"]}]},
            "list": {"$ref": "#/$defs/Node"},
            "count": {"type": ["integer", "null"], "minimum": 0},
        },
        "required": ["kind", "missing"],
    }  # fmt: skip
    point = {
        "type": "OBJECT",
        "properties": {"x": {"type": "NUMBER"}, "y": {"type": "NUMBER"}},
        "required": ["x", "y"],
    }
    assert to_gemini_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "kind": {"enum": ["shape"], "type": "STRING"},
            "color": {"enum": ["red", "green"], "type": "STRING", "nullable": True},
            "when": {"format": "date-time", "type": "STRING"},
            "email": {"type": "STRING"},
            "at": point,
            "tags": {"minItems": 1, "type": "ARRAY", "items": {"type": "STRING"}},
            "size": {"type": "INTEGER", "nullable": True},
            "either": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
            "both": {
                "type": "OBJECT",
                "properties": {
                    "x": {"type": "NUMBER"},
                    "y": {"type": "NUMBER"},
                    "z": {"type": "NUMBER"},
                },
                "required": ["x", "y", "z"],
            },
            "list": {"type": "OBJECT", "properties": {"next": {"type": "OBJECT"}}},
            "count": {"minimum": 0, "type": "INTEGER", "nullable": True},
        },
        "required": ["kind"],
    }
