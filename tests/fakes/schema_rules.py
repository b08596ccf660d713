"""The rules the real APIs enforce on a structured answer's schema, so the fake
answers 400 where they do (tests/fakes/rules.py calls these; the fake must be
at least as strict as they are). Each function takes a parsed request body and
returns the problem in words, or None: the real API's 400 message where it is
known (the source quoted beside it), else words of ours, marked "(ours)".

Written apart from providers/schema_fit.py on purpose: tests/providers/
test_schema_fit.py checks that whatever fit_schema returns passes these.

Sources: OpenAI "Structured Outputs: supported schemas" and the messages of its
``invalid_json_schema`` 400s as reported in public issues; Anthropic
"Structured outputs: JSON Schema limitations" and its 400s (output_config.format.schema:
...); Gemini's GenerationConfig reference (responseSchema is the OpenAPI
``Schema`` message; responseJsonSchema lists the keywords it takes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_MAX_DEPTH = 200  # the fake's own bound: bodies here come from our codecs
_TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")
# keywords that hold subschemas, and how: one, a list, a map of names
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
        "propertyNames", "unevaluatedProperties", "additionalItems")  # fmt: skip
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Anthropic: "Backreferences", "Lookahead/lookbehind assertions", "Word boundaries",
# "Complex {n,m} quantifiers with large ranges" are not supported in patterns
_COMPLEX_REGEX = re.compile(r"\\[1-9]|\\k<|\\[bB]|\(\?(=|!|<=|<!)|\{\d{3,}(,\d*)?\}|\{\d*,\d{3,}\}")


def _nodes(root: Any) -> Iterator[tuple[Any, tuple[str, ...]]]:
    """Every subschema with its place (keys from the root), the root first."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, at = stack.pop()
        yield node, at
        if not isinstance(node, dict) or len(at) > _MAX_DEPTH:
            continue
        for key in _ONE:
            sub = node.get(key)
            if isinstance(sub, list) and key == "items":
                stack.extend((s, (*at, key, str(i))) for i, s in enumerate(sub))
            elif isinstance(sub, dict) or (isinstance(sub, bool) and key == "items"):
                stack.append((sub, (*at, key)))
        for key in _LIST:
            if isinstance(node.get(key), list):
                stack.extend((s, (*at, key, str(i))) for i, s in enumerate(node[key]))
        for key in _MAP:
            if isinstance(node.get(key), dict):
                stack.extend((s, (*at, key, k)) for k, s in node[key].items())


def _kinds(node: dict[str, Any]) -> list[str]:
    kind = node.get("type")
    return [kind] if isinstance(kind, str) else [k for k in kind] if isinstance(kind, list) else []


def _resolve(root: dict[str, Any], ref: Any) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _refs_cycle(root: dict[str, Any], *, required_only: bool) -> list[str] | None:
    """A cycle of $refs (through required properties only, if asked), or None."""
    edges: dict[str, set[str]] = {}
    todo = ["#"]
    while todo:
        ref = todo.pop()
        if ref in edges:
            continue
        edges[ref] = set()
        stack = [(_resolve(root, ref), False)]
        while stack:
            node, optional = stack.pop()
            if not isinstance(node, dict):
                continue
            if isinstance(node.get("$ref"), str):
                if not (required_only and optional):
                    edges[ref].add(node["$ref"])
                todo.append(node["$ref"])
                continue
            required = node.get("required") if isinstance(node.get("required"), list) else []
            for name, sub in (node.get("properties") or {}).items():
                stack.append((sub, optional or name not in required))
            for key in ("items", "additionalProperties"):
                stack.append((node.get(key), optional))
            for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
                stack.extend((s, optional) for s in node.get(key) or ())
    done: set[str] = set()
    path: list[str] = ["#"]
    stack = [iter(sorted(edges["#"]))]
    while stack:  # depth first, without recursion: a chain of definitions may be long
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            done.add(path.pop())
        elif nxt in path:
            return [*path[path.index(nxt) :], nxt]
        elif nxt not in done:
            path.append(nxt)
            stack.append(iter(sorted(edges.get(nxt, ()))))
    return None


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1] if ref != "#" else "#"


