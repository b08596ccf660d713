"""A small validator for the JSON-Schema subset that tool definitions use.

Supported keywords: type (a name or a list of names), enum, const, properties,
required, additionalProperties (false or a schema), items, minimum, maximum,
exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, minItems,
maxItems, anyOf, oneOf, allOf. Every other keyword (description, default,
title, format...) is ignored.

Types follow JSON, not Python: a bool is neither an integer nor a number, and
an integer is any number without a fractional part (so 3.0 is an integer, as
JSON Schema says).

Errors are short sentences for the model, each naming the path of the
offending value: ``argument 'path': expected string, got integer``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["json_type", "validate"]

_MAX_ERRORS = 5


def json_type(value: object) -> str:
    """The JSON type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value: object, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return True
        return isinstance(value, float) and math.isfinite(value) and value.is_integer()
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list | tuple)
    if name == "object":
        return isinstance(value, dict)
    return True  # an unknown type name constrains nothing


def _where(path: str) -> str:
    return f"argument '{path}'" if path else "arguments"


def _show(value: object, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def validate(schema: dict[str, Any], value: object) -> list[str]:
    """Return the problems of ``value`` against ``schema`` (empty when it is valid).

    At most a handful of problems are reported; the first is the most useful.
    """
    errors: list[str] = []
    _check(schema, value, "", errors)
    return errors[:_MAX_ERRORS]


def _check(schema: object, value: object, path: str, errors: list[str]) -> None:
    if len(errors) >= _MAX_ERRORS:
        return
    if schema is True or schema == {}:
        return
    if schema is False:
        errors.append(f"{_where(path)}: no value is allowed here")
        return
    if not isinstance(schema, dict):
        return
    where = _where(path)

    # -- type: stop at a type mismatch, the other keywords would only add noise
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if names and not any(_is_type(value, n) for n in names):
            wanted = " or ".join(names)
            errors.append(f"{where}: expected {wanted}, got {json_type(value)}")
            return

    if "const" in schema and not _equal(value, schema["const"]):
        errors.append(f"{where}: must be {_show(schema['const'])}, got {_show(value)}")
        return
    if "enum" in schema:
        allowed = schema["enum"]
        if not any(_equal(value, a) for a in allowed):
            choices = ", ".join(_show(a) for a in allowed)
            errors.append(f"{where}: must be one of {choices}; got {_show(value)}")
            return

    # -- numbers
    if isinstance(value, int | float) and not isinstance(value, bool):
        low = schema.get("minimum")
        if isinstance(low, int | float) and value < low:
            errors.append(f"{where}: must be at least {_num(low)}, got {_num(value)}")
        high = schema.get("maximum")
        if isinstance(high, int | float) and value > high:
            errors.append(f"{where}: must be at most {_num(high)}, got {_num(value)}")
        xlow = schema.get("exclusiveMinimum")
        if isinstance(xlow, int | float) and not isinstance(xlow, bool) and value <= xlow:
            errors.append(f"{where}: must be greater than {_num(xlow)}, got {_num(value)}")
        xhigh = schema.get("exclusiveMaximum")
        if isinstance(xhigh, int | float) and not isinstance(xhigh, bool) and value >= xhigh:
            errors.append(f"{where}: must be less than {_num(xhigh)}, got {_num(value)}")

    # -- strings
    if isinstance(value, str):
        min_len = schema.get("minLength")
        if isinstance(min_len, int) and len(value) < min_len:
            if min_len == 1:
                errors.append(f"{where}: must not be empty")
            else:
                errors.append(
                    f"{where}: must be at least {min_len} characters long, got {len(value)}"
                )
        max_len = schema.get("maxLength")
        if isinstance(max_len, int) and len(value) > max_len:
            errors.append(f"{where}: must be at most {max_len} characters long, got {len(value)}")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                matched = re.search(pattern, value) is not None
            except re.error:
                matched = True  # a broken pattern in a schema is the tool's bug, not the model's
            if not matched:
                errors.append(f"{where}: must match the pattern {pattern!r}")

    # -- arrays
    if isinstance(value, list | tuple):
        min_items = schema.get("minItems")
        if isinstance(min_items, int) and len(value) < min_items:
            errors.append(f"{where}: must have at least {min_items} item(s), got {len(value)}")
        max_items = schema.get("maxItems")
        if isinstance(max_items, int) and len(value) > max_items:
            errors.append(f"{where}: must have at most {max_items} item(s), got {len(value)}")
        items = schema.get("items")
        if isinstance(items, dict | bool):
            for i, item in enumerate(value):
                _check(items, item, f"{path}[{i}]", errors)

    # -- objects
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        for key in schema.get("required", ()) or ():
            if key not in value:
                errors.append(f"{_where(_join(path, key))}: required but missing")
        for key, sub in props.items():
            if key in value:
                _check(sub, value[key], _join(path, key), errors)
        extra = schema.get("additionalProperties", True)
        unknown = [k for k in value if k not in props]
        if extra is False and unknown:
            names = ", ".join(repr(k) for k in unknown)
            known = ", ".join(repr(k) for k in props) or "none"
            noun = "argument" if len(unknown) == 1 else "arguments"
            place = f" in {_where(path)}" if path else ""
            errors.append(f"unknown {noun} {names}{place}; the allowed ones are: {known}")
        elif isinstance(extra, dict):
            for key in unknown:
                _check(extra, value[key], _join(path, key), errors)

    # -- combinators
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for sub in all_of:
            _check(sub, value, path, errors)
    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of:
        failures = [_sub_errors(sub, value, path) for sub in any_of]
        if all(failures):
            errors.append(f"{where}: does not match any allowed form ({_alternatives(failures)})")
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        failures = [_sub_errors(sub, value, path) for sub in one_of]
        matches = sum(1 for f in failures if not f)
        if matches == 0:
            errors.append(f"{where}: does not match any allowed form ({_alternatives(failures)})")
        elif matches > 1:
            errors.append(
                f"{where}: matches {matches} of the oneOf forms, it must match exactly one"
            )


def _sub_errors(schema: object, value: object, path: str) -> list[str]:
    errs: list[str] = []
    _check(schema, value, path, errs)
    return errs


def _alternatives(failures: list[list[str]]) -> str:
    parts = []
    for errs in failures:
        first = errs[0]
        # drop the repeated "argument 'x': " prefix inside the parenthesis
        _, sep, rest = first.partition(": ")
        parts.append(rest if sep else first)
    return "; ".join(parts)


def _equal(a: object, b: object) -> bool:
    # JSON equality: 1 == 1.0 but True != 1
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b
