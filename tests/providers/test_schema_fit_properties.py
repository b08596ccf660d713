"""The properties tying providers/schema_fit to the fake provider's rules
(tests/fakes/schema_rules.py, written apart, as strict as the real APIs): for
any JSON value and any generated schema, fit_schema either returns what the
codec sends and the fake accepts, or raises SchemaUnfit, and nothing else; it
never changes the user's schema, and gives the same answer twice."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.schema_fit import SchemaUnfit, fit_schema
from tests.providers.test_schema_fit import APIS, RULES, sent, wire_schema

_KEYWORDS = [
    "type", "properties", "required", "items", "prefixItems", "additionalProperties", "anyOf",
    "oneOf", "allOf", "not", "enum", "const", "$ref", "$defs", "definitions", "minimum",
    "maximum", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
    "description", "title", "default", "nullable", "if", "then", "else",
]  # fmt: skip
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
_WORDS = ["string", "object", "a", "#", "#/$defs/A"]
_keys = st.sampled_from(_KEYWORDS) | st.sampled_from(_WORDS) | st.text(max_size=6)
json_values = st.recursive(
    _scalars | st.sampled_from(_WORDS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=40,
)

_NAMES = ["a", "b", "c", "d"]
_leaf = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", "boolean", "null"])},
    optional={
        "description": st.text(max_size=10),
        "minimum": st.integers(-5, 5),
        "maxLength": st.integers(0, 9),
        "minItems": st.integers(0, 3),
        "format": st.sampled_from(["date-time", "email", "uri", "int32", "regex"]),
        "pattern": st.sampled_from(["^a", r"^(a)\1$", r"\bx", "a{2,300}"]),
        "enum": st.lists(st.one_of(st.text(max_size=3), st.integers(-3, 3), st.none(), st.booleans()), min_size=1, max_size=4),
        "const": _scalars,
        "default": _scalars,
        "title": st.text(max_size=5),
        "nullable": st.booleans(),
    },
)
_refs = st.sampled_from([{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}, {"$ref": "#"}, {"$ref": "#/definitions/C"}])


def _compound(child: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    props = st.dictionaries(st.sampled_from(_NAMES), child, max_size=4)
    return st.one_of(
        st.builds(
            lambda p, req, extra, kind: {
                **({"type": kind} if kind else {}),
                "properties": p,
                **({"required": [n for n in p if n in req]} if req else {}),
                **({"additionalProperties": extra} if extra is not None else {}),
            },
            props,
            st.lists(st.sampled_from(_NAMES), unique=True),
            st.none() | st.booleans() | child,
            st.sampled_from([None, "object", ["object", "null"]]),
        ),
        st.builds(lambda i, n: {"type": "array", "items": i, **n}, child, st.fixed_dictionaries({}, optional={"minItems": st.integers(0, 3), "maxItems": st.integers(0, 9)})),
        st.builds(lambda t: {"type": "array", "prefixItems": t}, st.lists(child, min_size=1, max_size=3)),
        st.builds(lambda t: {"type": "array", "items": t}, st.lists(child, min_size=1, max_size=3)),
        st.builds(lambda k, bs: {k: bs}, st.sampled_from(["anyOf", "oneOf", "allOf"]), st.lists(child, min_size=1, max_size=3)),
        st.builds(lambda bs, d: {"anyOf": bs, "description": d, "type": "object"}, st.lists(child, min_size=1, max_size=2), st.text(max_size=4)),
        st.builds(lambda n: {"type": "string", "not": n}, child),
        st.builds(lambda r, d: {**r, "description": d}, _refs, st.text(max_size=4)),
        st.builds(lambda i, t: {"if": i, "then": t}, child, child),
    )


schemas = st.recursive(_leaf | _refs | st.booleans(), _compound, max_leaves=12)
# half the roots are objects, as OpenAI wants them
roots = schemas | st.builds(
    lambda p, req: {"type": "object", "properties": p, "required": [n for n in p if n in req]},
    st.dictionaries(st.sampled_from(_NAMES), schemas, min_size=1, max_size=3),
    st.lists(st.sampled_from(_NAMES), unique=True),
)
documents = st.builds(
    lambda root, a, b, c: {**root, "$defs": {"A": a, "B": b}, "definitions": {"C": c}}
    if isinstance(root, dict)
    else root,
    roots,
    schemas,
    schemas,
    schemas,
)


def fits_or_is_refused(schema: Any) -> None:
    """For every API: SchemaUnfit, or a schema the codec sends and the fake takes."""
    before = copy.deepcopy(schema) if _copyable(schema) else None
    for api, subset, _provider, model in APIS:
        try:
            fitted = fit_schema(api, schema, gemini_subset=subset)  # type: ignore[arg-type]
        except SchemaUnfit as e:
            assert e.path == "" or e.path.startswith("/"), e
            assert str(e) == f"schema{e.path}: {e.why}" and e.why
            continue
        body = sent(api, subset, model, schema)
        assert wire_schema(api, body) == (fitted.schema, fitted.strict)
        problem = RULES[api](body)
        assert problem is None, (api, subset, problem, json.dumps(fitted.schema)[:2000])
        assert all(isinstance(p, str) and (p == "" or p.startswith("/")) for p in fitted.dropped)
        assert fit_schema(api, schema, gemini_subset=subset) == fitted  # deterministic  # type: ignore[arg-type]
    if before is not None:
        assert schema == before  # the user's schema is never changed


def _copyable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_any_json_value_fits_or_is_refused(value):
    fits_or_is_refused(value)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents)
def test_any_generated_schema_fits_what_the_fake_takes_or_is_refused(schema):
    fits_or_is_refused(schema)


_plain_leaf = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", "boolean"])},
    optional={"description": st.text(max_size=10), "enum": st.just(["x", "y"])},
).map(lambda s: {**s, "type": "string"} if "enum" in s else s)
plain = st.recursive(
    _plain_leaf,
    lambda child: st.builds(
        lambda p, req: {"type": "object", "properties": p, "required": [n for n in p if n in req]},
        st.dictionaries(st.sampled_from(_NAMES), child, min_size=1, max_size=3),
        st.lists(st.sampled_from(_NAMES), unique=True),
    )
    | st.builds(lambda i: {"type": "array", "items": i}, child),
    max_leaves=10,
).map(lambda s: s if s["type"] == "object" else {"type": "object", "properties": {"v": s}, "required": ["v"]})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain)
def test_a_plain_schema_fits_every_api_and_openai_strictly(schema):
    fits_or_is_refused(schema)
    for api, subset, _provider, _model in APIS:
        fitted = fit_schema(api, schema, gemini_subset=subset)  # never refused
        assert fitted.dropped == ()
        if api in ("chat", "responses"):
            assert fitted.strict is True
