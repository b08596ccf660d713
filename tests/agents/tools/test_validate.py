from __future__ import annotations

import pytest

from agents.tools import validate

OBJ = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 5},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "flag": {"type": "boolean"},
        "mode": {"enum": ["a", "b"]},
        "kind": {"const": "x"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        "maybe": {"type": ["string", "null"]},
        "inner": {
            "type": "object",
            "properties": {"deep": {"type": "integer"}},
            "required": ["deep"],
            "additionalProperties": False,
        },
        "id": {"type": "string", "pattern": "^[a-z]+$"},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def test_valid_arguments_pass():
    value = {
        "path": "a.py",
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "mode": "b",
        "kind": "x",
        "tags": ["t"],
        "maybe": None,
        "inner": {"deep": 1},
        "id": "abc",
    }
    assert validate(OBJ, value) == []


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"path": 3}, "argument 'path': expected string, got integer"),
        ({}, "argument 'path': required but missing"),
        ({"path": "a", "count": "3"}, "argument 'count': expected integer, got string"),
        ({"path": "a", "count": 2.5}, "argument 'count': expected integer, got number"),
        ({"path": "a", "count": True}, "argument 'count': expected integer, got boolean"),
        ({"path": "a", "ratio": False}, "argument 'ratio': expected number, got boolean"),
        ({"path": "a", "flag": 1}, "argument 'flag': expected boolean, got integer"),
        ({"path": "a", "flag": "true"}, "argument 'flag': expected boolean, got string"),
        ({"path": "a", "count": 0}, "argument 'count': must be at least 1, got 0"),
        ({"path": "a", "count": 11}, "argument 'count': must be at most 10, got 11"),
        ({"path": "a", "ratio": 0}, "argument 'ratio': must be greater than 0, got 0"),
        ({"path": "a", "ratio": 1.0}, "argument 'ratio': must be less than 1, got 1"),
        ({"path": ""}, "argument 'path': must not be empty"),
        ({"path": "abcdef"}, "argument 'path': must be at most 5 characters long, got 6"),
        ({"path": "a", "mode": "c"}, 'argument \'mode\': must be one of "a", "b"; got "c"'),
        ({"path": "a", "kind": "y"}, 'argument \'kind\': must be "x", got "y"'),
        ({"path": "a", "tags": []}, "argument 'tags': must have at least 1 item(s), got 0"),
        (
            {"path": "a", "tags": ["a", "b", "c"]},
            "argument 'tags': must have at most 2 item(s), got 3",
        ),
        ({"path": "a", "tags": ["a", 7]}, "argument 'tags[1]': expected string, got integer"),
        ({"path": "a", "tags": "a"}, "argument 'tags': expected array, got string"),
        ({"path": "a", "maybe": 1}, "argument 'maybe': expected string or null, got integer"),
        ({"path": "a", "inner": {}}, "argument 'inner.deep': required but missing"),
        (
            {"path": "a", "inner": {"deep": "1"}},
            "argument 'inner.deep': expected integer, got string",
        ),
        (
            {"path": "a", "inner": {"deep": 1, "x": 2}},
            "unknown argument 'x' in argument 'inner'; the allowed ones are: 'deep'",
        ),
        ({"path": "a", "id": "ABC"}, "argument 'id': must match the pattern '^[a-z]+$'"),
    ],
)
def test_each_keyword_reports_the_path_and_the_problem(value, error):
    assert validate(OBJ, value) == [error]


def test_unknown_top_level_argument_names_the_allowed_ones():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "additionalProperties": False,
    }
    assert validate(schema, {"a": "x", "zz": 1}) == [
        "unknown argument 'zz'; the allowed ones are: 'a', 'b'"
    ]


def test_additional_properties_schema_applies_to_extra_keys():
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert validate(schema, {"a": 1, "b": "x"}) == ["argument 'b': expected integer, got string"]


def test_arguments_must_be_an_object():
    assert validate({"type": "object"}, [1]) == ["arguments: expected object, got array"]


def test_integral_float_counts_as_integer_and_int_as_number():
    assert validate({"type": "integer"}, 3.0) == []
    assert validate({"type": "number"}, 3) == []


def test_enum_keeps_bool_and_int_apart():
    assert validate({"enum": [1, 2]}, True) == ["arguments: must be one of 1, 2; got true"]
    assert validate({"enum": [1, 2]}, 1.0) == []


def test_any_of_accepts_either_form_and_lists_the_problems():
    schema = {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}
    assert validate(schema, "x") == []
    assert validate(schema, 4) == []
    assert validate(schema, -1) == [
        "arguments: does not match any allowed form (expected string, got integer; "
        "must be at least 0, got -1)"
    ]


def test_one_of_needs_exactly_one_match():
    schema = {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}
    assert validate(schema, 2.5) == []
    assert validate(schema, -3) == []
    assert validate(schema, 3) == [
        "arguments: matches 2 of the oneOf forms, it must match exactly one"
    ]
    assert validate(schema, "x") == [
        "arguments: does not match any allowed form (expected integer, got string; "
        "expected number, got string)"
    ]


def test_several_problems_are_all_reported_up_to_a_limit():
    schema = {
        "type": "object",
        "properties": {k: {"type": "string"} for k in "abcdefg"},
        "required": list("abcdefg"),
    }
    errors = validate(schema, {})
    assert len(errors) == 5
    assert errors[0] == "argument 'a': required but missing"


def test_ignored_keywords_do_not_constrain():
    schema = {"type": "string", "description": "d", "default": "x", "format": "uri"}
    assert validate(schema, "not a uri") == []
