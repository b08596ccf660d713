"""Strict-mode schema conversion."""

from __future__ import annotations

import pytest

from providers.openai._schema import strict_schema


def test_nested_objects_arrays_defs_and_optional_properties():
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "where"},
            "limit": {"type": "integer", "default": 10},
            "filter": {
                "type": "object",
                "properties": {"glob": {"type": "string"}, "kind": {"enum": ["file", "dir"]}},
                "required": ["glob"],
            },
            "tags": {
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"type": "string"}}},
            },
            "mode": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "node": {"$ref": "#/$defs/node"},
        },
        "required": ["path", "filter", "tags", "mode", "node"],
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }
        },
    }
    assert strict_schema(schema) == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "where"},
            "limit": {"type": ["integer", "null"]},
            "filter": {
                "type": "object",
                "properties": {
                    "glob": {"type": "string"},
                    "kind": {"anyOf": [{"enum": ["file", "dir"]}, {"type": "null"}]},
                },
                "required": ["glob", "kind"],
                "additionalProperties": False,
            },
            "tags": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"k": {"type": ["string", "null"]}},
                    "required": ["k"],
                    "additionalProperties": False,
                },
            },
            "mode": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "node": {"$ref": "#/$defs/node"},
        },
        "required": ["path", "limit", "filter", "tags", "mode", "node"],
        "additionalProperties": False,
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": False,
            }
        },
    }


def test_optional_anyof_and_ref_become_nullable():
    schema = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "b": {"$ref": "#/$defs/x"},
        },
        "$defs": {"x": {"type": "string"}},
    }
    out = strict_schema(schema)
    assert out["properties"] == {
        "a": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        "b": {"anyOf": [{"$ref": "#/$defs/x"}, {"type": "null"}]},
    }


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {}, "additionalProperties": True},
        {
            "type": "object",
            "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}},
        },
        {"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}, {"type": "null"}]}}},
        {"type": "object", "properties": {"x": {"allOf": [{"type": "string"}]}}},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "array", "items": {"type": "string"}},  # the root must be an object
        {"anyOf": [{"type": "object"}]},
    ],
)
def test_schemas_that_cannot_be_strict(schema):
    assert strict_schema(schema) is None


def test_input_is_not_modified():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    strict_schema(schema)
    assert schema == {"type": "object", "properties": {"a": {"type": "string"}}}