# ------------------------------------------------------------------ Anthropic

_A_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4",
              "ipv6", "uuid"}  # fmt: skip
_A_COMMON = {"type", "description", "title", "default", "enum", "const", "$defs", "definitions"}
_A_BY_TYPE = {
    "object": {"properties", "required", "additionalProperties"},
    "array": {"items", "minItems"},
    "string": {"format", "pattern"},
}
_A_BESIDE_UNION = {"description", "title", "$defs", "definitions"}


def anthropic(body: Any) -> str | None:
    config = body.get("output_config") if isinstance(body, dict) else None
    fmt = config.get("format") if isinstance(config, dict) else None
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return "output_config.format.type: Input should be 'json_schema'"
    if not isinstance(fmt.get("schema"), dict):
        return "output_config.format.schema: Field required"
    problem = _anthropic(fmt["schema"])
    return None if problem is None else f"output_config.format.schema: {problem}"


def _anthropic(root: dict[str, Any]) -> str | None:
    optional = unions = 0
    for node, _at in _nodes(root):
        if not isinstance(node, dict):
            return "Boolean schemas are not supported (ours)"
        if "oneOf" in node:
            return "Schema type 'oneOf' is not supported"
        if "not" in node:
            return "Schema keyword 'not' is not supported"
        if "$ref" in node:
            if _resolve(root, node["$ref"]) is None:
                return f"Unresolvable $ref {node['$ref']!r} (ours)"
            if set(node) - {"$ref", "$defs", "definitions"}:
                return "$ref cannot have sibling keywords (ours)"
            continue
        combined = [k for k in ("anyOf", "allOf") if k in node]
        for comb in combined:
            beside = sorted(set(node) - _A_BESIDE_UNION - {comb})
            # "For 'anyOf', 'additionalProperties, properties, required, type' is not supported"
            if beside:
                return f"For '{comb}', '{', '.join(beside)}' is not supported"
            if comb == "allOf" and any(isinstance(b, dict) and "$ref" in b for b in node[comb]):
                return "allOf with $ref is not supported (ours)"
        if combined:
            unions += "anyOf" in node
            continue
        kinds = _kinds(node)
        if not kinds and "enum" not in node and "const" not in node:
            return "Empty schema ({}) that accepts any JSON value is not supported."
        problem = _anthropic_node(node, kinds)
        if problem is not None:
            return problem
        unions += len(kinds) > 1
        props = node.get("properties") or {}
        optional += len(set(props) - set(node.get("required") or ()))
    cycle = _refs_cycle(root, required_only=False)
    if cycle:
        names = " -> ".join(map(_name, cycle))
        return f"Circular reference detected in schema definitions: {names}"
    if optional > 24:
        return (
            f"Schemas contains too many optional parameters ({optional}), which would make "
            "grammar compilation inefficient. Reduce the number of optional parameters in your "
            "tool schemas (limit: 24)."
        )
    if unions > 16:
        return (
            f"Schemas contains too many parameters with union types ({unions} parameters with "
            "type arrays or anyOf). This causes exponential compilation cost. Reduce the number "
            "of nullable or union-typed parameters (limit: 16 parameters with unions)."
        )
    return None


