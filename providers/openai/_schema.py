"""Strict-mode JSON schemas for OpenAI tools and structured output.

OpenAI's strict mode (Structured Outputs) takes a subset of JSON Schema: every
object lists all of its properties in ``required`` and says
``additionalProperties: false``, the root is an object, and a few keywords are
refused. ``strict_schema`` rewrites a schema to that shape, recursively, and
keeps its meaning: a property that was optional becomes required but nullable.
It returns None when the schema cannot take strict mode (open objects,
``oneOf``/``allOf``/``not``/conditionals...); the adapter then sends the schema
as it is with ``strict: false``.
"""

from __future__ import annotations

from typing import Any

# Keywords strict mode refuses; a schema using one is sent non-strict.
_REFUSED = frozenset(
    {
        "allOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
    }
)
# Keywords that are only hints: dropped in strict mode.
_DROPPED = frozenset({"default", "examples", "$schema", "$id"})


class _NotStrict(Exception):
    pass


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """The same schema, also accepting null."""
    kind = node.get("type")
    if isinstance(kind, str):
        out = {**node, "type": [kind, "null"] if kind != "null" else "null"}
    elif isinstance(kind, list):
        out = {**node, "type": kind if "null" in kind else [*kind, "null"]}
    elif "anyOf" in node and len(node) == 1:
        branches = node["anyOf"]
        if any(b.get("type") == "null" for b in branches):
            return node
        return {"anyOf": [*branches, {"type": "null"}]}
    else:
        return {"anyOf": [node, {"type": "null"}]}
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _convert(node: Any) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise _NotStrict
    if _REFUSED.intersection(node):
        raise _NotStrict
    out: dict[str, Any] = {k: v for k, v in node.items() if k not in _DROPPED}
    kind = node.get("type")
    is_object = (
        kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node
    )
    if is_object:
        extra = node.get("additionalProperties", False)
        if extra is not False:
            raise _NotStrict
        props = node.get("properties") or {}
        if not isinstance(props, dict):
            raise _NotStrict
        required = set(node.get("required") or ())
        new_props: dict[str, Any] = {}
        for name, sub in props.items():
            conv = _convert(sub)
            new_props[name] = conv if name in required else _nullable(conv)
        out["properties"] = new_props
        out["required"] = list(props)
        out["additionalProperties"] = False
    if "items" in node:
        items = node["items"]
        if isinstance(items, list):
            out["items"] = [_convert(i) for i in items]
        elif items is not True:
            out["items"] = _convert(items)
    if "prefixItems" in node:
        out["prefixItems"] = [_convert(i) for i in node["prefixItems"]]
    if "anyOf" in node:
        out["anyOf"] = [_convert(b) for b in node["anyOf"]]
    for defs in ("$defs", "definitions"):
        if defs in node:
            if not isinstance(node[defs], dict):
                raise _NotStrict
            out[defs] = {k: _convert(v) for k, v in node[defs].items()}
    return out


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema rewritten for strict mode, or None if it cannot take it."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or "anyOf" in schema:
        return None
    try:
        return _convert(schema)
    except _NotStrict:
        return None
