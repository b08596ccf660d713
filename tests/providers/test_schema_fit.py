"""providers/schema_fit: a structured answer's JSON Schema fitted to each wire
API's subset, or refused naming the place and the keyword.

Each API's adaptations and refusals, what is not a schema and hostile values,
and the four codecs sending the fitted schema (which the fake provider, as
strict as the real APIs, takes). The properties tying fit_schema to the fake's
rules over generated schemas: test_schema_fit_properties.py."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
import trio

from providers.registry import codec_for, make_provider
from providers.schema_fit import MAX_BYTES, FittedSchema, SchemaUnfit, fit_schema
from providers.settings import settings_for
from providers.types import Message, ProviderFailure, Request, TextBlock
from tests.fakes import rules
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider

ENV = {"ANTHROPIC_API_KEY": "k-a", "OPENAI_API_KEY": "k-o", "GEMINI_API_KEY": "k-g"}
V1 = "https://generativelanguage.googleapis.com/v1"
# (api, gemini_subset, provider, model)
APIS = [
    ("chat", False, "openai", "gpt-4o"),
    ("responses", False, "openai", "gpt-5"),
    ("messages", False, "anthropic", "claude-sonnet-4-5"),
    ("generate_content", False, "google", "gemini-2.5-flash"),
    ("generate_content", True, "google", "gemini-2.5-flash"),
]
RULES = {
    "chat": rules.openai_chat,
    "responses": rules.openai_responses,
    "messages": rules.anthropic,
    "generate_content": rules.google,
}


def codec(api: str, subset: bool, provider: str) -> Any:
    base = V1 if subset else None
    return codec_for(settings_for(provider, env=ENV, api=api, base_url=base))  # type: ignore[arg-type]


CODECS = {(api, subset): codec(api, subset, provider) for api, subset, provider, _ in APIS}


def request(model: str, schema: Any) -> Request:
    user = Message(role="user", content=[TextBlock(text="who?")])
    return Request(model=model, messages=[user], response_schema=schema)


def sent(api: str, subset: bool, model: str, schema: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(CODECS[api, subset].encode(request(model, schema), stream=True).body)
    return body


def wire_schema(api: str, body: dict[str, Any]) -> tuple[Any, Any]:
    """(the schema a request carries, its strict flag)."""
    if api == "chat":
        spec = body["response_format"]["json_schema"]
        return spec["schema"], spec["strict"]
    if api == "responses":
        fmt = body["text"]["format"]
        return fmt["schema"], fmt["strict"]
    if api == "messages":
        return body["output_config"]["format"]["schema"], True
    gen = body["generationConfig"]
    assert gen["responseMimeType"] == "application/json"
    return gen.get("responseJsonSchema", gen.get("responseSchema")), True


def obj(required: bool = True, **props: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = list(props)
    return out


def unfit(api: str, schema: Any, *, subset: bool = False) -> SchemaUnfit:
    with pytest.raises(SchemaUnfit) as caught:
        fit_schema(api, schema, gemini_subset=subset)  # type: ignore[arg-type]
    return caught.value


# ------------------------------------------------------------------ OpenAI


def test_openai_strict_closes_objects_and_makes_optional_nullable():
    schema = obj(required=False, name={"type": "string"}, tags={"type": "array", "items": obj(k={"type": "integer"})})
    schema["required"] = ["tags"]
    fitted = fit_schema("chat", schema)
    want = {
        "type": "object",
        "properties": {
            "name": {"type": ["string", "null"]},
            "tags": {
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"type": "integer"}},
                          "required": ["k"], "additionalProperties": False},
            },
        },
        "required": ["name", "tags"],
        "additionalProperties": False,
    }  # fmt: skip
    assert fitted == FittedSchema(want, True, ())


def test_openai_drops_what_strict_mode_refuses_and_says_it_in_the_description():
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **obj(
            code={"type": "string", "minLength": 3, "pattern": "^[a-z]+$", "description": "a code"},
            site={"type": "string", "format": "uri"},
            when={"type": "string", "format": "date-time"},
            n={"type": "integer", "default": 3, "minimum": 0},
            tags={"type": "array", "items": {"type": "string"}, "uniqueItems": True, "maxItems": 5},
            one={"oneOf": [{"type": "string"}, {"type": "integer"}]},
            both={"allOf": [obj(a={"type": "string"}), obj(b={"type": "string"})]},
            pair={"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            point={"$ref": "#/definitions/Point", "description": "where"},
        ),
        "definitions": {"Point": obj(x={"type": "number"}, y={"type": "number"})},
    }
    fitted = fit_schema("responses", schema)
    assert fitted.strict is True
    props = fitted.schema["properties"]
    assert props["code"] == {"type": "string", "pattern": "^[a-z]+$", "description": "a code\n\n{minLength: 3}"}
    assert props["site"] == {"type": "string", "description": '{format: "uri"}'}
    assert props["when"] == {"type": "string", "format": "date-time"}
    assert props["n"] == {"type": "integer", "minimum": 0, "description": "{default: 3}"}
    assert props["tags"]["maxItems"] == 5 and "uniqueItems" not in props["tags"]
    assert props["one"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert props["both"]["properties"].keys() == {"a", "b"} and props["both"]["required"] == ["a", "b"]
    assert props["pair"]["items"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert props["point"] == {"$ref": "#/$defs/Point"}  # nothing beside a $ref
    assert fitted.schema["$defs"]["Point"]["additionalProperties"] is False
    assert set(fitted.dropped) == {
        "/properties/code/minLength", "/properties/site/format", "/properties/n/default",
        "/properties/tags/uniqueItems", "/properties/one/oneOf", "/properties/both/allOf",
        "/properties/pair/prefixItems", "/properties/point/description",
    }  # fmt: skip
    assert rules.openai_responses({"text": {"format": {"type": "json_schema", "name": "a", **fitted._asdict()}}}) is None


def test_openai_sends_non_strict_what_strict_mode_cannot_express():
    open_map = obj(counts={"type": "object", "additionalProperties": {"type": "integer"}})
    anything = obj(value={"description": "any JSON value"})
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        deep = obj(x=deep)
    for schema in (open_map, anything, deep):
        fitted = fit_schema("chat", schema)
        assert fitted.strict is False
        assert fitted.schema["type"] == "object"
    # ten levels still strict
    assert fit_schema("chat", deep["properties"]["x"]).strict is True


def test_openai_takes_recursion_strictly():
    node = obj(required=False, value={"type": "string"}, children={"type": "array", "items": {"$ref": "#"}})
    fitted = fit_schema("chat", node)
    assert fitted.strict is True
    assert fitted.schema["properties"]["children"]["type"] == ["array", "null"]
    assert fitted.schema["properties"]["children"]["items"] == {"$ref": "#"}


@pytest.mark.parametrize(
    ("schema", "got"),
    [
        ({"type": "array", "items": {"type": "string"}}, "array"),
        ({"type": "string"}, "string"),
        ({"anyOf": [obj(a={"type": "string"}), obj(b={"type": "string"})]}, "anyOf"),
        ({"description": "anything"}, "any value"),
    ],
)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_wants_an_object_root_and_says_to_wrap_it(api, schema, got):
    e = unfit(api, schema)
    assert e.path == ""
    assert "OpenAI" in e.why and f"(got {got})" in e.why and "wrap it in one" in e.why
    assert str(e) == f"schema: {e.why}"


def test_a_root_ref_is_inlined():
    schema = {"$ref": "#/$defs/Answer", "$defs": {"Answer": obj(a={"type": "string"})}}
    fitted = fit_schema("chat", schema)
    assert fitted.strict and fitted.schema["properties"] == {"a": {"type": "string"}}


# ------------------------------------------------------------------ Anthropic


def test_anthropic_moves_unsupported_constraints_into_the_description():
    schema = obj(
        age={"type": "integer", "minimum": 0, "maximum": 150, "description": "years"},
        name={"type": "string", "minLength": 1, "maxLength": 20},
        mail={"type": "string", "format": "email"},
        re={"type": "string", "format": "regex"},
        phone={"type": "string", "pattern": r"^\d{3}-\d{4}$"},
        word={"type": "string", "pattern": r"^(\w+) \1$"},
        few={"type": "array", "items": {"type": "string"}, "minItems": 1},
        many={"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 9},
    )
    fitted = fit_schema("messages", schema)
    props = fitted.schema["properties"]
    assert props["age"] == {"type": "integer", "description": "years\n\n{minimum: 0, maximum: 150}"}
    assert props["name"] == {"type": "string", "description": "{minLength: 1, maxLength: 20}"}
    assert props["mail"] == {"type": "string", "format": "email"}
    assert props["re"] == {"type": "string", "description": '{format: "regex"}'}
    assert props["phone"]["pattern"] == r"^\d{3}-\d{4}$"
    assert "pattern" not in props["word"] and "\\\\1" in props["word"]["description"]
    assert props["few"]["minItems"] == 1
    assert props["many"] == {"type": "array", "items": {"type": "string"}, "description": "{maxItems: 9, minItems: 2}"}
    assert fitted.schema["additionalProperties"] is False
    assert set(fitted.dropped) == {
        "/properties/age/minimum", "/properties/age/maximum", "/properties/name/minLength",
        "/properties/name/maxLength", "/properties/re/format", "/properties/word/pattern",
        "/properties/many/minItems", "/properties/many/maxItems",
    }  # fmt: skip


def test_anthropic_unions_enums_and_objects():
    schema = obj(
        required=False,
        one={"oneOf": [{"type": "string"}, {"type": "integer"}]},
        typed={"type": "object", "anyOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
                                           {"properties": {"b": {"type": "string"}}, "required": ["b"]}]},
        kind={"type": ["string", "null"], "enum": ["a", "b", None]},
        shape={"enum": [{"x": 1}, {"x": 2}], "type": "object", "properties": {"x": {"type": "integer"}}},
        extra={**obj(a={"type": "string"}), "additionalProperties": {"type": "string"}},
    )  # fmt: skip
    fitted = fit_schema("messages", schema)
    props = fitted.schema["properties"]
    assert props["one"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    # nothing beside anyOf: the siblings went into each branch
    assert props["typed"] == {
        "anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False},
            {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"], "additionalProperties": False},
        ]
    }
    assert props["kind"] == {"enum": ["a", "b", None]}
    assert "enum" not in props["shape"] and props["shape"]["additionalProperties"] is False
    assert props["extra"]["additionalProperties"] is False
    assert {"/properties/one/oneOf", "/properties/shape/enum", "/properties/extra/additionalProperties"} <= set(fitted.dropped)
    assert fitted.schema.get("required") is None  # optional stays optional (no nullable needed)


def test_anthropic_takes_any_root():
    fitted = fit_schema("messages", {"type": "array", "items": obj(a={"type": "string"})})
    assert fitted.schema["items"]["additionalProperties"] is False


@pytest.mark.parametrize(
    ("schema", "path", "words"),
    [
        (obj(meta={"type": "object"}), "/properties/meta", "no 'properties'"),
        (obj(counts={"type": "object", "additionalProperties": {"type": "integer"}}), "/properties/counts", "map of any keys"),
        (obj(value={}), "/properties/value", "any JSON value"),
        (obj(value={"description": "x"}), "/properties/value", "give it a 'type'"),
        (obj(list={"type": "array"}), "/properties/list", "needs its 'items'"),
        (
            {**obj(root={"$ref": "#/$defs/Node"}), "$defs": {"Node": obj(required=False, next={"$ref": "#/$defs/Node"})}},
            "/$defs/Node",
            "'$ref' cycle Node -> Node",
        ),
        (obj(required=False, children={"type": "array", "items": {"$ref": "#"}}), "", "cycle # -> #"),
        (obj(required=False, **{f"p{i}": {"type": "string"} for i in range(25)}), "", "25 optional properties"),
        (obj(**{f"p{i}": {"type": ["string", "null"]} for i in range(17)}), "", "17 values with a union type"),
        (obj(k={"type": "string", "enum": [1, 2]}), "/properties/k/enum", "no value of 'enum' is a string"),
    ],
)
def test_anthropic_refuses_what_claude_cannot_take(schema, path, words):
    e = unfit("messages", schema)
    assert (e.path, words in e.why, "Anthropic" in e.why or "'" in e.why) == (path, True, True), e


def test_anthropic_recursion_through_all_of_or_any_of_is_refused_not_looped():
    node = {"type": "object", "properties": {"next": {"allOf": [{"$ref": "#/$defs/N"}], "description": "x"}}}
    e = unfit("messages", {"$ref": "#/$defs/N", "$defs": {"N": node}})
    assert "recursive" in e.why or "cycle" in e.why
    split = {"type": "object", "properties": {"n": {"type": "object", "anyOf": [{"$ref": "#/$defs/N"}]}}}
    e = unfit("messages", {**split, "$defs": {"N": split}})
    assert "recursive" in e.why


# ------------------------------------------------------------------ Gemini


def test_gemini_json_schema_keeps_its_keywords_and_drops_the_rest():
    schema = {
        **obj(
            n={"type": "integer", "minimum": 1, "maximum": 9, "multipleOf": 2, "exclusiveMaximum": 10},
            s={"type": "string", "minLength": 2, "pattern": "^a", "format": "date"},
            pick={"const": "x"},
            maybe={"enum": ["a", None]},
            flag={"const": True},
            pair={"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            map={"type": "object", "additionalProperties": {"type": "integer"}},
            at={"$ref": "#/definitions/P", "description": "the place"},
        ),
        "definitions": {"P": obj(x={"type": "number"})},
    }
    fitted = fit_schema("generate_content", schema)
    props = fitted.schema["properties"]
    assert props["n"] == {"type": "integer", "minimum": 1, "maximum": 9, "description": "{multipleOf: 2, exclusiveMaximum: 10}"}
    assert props["s"] == {"type": "string", "format": "date", "description": '{minLength: 2, pattern: "^a"}'}
    assert props["pick"] == {"enum": ["x"]}
    assert props["maybe"] == {"enum": ["a"], "type": ["string", "null"]}
    assert props["flag"] == {"description": "{const: true}"}
    assert props["pair"] == {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}
    assert props["map"]["additionalProperties"] == {"type": "integer"}
    assert props["at"] == {"$ref": "#/$defs/P"} and "P" in fitted.schema["$defs"]
    assert "definitions" not in fitted.schema


def test_gemini_json_schema_recursion_only_through_optional_properties():
    optional = obj(required=False, v={"type": "string"}, next={"$ref": "#/$defs/N"})
    fitted = fit_schema("generate_content", {**obj(n={"$ref": "#/$defs/N"}), "$defs": {"N": optional}})
    assert fitted.schema["$defs"]["N"]["properties"]["next"] == {"$ref": "#/$defs/N"}
    required = obj(v={"type": "string"}, next={"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]})
    e = unfit("generate_content", {**obj(n={"$ref": "#/$defs/N"}), "$defs": {"N": required}})
    assert e.path == "/$defs/N" and "not required" in e.why


def test_gemini_subset_is_the_openapi_schema():
    schema = obj(
        required=False,
        name={"type": "string", "minLength": 1, "format": "email"},
        when={"type": ["string", "null"], "format": "date-time"},
        n={"type": "integer", "enum": [1, 2, 3]},
        kind={"enum": ["a", "b", None]},
        either={"anyOf": [{"type": "string"}, {"type": "null"}]},
        sub={**obj(a={"type": "string"}), "additionalProperties": False},
    )
    fitted = fit_schema("generate_content", schema, gemini_subset=True)
    assert fitted.schema == {
        "type": "OBJECT",
        "properties": {
            "name": {"minLength": 1, "description": '{format: "email"}', "type": "STRING"},
            "when": {"format": "date-time", "type": "STRING", "nullable": True},
            "n": {"description": "{enum: [1, 2, 3]}", "type": "INTEGER"},
            "kind": {"enum": ["a", "b"], "type": "STRING", "nullable": True},
            "either": {"type": "STRING", "nullable": True},
            "sub": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": ["a"]},
        },
    }
    assert {"/properties/n/enum", "/properties/sub/additionalProperties", "/properties/name/format"} <= set(fitted.dropped)


@pytest.mark.parametrize(
    ("schema", "path", "words"),
    [
        (obj(meta={"type": "object"}), "/properties/meta", "no 'properties'"),
        (obj(m={"type": "object", "additionalProperties": {"type": "string"}}), "/properties/m", "every key listed"),
        (obj(v={}), "/properties/v", "any JSON value"),
        (obj(v={"type": "null"}), "/properties/v", "only be null"),
        (obj(v={"anyOf": [{"type": "null"}]}), "/properties/v", "only be null"),
        ({**obj(v={"$ref": "#/$defs/N"}), "$defs": {"N": {"type": "null"}}}, "/$defs/N", "only be null"),
        (obj(required=False, kids={"type": "array", "items": {"$ref": "#"}}), "", "has no '$ref'"),
    ],
)
def test_gemini_subset_refusals(schema, path, words):
    e = unfit("generate_content", schema, subset=True)
    assert (e.path, words in e.why) == (path, True), e


def test_gemini_subset_inlining_is_bounded():
    # each definition uses the next twice: 2**40 nodes once inlined
    defs = {f"D{i}": obj(a={"$ref": f"#/$defs/D{i + 1}"}, b={"$ref": f"#/$defs/D{i + 1}"}) for i in range(40)}
    defs["D40"] = {"type": "string"}
    schema = {**obj(root={"$ref": "#/$defs/D0"}), "$defs": defs}
    assert fit_schema("generate_content", schema).strict  # JSON Schema keeps the $refs
    e = unfit("generate_content", schema, subset=True)  # refused, not expanded
    assert "too large" in e.why


# ------------------------------------------------------------------ not a schema, hostile values

NOT_A_SCHEMA = [
    ([], "", "is an object, not an array"),
    ("string", "", "not a string"),
    (None, "", "not null"),
    ({"type": "strnig"}, "/type", "'type' must be one of"),
    ({"type": ["string", "string"]}, "/type", "without repeats"),
    ({"type": []}, "/type", "'type' must be"),
    ({"properties": ["a"]}, "/properties", "'properties' must be an object"),
    ({"properties": {"a": 3}}, "/properties/a", "a schema is an object or a boolean"),
    ({"required": "a"}, "/required", "'required' must be an array of property names"),
    ({"required": ["a", 1]}, "/required", "property names"),
    ({"required": ["a", "a"]}, "/required", "each once"),
    ({"$ref": "#/$defs/Nope"}, "/$ref", "points nowhere"),
    ({"$ref": "https://example.com/s.json"}, "/$ref", "points outside the schema"),
    ({"$ref": 5}, "/$ref", "'$ref' is a string"),
    ({"$ref": "#/required", "required": []}, "/$ref", "not a schema"),
    ({"anyOf": []}, "/anyOf", "non-empty array"),
    ({"items": []}, "/items", "'items' must be"),
    ({"enum": "a"}, "/enum", "'enum' must be an array"),
    ({"minLength": -1}, "/minLength", "0 or more"),
    ({"maxItems": 1.5}, "/maxItems", "whole number"),
    ({"minimum": "0"}, "/minimum", "a number"),
    ({"multipleOf": 0}, "/multipleOf", "above 0"),
    ({"description": 5}, "/description", "a string"),
    ({"$dynamicRef": "#meta"}, "/$dynamicRef", "use '$ref'"),
    ({"properties": {"a/b": {"type": "bogus"}}}, "/properties/a~1b/type", "'type' must be"),
    # a keyword there with a null value is wrong too (found by the properties)
    ({"type": None}, "/type", "'type' must be"),
    ({"required": None}, "/required", "property names"),
    ({"items": None}, "/items", "a schema is an object or a boolean, not null"),
    ({"$ref": None}, "/$ref", "'$ref' is a string, not null"),
    ({"minimum": None}, "/minimum", "a number"),
    ({"propertyOrdering": "ab"}, "/propertyOrdering", "an array of property names"),
]


@pytest.mark.parametrize(("api", "subset", "_provider", "_model"), APIS)
@pytest.mark.parametrize(("schema", "path", "words"), NOT_A_SCHEMA)
def test_what_is_not_a_json_schema_is_refused_for_every_api(api, subset, _provider, _model, schema, path, words):
    e = unfit(api, schema, subset=subset)
    assert (e.path, words in e.why) == (path, True), e
    assert str(e) == f"schema{path}: {e.why}"


def nested(depth: int, kind: str) -> Any:
    value: Any = {"type": "string"}
    for _ in range(depth):
        value = {"items": value} if kind == "dict" else [value]
    return value


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (nested(10_000, "dict"), "nested more than 64 levels"),
        ({"anyOf": nested(10_000, "list")}, "nested more than 64 levels"),
        ({"description": "x" * (MAX_BYTES + 1)}, "over 1000000 bytes"),
        ({"enum": ["é" * 600_000]}, "over 1000000 bytes"),  # over in bytes, not characters
        ({"properties": {str(i): {} for i in range(200_000)}}, "over 1000000 bytes"),
        ({"minimum": math.nan}, "not a JSON number"),
        ({"maximum": math.inf}, "not a JSON number"),
        ({1: {"type": "string"}}, "not a string"),
        ({"enum": ("a", "b")}, "tuple is not a JSON value"),
        ({"enum": [{"a"}]}, "set is not a JSON value"),
        ({"description": b"x"}, "bytes is not a JSON value"),
        ({"const": object()}, "object is not a JSON value"),
        ({"const": 10**5000}, "not writable as JSON"),
    ],
)
@pytest.mark.parametrize(("api", "subset", "_provider", "_model"), APIS)
def test_hostile_values_are_refused_without_another_exception(api, subset, _provider, _model, value, words):
    e = unfit(api, value, subset=subset)
    assert words in e.why, e


def test_a_schema_at_the_depth_limit_fits():
    fine = nested(31, "dict")  # 32 JSON levels of items: within 64
    assert fit_schema("generate_content", fine).schema == fine


# ------------------------------------------------------------------ the codecs


NEEDS_FITTING = {
    "type": "object",
    "title": "Person record",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "nick": {"type": "string"},
        "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
    },
    "required": ["name", "age", "kind"],
}


@pytest.mark.parametrize(("api", "subset", "_provider", "model"), APIS)
def test_each_codec_sends_the_fitted_schema_and_the_fake_takes_it(api, subset, _provider, model):
    body = sent(api, subset, model, NEEDS_FITTING)
    schema, strict = wire_schema(api, body)
    fitted = fit_schema(api, NEEDS_FITTING, gemini_subset=subset)
    assert (schema, strict) == (fitted.schema, fitted.strict)
    assert schema != NEEDS_FITTING  # it needed fitting for every API
    assert RULES[api](body) is None
    assert RULES[api](raw_body(api, subset, body)) is not None  # and the fake refuses it unfitted
    if api in ("chat", "responses"):
        name = body["response_format"]["json_schema"]["name"] if api == "chat" else body["text"]["format"]["name"]
        assert name == "Person_record" and strict is True
    if subset:
        assert "responseJsonSchema" not in body["generationConfig"]


def raw_body(api: str, subset: bool, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the schema as the user gave it."""
    raw = copy.deepcopy(body)
    if api == "chat":
        raw["response_format"]["json_schema"]["schema"] = NEEDS_FITTING
    elif api == "responses":
        raw["text"]["format"]["schema"] = NEEDS_FITTING
    elif api == "messages":
        raw["output_config"]["format"]["schema"] = NEEDS_FITTING
    else:
        raw["generationConfig"]["responseSchema" if subset else "responseJsonSchema"] = NEEDS_FITTING
    return raw