def _anthropic_node(node: dict[str, Any], kinds: list[str]) -> str | None:
    for kind in kinds:
        if kind not in _TYPES:
            return f"Invalid type {kind!r} (ours)"
    allowed = _A_COMMON.union(*(_A_BY_TYPE.get(k, set()) for k in kinds))
    for key in node:
        if key not in allowed:
            # "For 'integer' type, property 'minimum' is not supported"
            return f"For '{kinds[0] if kinds else 'enum'}' type, property '{key}' is not supported"
    for value in node.get("enum", []):
        if isinstance(value, (dict, list)):
            return "Complex types within enums are not supported (ours)"
        # "Invalid schema: Enum value 'face' does not match declared type '["string","null"]'"
        if len(kinds) > 1 or (kinds and not _is(value, kinds[0])):
            declared = kinds[0] if len(kinds) == 1 else json.dumps(kinds, separators=(",", ":"))
            return f"Invalid schema: Enum value {value!r} does not match declared type '{declared}'"
    if "object" in kinds:
        if node.get("additionalProperties") is not False:
            return "For 'object' type, 'additionalProperties' must be explicitly set to false"
        missing = set(node.get("required") or ()) - set(node.get("properties") or {})
        if missing:
            return f"required property {sorted(missing)[0]!r} is not in properties (ours)"
    if "array" in kinds:
        if isinstance(node.get("items"), list):
            return "Invalid schema: Array types must be specified with a single object schema for 'items'."
        if not isinstance(node.get("items"), dict):
            return "For 'array' type, 'items' must be a schema (ours)"
        if node.get("minItems", 0) not in (0, 1):
            # "For 'array' type, 'minItems' values other than 0 or 1 are not supported"
            return (
                "For 'array' type, 'minItems' values other than 0 or 1 are not supported "
                f"(got: {node['minItems']})"
            )
    if "format" in node and node["format"] not in _A_FORMATS:
        return f"For 'string' type, format {node['format']!r} is not supported (ours)"
    if _COMPLEX_REGEX.search(str(node.get("pattern", ""))):
        return "Unsupported regex feature in 'pattern' (ours)"
    return None


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    python = {"string": str, "boolean": bool, "null": type(None), "object": dict, "array": list}
    return isinstance(value, python[kind])


# ------------------------------------------------------------------ OpenAI

