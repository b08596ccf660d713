"""Is it JSON, small, and a JSON Schema? Checked before anything recurses into
it: ``check_value`` walks the value with an explicit stack, so a hostile one
(10,000 levels deep, huge, odd types) is refused, never a RecursionError."""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64  # JSON nesting of the schema value
MAX_BYTES = 1_000_000  # the schema encoded, as given and as fitted
TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")

# the structure of JSON Schema: where subschemas are
ONE = frozenset(
    {
        "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
        "propertyNames", "unevaluatedProperties", "unevaluatedItems",
    }
)  # fmt: skip
LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_COUNTS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
     "minContains", "maxContains"}
)  # fmt: skip
_NUMBERS = frozenset({"minimum", "maximum", "multipleOf", "exclusiveMinimum", "exclusiveMaximum"})
_TEXTS = frozenset({"description", "title", "pattern", "format", "$id", "$schema", "$comment"})
_NOT_TAKEN = ("$dynamicRef", "$recursiveRef")  # no API resolves them, nor can they be inlined


class SchemaUnfit(ValueError):
    """A schema the wire API cannot be asked for, or that is not a JSON Schema:
    ``path`` is where in the user's schema (JSON-pointer style), ``why`` says
    what is wrong and how to mend it."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"schema{path}: {why}")
        self.path = path
        self.why = why


def pointer(path: str, *keys: object) -> str:
    """``path`` with ``keys`` appended, JSON-pointer style (RFC 6901 escapes)."""
    return path + "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in keys)


def kind_of(value: Any) -> str:
    """What a JSON value is, in words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a string" if isinstance(value, str) else type(value).__name__


def check_value(value: Any) -> None:
    """A JSON value no deeper than MAX_DEPTH and no bigger than MAX_BYTES encoded."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    size = 0  # a lower bound of the encoded size, to stop early
    while stack:
        v, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SchemaUnfit(path, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(v, dict):
            size += 2 + len(v)
            for k, x in v.items():
                if not isinstance(k, str):
                    raise SchemaUnfit(path, "an object key that is not a string")
                size += len(k) + 3
                stack.append((x, pointer(path, k), depth + 1))
        elif isinstance(v, list):
            size += 2 + len(v)
            stack.extend((x, pointer(path, i), depth + 1) for i, x in enumerate(v))
        elif isinstance(v, str):
            size += len(v) + 2
        elif isinstance(v, bool) or v is None:
            size += 4
        elif isinstance(v, int):
            size += v.bit_length() // 4 + 1
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise SchemaUnfit(path, f"{v} is not a JSON number")
            size += 1
        else:
            raise SchemaUnfit(path, f"{type(v).__name__} is not a JSON value")
        if size > MAX_BYTES:
            raise SchemaUnfit("", f"over {MAX_BYTES} bytes encoded")
    check_size(value, "")


def check_size(value: Any, what: str) -> None:
    """No bigger than MAX_BYTES encoded (``value`` is known to be shallow)."""
    try:
        size = len(json.dumps(value, allow_nan=False, ensure_ascii=False).encode())
    except (ValueError, TypeError) as e:  # an integer too long to write, say
        raise SchemaUnfit("", f"not writable as JSON: {e}") from None
    if size > MAX_BYTES:
        raise SchemaUnfit("", f"over {MAX_BYTES} bytes encoded{what}")


def resolve(root: dict[str, Any], ref: str) -> Any:
    """The node a local ``$ref`` points at, or None."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def check_schema(root: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """Raise SchemaUnfit where ``root`` is not a JSON Schema; return the $refs it
    holds, each with its target and the target's path."""
    refs: dict[str, tuple[Any, str]] = {}
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            raise SchemaUnfit(path, f"a schema is an object or a boolean, not {kind_of(node)}")
        for key in _NOT_TAKEN:
            if key in node:
                raise SchemaUnfit(pointer(path, key), f"'{key}' is not taken: use '$ref'")
        _check_keywords(node, path)
        for key in ONE & node.keys():
            stack.append((node[key], pointer(path, key)))
        for key in LISTS & node.keys():
            stack.extend((s, pointer(path, key, i)) for i, s in enumerate(node[key]))
        for key in MAPS & node.keys():
            stack.extend((s, pointer(path, key, k)) for k, s in node[key].items())
        items = node.get("items")
        if isinstance(items, list):
            stack.extend((s, pointer(path, "items", i)) for i, s in enumerate(items))
        elif "items" in node:
            stack.append((items, pointer(path, "items")))
        if "$ref" in node:  # a null is no more a reference than a number
            ref = node["$ref"]
            if not isinstance(ref, str):
                raise SchemaUnfit(pointer(path, "$ref"), f"'$ref' is a string, not {kind_of(ref)}")
            if ref not in refs:
                refs[ref] = _target(root, ref, pointer(path, "$ref"))
    return refs


