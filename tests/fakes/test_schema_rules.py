"""The fake provider refuses a structured answer's schema where the real APIs
do (tests/fakes/schema_rules.py, wired in tests/fakes/rules.py): each rule on
a body built by hand, then the 400 as each API's error body over loopback."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import trio

from tests.fakes import rules, schema_rules
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider


def obj(required: bool = True, **props: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = list(props)
    return out


def chat(schema: Any, *, strict: bool = True, name: str = "answer") -> dict[str, Any]:
    fmt = {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}
    return {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "response_format": fmt}


def responses(schema: Any, *, strict: bool = True) -> dict[str, Any]:
    fmt = {"type": "json_schema", "name": "answer", "schema": schema, "strict": strict}
    return {"model": "gpt-5", "input": [], "text": {"format": fmt}}


def claude(schema: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        "output_config": {"format": {"type": "json_schema", "schema": schema}},
    }


def gemini(*, json_schema: Any = None, subset: Any = None, mime: str | None = "application/json") -> dict[str, Any]:
    gen: dict[str, Any] = {"maxOutputTokens": 100}
    if mime is not None:
        gen["responseMimeType"] = mime
    if json_schema is not None:
        gen["responseJsonSchema"] = json_schema
    if subset is not None:
        gen["responseSchema"] = subset
    return {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": gen}


GOOD = obj(name={"type": "string"}, tags={"type": "array", "items": {"type": "string"}})


def test_bodies_without_a_schema_pass_and_a_good_schema_passes_every_api():
    assert schema_rules.openai_chat({"messages": []}) is None
    assert schema_rules.openai_responses({"input": []}) is None
    assert schema_rules.anthropic({"messages": []}) is None
    assert schema_rules.google({"contents": []}) is None
    assert rules.openai_chat(chat(GOOD)) is None
    assert rules.openai_responses(responses(GOOD)) is None
    assert rules.anthropic(claude(GOOD)) is None
    assert rules.google(gemini(json_schema=GOOD)) is None
    subset = {"type": "OBJECT", "properties": {"name": {"type": "STRING"}}, "required": ["name"]}
    assert rules.google(gemini(subset=subset)) is None


# ------------------------------------------------------------------ OpenAI


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            "In context=(), 'additionalProperties' is required to be supplied and to be false.",
        ),
        (
            obj(required=False, a={"type": "string"}),
            "'required' is required to be supplied and to be an array including every key in "
            "properties. Missing 'a'.",
        ),
        (
            obj(a=obj(b={"type": "string", "default": "x"})),
            "In context=('properties', 'a', 'properties', 'b'), 'default' is not permitted.",
        ),
        (
            {**obj(a={"$ref": "#/$defs/A", "description": "the a"}), "$defs": {"A": {"type": "string"}}},
            "In context=('properties', 'a'), $ref cannot have keywords {'description'}.",
        ),
        (obj(a={"description": "anything"}), "schema must have a 'type' key."),
        (obj(a={"type": "string", "minLength": 2}), "'minLength' is not permitted."),
        (obj(a={"type": "array", "items": {"type": "string"}, "uniqueItems": True}), "'uniqueItems' is not permitted."),
        (obj(a={"type": "string", "format": "uri"}), "'uri' is not a valid format"),
        ({"type": "array", "items": {"type": "string"}}, """schema must be a JSON Schema of 'type: "object"', got 'type: "array"'."""),
        ({"anyOf": [GOOD]}, """got 'type: "None"'"""),
    ],
)
def test_openai_strict_refusals_quote_its_400s(schema, words):
    for body, rule in ((chat(schema), rules.openai_chat), (responses(schema), rules.openai_responses)):
        problem = rule(body)
        assert problem is not None and words in problem, problem
        assert problem.startswith("Invalid schema for response_format 'answer': ")


def test_openai_non_strict_takes_any_schema_with_an_object_root():
    loose = {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}}
    assert rules.openai_chat(chat(loose, strict=False)) is None
    assert rules.openai_responses(responses(loose, strict=False)) is None
    assert "type: \"array\"" in (rules.openai_chat(chat({"type": "array"}, strict=False)) or "")


def test_openai_limits_nesting_and_names():
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        deep = obj(x=deep)
    assert "11 levels of nesting exceeds limit of 10." in (rules.openai_chat(chat(deep)) or "")
    wide = obj(**{f"p{i}": {"type": "string"} for i in range(5001)})
    assert "5001 parameters exceeds limit of 5000." in (rules.openai_chat(chat(wide)) or "")
    assert "does not match pattern" in (rules.openai_chat(chat(GOOD, name="an answer")) or "")
    # recursion is taken, and counted once
    node = {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]}},
            "required": ["next"], "additionalProperties": False}  # fmt: skip
    assert rules.openai_chat(chat({**obj(n={"$ref": "#/$defs/N"}), "$defs": {"N": node}})) is None


# ------------------------------------------------------------------ Anthropic


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (obj(n={"type": "integer", "minimum": 0}), "For 'integer' type, property 'minimum' is not supported"),
        (obj(a={"type": "array", "items": {"type": "string"}, "maxItems": 3}), "For 'array' type, property 'maxItems' is not supported"),
        (obj(a={"type": "array", "items": {"type": "string"}, "minItems": 2}), "'minItems' values other than 0 or 1 are not supported (got: 2)"),
        (obj(a={"type": "string", "maxLength": 9}), "For 'string' type, property 'maxLength' is not supported"),
        (obj(a={"oneOf": [{"type": "string"}, {"type": "integer"}]}), "Schema type 'oneOf' is not supported"),
        (obj(a={"type": "string", "not": {"const": "x"}}), "Schema keyword 'not' is not supported"),
        (obj(a={"type": "string", "anyOf": [{"type": "string"}, {"type": "null"}]}), "For 'anyOf', 'type' is not supported"),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, "'additionalProperties' must be explicitly set to false"),
        (obj(a={}), "Empty schema ({}) that accepts any JSON value is not supported."),
        (obj(a={"type": "array", "items": [{"type": "string"}]}), "Array types must be specified with a single object schema"),
        (obj(a={"type": ["string", "null"], "enum": ["face", None]}), "Enum value 'face' does not match declared type '[\"string\",\"null\"]'"),
        (obj(a={"type": "string", "pattern": r"^(\w+)\s\1$"}), "regex"),
        (
            {**obj(n={"$ref": "#/$defs/Node"}), "$defs": {"Node": obj(required=False, child={"$ref": "#/$defs/Node"})}},
            "Circular reference detected in schema definitions: Node -> Node",
        ),
        (obj(required=False, **{f"p{i}": {"type": "string"} for i in range(25)}), "Schemas contains too many optional parameters (25)"),
        (obj(**{f"p{i}": {"type": ["string", "null"]} for i in range(17)}), "too many parameters with union types (17 parameters"),
    ],
)
def test_anthropic_refusals_quote_its_400s(schema, words):
    problem = rules.anthropic(claude(schema))
    assert problem is not None and words in problem, problem
    assert problem.startswith("output_config.format.schema: ")


def test_anthropic_takes_its_subset():
    ok = obj(
        when={"type": "string", "format": "date-time"},
        code={"type": "string", "pattern": r"^\d{3}-\d{4}$"},
        some={"type": "array", "items": {"type": "integer"}, "minItems": 1},
        kind={"type": "string", "enum": ["a", "b"]},
        maybe={"anyOf": [{"type": "string"}, {"type": "null"}], "description": "words"},
        fixed={"const": "x"},
    )
    assert rules.anthropic(claude(ok)) is None
    assert rules.anthropic(claude({"type": "array", "items": {"type": "string"}})) is None


# ------------------------------------------------------------------ Gemini


def test_gemini_response_schema_is_the_openapi_subset():
    def problem(subset: Any, **kw: Any) -> str:
        return rules.google(gemini(subset=subset, **kw)) or ""

    assert 'Unknown name "additionalProperties" at \'generation_config.response_schema\': Cannot find field.' in problem(
        {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "additionalProperties": False}
    )
    assert "properties: should be non-empty for OBJECT type" in problem({"type": "OBJECT"})
    assert "Unknown name \"$ref\"" in problem({"type": "OBJECT", "properties": {"a": {"$ref": "#/x"}}})
    assert "items: missing field" in problem({"type": "ARRAY"})
    assert "enum" in problem({"type": "INTEGER", "enum": [1, 2]})
    assert "type.googleapis.com" in problem({"type": "string"})
    assert "format" in problem({"type": "STRING", "format": "email"})
    assert problem({"type": "STRING", "enum": ["a"]}, mime="text/x.enum") == ""


def test_gemini_mime_type_goes_with_the_schema():
    assert "must be application/json" in (rules.google(gemini(json_schema=GOOD, mime="text/plain")) or "")
    assert "must be application/json" in (rules.google(gemini(json_schema=GOOD, mime=None)) or "")
    assert "allowed mimetypes are `text/plain`, `application/json`" in (rules.google(gemini(mime="image/png")) or "")
    both = gemini(json_schema=GOOD, subset={"type": "STRING"})
    assert "cannot both be set" in (rules.google(both) or "")


def test_gemini_json_schema_keywords_refs_and_recursion():
    def problem(schema: Any) -> str:
        return rules.google(gemini(json_schema=schema)) or ""

    assert "'minLength' is not supported" in problem(obj(a={"type": "string", "minLength": 1}))
    assert "beside $ref" in problem({**obj(a={"$ref": "#/$defs/A", "description": "x"}), "$defs": {"A": {"type": "string"}}})
    assert "strings and numbers" in problem(obj(a={"enum": [True, False]}))
    node_req = obj(v={"type": "string"}, next={"$ref": "#/$defs/N"})
    assert "recursion through required properties only" in problem({"$ref": "#/$defs/N", "$defs": {"N": node_req}})
    node_opt = {**node_req, "required": ["v"]}
    assert problem({**obj(n={"$ref": "#/$defs/N"}), "$defs": {"N": node_opt}}) == ""
    assert problem({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}) == ""


# ------------------------------------------------------------------ over loopback


CASES = [
    ("/v1/chat/completions", chat(obj(a={"type": "string", "minLength": 2})), "error", "minLength"),
    ("/v1/responses", responses({"type": "array"}), "error", "type: \\\"object\\\""),
    ("/v1/messages", claude(obj(n={"type": "integer", "minimum": 0})), "error", "property 'minimum' is not supported"),
    ("/v1beta/models/gemini-2.5-flash:generateContent", gemini(subset={"type": "OBJECT"}), "error", "non-empty for OBJECT"),
]


@pytest.mark.parametrize(("path", "body", "key", "words"), CASES)
async def test_the_fake_answers_the_apis_400_to_a_schema_they_refuse(fake_provider: FakeProvider, path, body, key, words):
    fake_provider.push(Reply(text="never sent"))  # the refusal takes its place
    async with httpx.AsyncClient(base_url=fake_provider.base_url) as client:
        with trio.fail_after(30):
            answer = await client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
    assert answer.status_code == 400
    error = answer.json()[key]
    assert words in json.dumps(error)
    assert fake_provider.requests[-1].json == body