@pytest.mark.parametrize(("api", "subset", "_provider", "model"), APIS)
def test_a_schema_that_cannot_be_fitted_fails_the_call_as_an_invalid_request(api, subset, _provider, model):
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}
    with pytest.raises(ProviderFailure) as caught:
        CODECS[api, subset].encode(request(model, schema), stream=False)
    error = caught.value.error
    assert error.category == "invalid_request" and not error.retryable
    assert "schema/properties/a/$ref" in error.message and "points nowhere" in error.message


def test_the_gemini_codec_says_whether_it_speaks_the_subset():
    assert CODECS["generate_content", True].schema_subset is True
    assert CODECS["generate_content", False].schema_subset is False


@pytest.mark.parametrize(("api", "subset", "provider", "model"), APIS)
async def test_the_fake_provider_answers_a_fitted_request_over_loopback(fake_provider: FakeProvider, api, subset, provider, model):
    path = {"messages": "", "generate_content": "/v1" if subset else "/v1beta"}.get(api, "/v1")
    base = fake_provider.base_url + path
    client = make_provider(settings_for(provider, env=ENV, api=api, base_url=base))  # type: ignore[arg-type]
    try:
        fake_provider.push(Reply(text='{"name": "Ada", "age": 36, "kind": "a"}'))
        with trio.fail_after(30):
            response = await client.complete(request(model, NEEDS_FITTING))
    finally:
        await client.aclose()
    assert response.blocks == [TextBlock(text='{"name": "Ada", "age": 36, "kind": "a"}')]
    schema, _strict = wire_schema(api, fake_provider.requests[-1].json)
    assert schema == fit_schema(api, NEEDS_FITTING, gemini_subset=subset).schema