def _target(root: dict[str, Any], ref: str, at: str) -> tuple[Any, str]:
    if not ref.startswith("#"):
        raise SchemaUnfit(
            at, f"'$ref' {ref!r} points outside the schema: only local references "
            "such as '#/$defs/Name' are taken (put the schema it names in '$defs')",
        )  # fmt: skip
    target = resolve(root, ref)
    if target is None:
        raise SchemaUnfit(at, f"'$ref' {ref!r} points nowhere in the schema")
    if not isinstance(target, (dict, bool)):
        raise SchemaUnfit(at, f"'$ref' {ref!r} points at {kind_of(target)}, not a schema")
    return target, ref[1:]


def _check_keywords(node: dict[str, Any], path: str) -> None:
    """The value of each keyword the fitting reads has the type JSON Schema says."""

    def bad(key: str, what: str) -> SchemaUnfit:
        return SchemaUnfit(pointer(path, key), f"'{key}' must be {what}")

    # a keyword present with a null value is as wrong as any other wrong value
    if "type" in node:
        kind = node["type"]
        kinds = kind if isinstance(kind, list) else [kind]
        known = all(isinstance(k, str) and k in TYPES for k in kinds)
        if not kinds or not known or len(set(kinds)) < len(kinds):
            raise bad("type", f"one of {', '.join(TYPES)}, or a list of them without repeats")
    for key in LISTS & node.keys():
        if not isinstance(node[key], list) or not node[key]:
            raise bad(key, "a non-empty array of schemas")
    for key in MAPS & node.keys():
        if not isinstance(node[key], dict):
            raise bad(key, "an object whose values are schemas")
    if node.get("items") == []:
        raise bad("items", "a schema, or a non-empty array of them")
    required = node.get("required")
    if "required" in node and (
        not isinstance(required, list)
        or not all(isinstance(r, str) for r in required)
        or len(set(required)) < len(required)
    ):
        raise bad("required", "an array of property names (strings), each once")
    if "enum" in node and not isinstance(node["enum"], list):
        raise bad("enum", "an array")
    for key in _COUNTS & node.keys():
        v = node[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != int(v):
            raise bad(key, "a whole number, 0 or more")
    for key in _NUMBERS & node.keys():
        v = node[key]
        draft4 = isinstance(v, bool) and key.startswith("exclusive")
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not draft4 and not number:
            raise bad(key, "a number")
    if node.get("multipleOf", 1) <= 0:
        raise bad("multipleOf", "a number above 0")
    for key in _TEXTS & node.keys():
        if not isinstance(node[key], str):
            raise bad(key, "a string")
    order = node.get("propertyOrdering", [])  # Gemini's: sent as it is
    if not isinstance(order, list) or not all(isinstance(k, str) for k in order):
        raise bad("propertyOrdering", "an array of property names")
    if not isinstance(node.get("uniqueItems", False), bool):
        raise bad("uniqueItems", "true or false")
