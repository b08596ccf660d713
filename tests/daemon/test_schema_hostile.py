"""Hypothesis over ``agent.prompt {schema}`` and ``schema.save`` against the
real daemon: every value is taken (queued) or refused -32602 naming
``schema`` with nothing queued or stored; the daemon keeps answering. The
oracle is jsonschema's own meta-schema check, plus the documented bounds."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from protocol import INVALID_PARAMS
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Reply, Stall

KEYWORDS = [
    "type", "properties", "required", "items", "enum", "const", "anyOf", "oneOf", "allOf", "not",
    "$ref", "$defs", "additionalProperties", "minimum", "maximum", "pattern", "format",
    "minItems", "maxLength", "description", "title", "$schema", "prefixItems", "if", "then",
]
_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
    st.sampled_from(["object", "string", "integer", "array", "nope", "#/$defs/a", "#", "[", "^a+$"]),
)
_schema_like = st.recursive(
    _leaf,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(KEYWORDS) | st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
_schemas = st.dictionaries(st.sampled_from(KEYWORDS), _schema_like, max_size=5) | _schema_like


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _taken(schema: Any) -> bool:
    """Would the daemon take it (docs/protocol.md, "Structured answers")?"""
    if schema is None:
        return True  # no schema asked
    if isinstance(schema, str):
        return False  # a name: none is saved here
    if not isinstance(schema, dict) or _depth(schema) > 40:
        return False
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        cls(schema).is_valid(None)
    except Exception:
        return False
    return True


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(schema={"type": "object", "properties": {"a": {"type": "string"}}})
@example(schema={"$ref": "#/$defs/a"})
@example(schema={"type": "object", "properties": {"a": {"pattern": "["}}})
@example(schema={"type": ["object", "nope"]})
@example(schema={"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": True})
@example(schema={"minimum": 1e308, "maximum": -0.0})
@example(schema="x" * 300)
@example(schema=[{"type": "object"}])
@given(schema=_schemas)
async def test_any_schema_is_taken_or_refused_naming_it(nursery, daemon, fake_provider, schema):
    """Against an agent whose turn runs on (a prompt it takes is queued), on a
    model asked through the final_result tool (so the check is the schema's
    alone; the per-API fitting has tests of its own)."""
    fake_provider.default = Reply(text="held", fault=Stall())
    if daemon.proc is None:
        await daemon.start()
    with trio.fail_after(60):
        await _case(nursery, daemon, schema)


async def _case(nursery, daemon, schema: Any) -> None:
    c = await connect(nursery, str(daemon.socket))
    model = "anthropic/claude-sonnet-4-20250514"
    uuid = (await c.call("agent.create", prompt="hold on", model=model))["agent"]["uuid"]
    before = await c.call("agent.show", agent=uuid)
    rows = (await c.call("agent.history", agent=uuid))["messages"]
    saved = await c.call("schema.list")
    try:
        queued = await c.call("agent.prompt", agent=uuid, text="look", schema=schema)
    except RpcFailure as e:
        assert not _taken(schema), (json.dumps(schema)[:500], e.error)
        assert e.code == INVALID_PARAMS and "schema" in e.error["message"], e.error
        assert len(e.error["message"]) < 1000
        assert (await c.call("agent.show", agent=uuid))["queued"] == before["queued"]
        assert (await c.call("agent.history", agent=uuid))["messages"] == rows
    else:
        assert _taken(schema), json.dumps(schema)[:500]
        assert queued["position"] == before["queued"] + 1
    try:
        await c.call("schema.save", name="fuzzed", schema=schema)
    except RpcFailure as e:
        assert not (schema is not None and _taken(schema)) and e.code == INVALID_PARAMS, e.error
        assert await c.call("schema.list") == saved
    else:
        assert schema is not None and _taken(schema)
        assert (await c.call("schema.show", name="fuzzed"))["schema"] == schema
        await c.call("schema.delete", name="fuzzed")
    assert (await c.call("daemon.status"))["agents"]["running"] >= 1
    await c.call("agent.kill", agent=uuid)
