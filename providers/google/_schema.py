"""JSON Schema -> the OpenAPI-3.0 subset Gemini's ``Schema`` takes.

Used where ``parametersJsonSchema`` / ``responseJsonSchema`` are not available
(the ``v1`` API, or the ``gemini_schema_subset`` dialect flag). ``$ref`` is
inlined from ``$defs``/``definitions`` (a recursive reference becomes an
untyped object), ``oneOf`` becomes ``anyOf``, ``allOf`` is merged, ``const``
becomes a one-value enum, a ``null`` in ``type`` becomes ``nullable``, and
keywords Gemini rejects (``additionalProperties``, ``$schema``, ``$id``,
``patternProperties``...) are dropped. Inlining can multiply a schema (a
definition used twice by one used twice...): ``limit`` caps the nodes written,
past it ValueError (a response schema is fitted with one: providers/schema_fit).
"""

from __future__ import annotations

from typing import Any

_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}
_COPY = (
    "description",
    "title",
    "format",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "pattern",
    "default",
    "example",
    "propertyOrdering",
)
_STRING_FORMATS = frozenset({"enum", "date-time"})


class _Budget:
    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def spend(self) -> None:
        if self.left is not None:
            self.left -= 1
            if self.left < 0:
                raise ValueError("too large once its $refs are inlined for Gemini's responseSchema")


def to_gemini_schema(schema: Any, *, limit: int | None = None) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    if isinstance(schema, dict):
        defs.update(schema.get("definitions") or {})
        defs.update(schema.get("$defs") or {})
    return _convert(schema, defs, (), _Budget(limit))


def _resolve(ref: str, defs: dict[str, Any]) -> Any:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            return defs.get(ref[len(prefix) :])
    return None


def _convert(
    schema: Any, defs: dict[str, Any], seen: tuple[str, ...], budget: _Budget
) -> dict[str, Any]:
    budget.spend()
    if schema is True or not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve(ref, defs)
        if target is None or ref in seen:
            out: dict[str, Any] = {"type": "OBJECT"}
            if schema.get("description"):
                out["description"] = schema["description"]
            return out
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return _convert(merged, defs, (*seen, ref), budget)

    if "allOf" in schema and isinstance(schema["allOf"], list):
        base = {k: v for k, v in schema.items() if k != "allOf"}
        for sub in schema["allOf"]:
            if isinstance(sub, dict) and isinstance(sub.get("$ref"), str):
                sub = _resolve(sub["$ref"], defs) or {}
            if not isinstance(sub, dict):
                continue
            for key, value in sub.items():
                if key == "properties":
                    base["properties"] = {**base.get("properties", {}), **value}
                elif key == "required":
                    base["required"] = [*base.get("required", []), *value]
                else:
                    base.setdefault(key, value)
        return _convert(base, defs, seen, budget)

    out = {}
    nullable = bool(schema.get("nullable"))
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        nullable = nullable or len(kinds) < len(kind)
        if len(kinds) > 1:
            out["anyOf"] = [_convert({**schema, "type": k}, defs, seen, budget) for k in kinds]
            if nullable:
                out["nullable"] = True
            return out
        kind = kinds[0] if kinds else None
    if kind == "null":
        return {"nullable": True}

    for key in _COPY:
        if key in schema:
            out[key] = schema[key]
    if "format" in out and kind == "string" and out["format"] not in _STRING_FORMATS:
        del out["format"]

    if "const" in schema:
        out["enum"] = [str(schema["const"])]
        kind = "string"
    elif isinstance(schema.get("enum"), list):
        values = [v for v in schema["enum"] if v is not None]
        if len(values) < len(schema["enum"]):
            nullable = True
        out["enum"] = [str(v) for v in values]
        kind = "string"
    if kind is None:
        if "properties" in schema:
            kind = "object"
        elif "items" in schema:
            kind = "array"
    if isinstance(kind, str) and kind in _TYPES:
        out["type"] = _TYPES[kind]

    props = schema.get("properties")
    if isinstance(props, dict) and props:
        out["properties"] = {
            name: _convert(sub, defs, seen, budget) for name, sub in props.items()
        }
        required = [r for r in schema.get("required", []) if r in props]
        if required:
            out["required"] = required
    items = schema.get("items")
    if isinstance(items, dict):
        out["items"] = _convert(items, defs, seen, budget)
    elif isinstance(items, list) and items:
        out["items"] = _convert(items[0], defs, seen, budget)

    alternatives = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(alternatives, list):
        subs = []
        for sub in alternatives:
            if isinstance(sub, dict) and sub.get("type") == "null":
                nullable = True
            else:
                subs.append(_convert(sub, defs, seen, budget))
        if len(subs) == 1 and not out.get("type"):
            out.update(subs[0])
        elif subs:
            out["anyOf"] = subs
    if nullable:
        out["nullable"] = True
    return out