_O_KEYS = {
    "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const",
    "$ref", "$defs", "definitions", "description", "title", "pattern", "format", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip
_O_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
_O_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def openai_chat(body: Any) -> str | None:
    rf = body.get("response_format") if isinstance(body, dict) else None
    if not isinstance(rf, dict) or rf.get("type") != "json_schema":
        return None
    spec = rf.get("json_schema")
    if not isinstance(spec, dict):
        return "Missing required parameter: 'response_format.json_schema'."
    return _openai(spec.get("name"), spec.get("schema"), spec.get("strict"), "response_format.json_schema")


def openai_responses(body: Any) -> str | None:
    text = body.get("text") if isinstance(body, dict) else None
    fmt = text.get("format") if isinstance(text, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    return _openai(fmt.get("name"), fmt.get("schema"), fmt.get("strict"), "text.format")


def _openai(name: Any, schema: Any, strict: Any, where: str) -> str | None:
    if not isinstance(name, str) or not _O_NAME.fullmatch(name):
        return (
            f"Invalid '{where}.name': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
    if not isinstance(schema, dict):
        return f"Invalid type for '{where}.schema': expected an object."
    invalid = f"Invalid schema for response_format '{name}': "
    # "schema must be a JSON Schema of 'type: "object"', got 'type: "None"'"
    if schema.get("type") != "object" or "anyOf" in schema:
        got = schema.get("type") if "anyOf" not in schema else None
        return invalid + f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'."
    if strict is not True:
        return None
    for node, at in _nodes(schema):
        problem = _openai_node(schema, node, repr(at))
        if problem is not None:
            return invalid + problem
    problem = _openai_limits(schema)
    return None if problem is None else invalid + problem


def _openai_node(root: dict[str, Any], node: Any, context: str) -> str | None:
    where = f"In context={context}, "
    if not isinstance(node, dict):
        return where + "schema must be an object (ours)."
    if "$ref" in node:
        beside = set(node) - {"$ref", "$defs", "definitions"}
        if beside:  # "$ref cannot have keywords {'description'}"
            return where + f"$ref cannot have keywords {beside}."
        return None if isinstance(_resolve(root, node["$ref"]), dict) else where + "unresolved $ref (ours)."
    for key in node:
        if key not in _O_KEYS:  # "In context=('properties', 'x'), 'default' is not permitted."
            return where + f"'{key}' is not permitted."
    if "type" not in node and "anyOf" not in node:
        return where + "schema must have a 'type' key."
    kinds = _kinds(node)
    if any(k not in _TYPES for k in kinds):
        return where + f"type {node['type']!r} is not valid (ours)."
    if "format" in node and node["format"] not in _O_FORMATS:
        return where + f"'{node['format']}' is not a valid format (ours)."
    if isinstance(node.get("items"), list):
        return where + "'items' must be a schema, not an array (ours)."
    if "object" in kinds or "properties" in node:
        if node.get("additionalProperties") is not False:
            return where + "'additionalProperties' is required to be supplied and to be false."
        required = node.get("required") if isinstance(node.get("required"), list) else []
        missing = [k for k in node.get("properties") or {} if k not in required]
        if missing:
            return where + (
                "'required' is required to be supplied and to be an array including every "
                f"key in properties. Missing '{missing[0]}'."
            )
        if set(required) - set(node.get("properties") or {}):
            return where + "'required' names a key that is not in properties (ours)."
    return None


def _openai_limits(root: dict[str, Any]) -> str | None:
    props = text = enums = 0
    for node, _at in _nodes(root):
        if not isinstance(node, dict):
            continue
        names = node.get("properties") or {}
        props += len(names)
        text += sum(map(len, names)) + sum(map(len, node.get("$defs") or {}))
        values = [v for v in node.get("enum") or () if isinstance(v, str)]
        enums += len(node.get("enum") or ())
        text += sum(map(len, values)) + len(node["const"] if isinstance(node.get("const"), str) else "")
        if len(values) > 250 and sum(map(len, values)) > 15_000:
            return "an enum of over 250 values over 15,000 characters long (ours)."
    levels = _levels(root, root, set(), {})
    if levels > 10:  # "11 levels of nesting exceeds limit of 10."
        return f"{levels} levels of nesting exceeds limit of 10."
    if props > 5000:  # "6000 parameters exceeds limit of 5000."
        return f"{props} parameters exceeds limit of 5000."
    if text > 120_000:
        return f"{text} characters of names and values exceeds limit of 120000 (ours)."
    if enums > 1000:
        return f"{enums} enum values exceeds limit of 1000 (ours)."
    return None


def _levels(root: dict[str, Any], node: Any, following: set[str], memo: dict[str, int]) -> int:
    """Objects and arrays nested, through $refs (a recursive one counted once)."""
    if not isinstance(node, dict) or len(following) > _MAX_DEPTH:
        return 0
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref in following:
            return 0
        if ref not in memo:
            memo[ref] = _levels(root, _resolve(root, ref), {*following, ref}, memo)
        return memo[ref]
    own = 1 if {"object", "array"} & set(_kinds(node)) else 0
    subs = [*(node.get("properties") or {}).values(), node.get("items"),
            node.get("additionalProperties"), *(node.get("anyOf") or ())]  # fmt: skip
    return own + max((_levels(root, s, following, memo) for s in subs), default=0)


# ------------------------------------------------------------------ Gemini

_G_MIMES = ("text/plain", "application/json", "application/xml", "application/yaml", "text/x.enum")
# the fields of the OpenAPI ``Schema`` message responseSchema is
_G_SCHEMA = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
}  # fmt: skip
_G_TYPES = ("TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL")
# "only the following properties are supported" (responseJsonSchema), besides $-keywords
_G_JSON = {
    "type", "format", "title", "description", "enum", "items", "prefixItems", "minItems",
    "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties", "additionalProperties",
    "required", "propertyOrdering",
}  # fmt: skip


def google(body: Any) -> str | None:
    gen = body.get("generationConfig") if isinstance(body, dict) else None
    if not isinstance(gen, dict):
        return None
    mime = gen.get("responseMimeType")
    if mime is not None and mime not in _G_MIMES:
        return (
            "* GenerateContentRequest.generation_config.response_mime_type: allowed mimetypes are "
            "`text/plain`, `application/json`, `application/xml`, `application/yaml` and "
            "`text/x.enum`."
        )
    subset, full = gen.get("responseSchema"), gen.get("responseJsonSchema")
    if subset is None and full is None:
        return None
    if subset is not None and full is not None:
        return "response_schema and response_json_schema cannot both be set (ours)"
    wanted = ("application/json", "text/x.enum") if subset is not None else ("application/json",)
    if mime not in wanted:
        return (
            "* GenerateContentRequest.generation_config.response_mime_type: must be "
            f"{' or '.join(wanted)} with a response schema (ours)"
        )
    return _gemini_subset(subset) if subset is not None else _gemini_json(full)


def _gemini_subset(root: Any) -> str | None:
    for node, at in _nodes(root):
        where = "generation_config.response_schema" + "".join(f".{k}" for k in at)
        if not isinstance(node, dict):
            return f"Invalid value at '{where}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Schema)"
        for key in node:
            if key not in _G_SCHEMA:
                return f"Invalid JSON payload received. Unknown name \"{key}\" at '{where}': Cannot find field."
        kind = node.get("type")
        if kind is None and "anyOf" not in node:
            return f"* GenerateContentRequest.{where}.type: must be specified (ours)"
        if kind is not None and kind not in _G_TYPES:
            return f"Invalid value at '{where}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), {json.dumps(kind)}"
        if kind == "OBJECT" and not node.get("properties"):
            return f"* GenerateContentRequest.{where}.properties: should be non-empty for OBJECT type"
        if set(node.get("required") or ()) - set(node.get("properties") or {}):
            return f"* GenerateContentRequest.{where}.required: a property that is not defined (ours)"
        if kind == "ARRAY" and not isinstance(node.get("items"), dict):
            return f"* GenerateContentRequest.{where}.items: missing field (ours)"
        if "enum" in node and (kind != "STRING" or not all(isinstance(v, str) for v in node["enum"])):
            return f"* GenerateContentRequest.{where}.enum: only for STRING, of strings (ours)"
        if kind == "STRING" and node.get("format") not in (None, "enum", "date-time"):
            return f"* GenerateContentRequest.{where}.format: only 'enum' and 'date-time' (ours)"
        if not isinstance(node.get("nullable", False), bool):
            return f"Invalid value at '{where}.nullable' (TYPE_BOOL)"
    return None


def _gemini_json(root: Any) -> str | None:
    if not isinstance(root, dict):
        return "Invalid value at 'generation_config.response_json_schema': a schema is an object (ours)"
    for node, at in _nodes(root):
        where = "generation_config.response_json_schema" + "".join(f".{k}" for k in at)
        if not isinstance(node, dict):
            return f"{where}: boolean schemas are not supported (ours)"
        # "If $ref is set on a sub-schema, no other properties, except for than those
        # starting as a $, may be set."
        if "$ref" in node:
            if any(not k.startswith("$") for k in node):
                return f"{where}: no keyword but $-keywords may stand beside $ref (ours)"
            if not isinstance(_resolve(root, node["$ref"]), dict):
                return f"{where}: unresolved $ref {node['$ref']!r} (ours)"
            continue
        for key in node:
            if key not in _G_JSON and not key.startswith("$"):
                return f"{where}: keyword '{key}' is not supported (ours)"
        if any(k not in _TYPES for k in _kinds(node)):
            return f"{where}.type: not a JSON Schema type (ours)"
        for value in node.get("enum") or ():
            if not isinstance(value, str) and not _is(value, "number"):  # "enum (for strings and numbers)"
                return f"{where}.enum: only strings and numbers (ours)"
    # "Cyclic references are unrolled to a limited degree and, as such, may only be used
    # within non-required properties. (Nullable properties are not sufficient.)"
    cycle = _refs_cycle(root, required_only=True)
    if cycle:
        return f"recursion through required properties only: {' -> '.join(map(_name, cycle))} (ours)"
    return None
