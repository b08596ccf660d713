"""Each wire API's subset of JSON Schema for a structured answer's schema
(``agent.prompt {schema}``), in one place: the daemon checks a schema with
``fit_schema`` when it is given, and the codecs send what it returns, so what
was checked is what is sent.

Adapting does what the providers' own SDKs do (Anthropic's
``transform_schema``, OpenAI's strict conversion): a constraint the API cannot
express leaves the wire, is said in the node's ``description`` instead, and is
named in ``FittedSchema.dropped``. Nothing is lost by it: the daemon validates
the answer against the user's whole schema. Only what cannot be adapted is
refused (``SchemaUnfit``, naming the place in the user's schema): what is not
a JSON Schema, an OpenAI root that is not an object, recursion where an API
refuses it, objects whose keys Claude or Gemini's responseSchema cannot be
told, Claude's limits. A hostile value (deep, huge, odd types) is refused
before any recursion (``_check.py``).

Every ``$ref`` target is hoisted into one root ``$defs`` (keeping its name
when it was ``#/$defs/NAME`` or ``#/definitions/NAME``), so adapting a node
never breaks a pointer into it, and unused definitions are left out.

The rules and their sources:

* OpenAI Structured Outputs, "Supported schemas": the root is an object and
  not ``anyOf``; strict mode wants ``additionalProperties: false`` and every
  property in ``required`` (``strict_schema`` rewrites optional as nullable);
  keywords: type, properties, required, additionalProperties, items, anyOf,
  enum, const, $ref/$defs, description, title, pattern, format (date-time,
  time, date, duration, email, hostname, ipv4, ipv6, uuid), minimum, maximum,
  exclusiveMinimum, exclusiveMaximum, multipleOf, minItems, maxItems (its 400s:
  "'default' is not permitted", "$ref cannot have keywords {'description'}",
  "schema must have a 'type' key"); limits: 10 levels of nesting, 5000
  properties, 120,000 characters of names and values, 1000 enum values.
  A schema strict mode cannot take is sent with ``strict: false``.
* Anthropic "Structured outputs", JSON Schema limitations, and its 400s ("For
  'integer' type, property 'minimum' is not supported", "Schema type 'oneOf'
  is not supported", "Empty schema ({}) that accepts any JSON value is not
  supported", "Schemas contains too many optional parameters (N) ... (limit:
  24)", "... too many parameters with union types ... (limit: 16 ...)",
  "Circular reference detected in schema definitions"): no recursion, no
  numeric or string-length constraints, minItems 0 or 1 only, listed formats,
  simple patterns, primitive enums, ``additionalProperties: false`` on every
  object, nothing beside ``anyOf``.
* Gemini ``GenerationConfig.responseJsonSchema``: $defs, $ref (nothing beside
  it but $-keywords), type, format, title, description, enum (strings and
  numbers), items, prefixItems, minItems, maxItems, minimum, maximum, anyOf,
  oneOf, properties, additionalProperties, required, propertyOrdering;
  "cyclic references ... may only be used within non-required properties".
* Gemini ``responseSchema`` (the OpenAPI subset, ``gemini_schema_subset`` or
  the v1 API): ``to_gemini_schema``; no recursion, no open objects ("properties:
  should be non-empty for OBJECT type"), string-only enums.
"""


from __future__ import annotations

from typing import Any, NamedTuple

from ..catalog._schema import WireApi
from ..errors import provider_error
from ..types import ProviderFailure
from ._check import (
    MAX_BYTES,
    MAX_DEPTH,
    SchemaUnfit,
    check_schema,
    check_size,
    check_value,
    kind_of,
)
from ._fitter import API_NAME, Fitter, types_of

__all__ = ["MAX_BYTES", "MAX_DEPTH", "FittedSchema", "SchemaUnfit", "fit_for_request", "fit_schema"]

ANTHROPIC_MAX_OPTIONAL = 24
ANTHROPIC_MAX_UNIONS = 16
OPENAI_MAX_LEVELS = 10
OPENAI_MAX_PROPERTIES = 5000
OPENAI_MAX_TEXT = 120_000
OPENAI_MAX_ENUM = 1000


class FittedSchema(NamedTuple):
    """What goes on the wire for a schema: ``strict`` is OpenAI's flag (True for
    Anthropic and Gemini, which always hold the answer to the schema), and
    ``dropped`` the JSON pointers, into the user's schema, of the keywords the
    API could not take (said in descriptions where they constrain)."""

    schema: dict[str, Any]
    strict: bool
    dropped: tuple[str, ...]


def fit_schema(api: WireApi, schema: Any, *, gemini_subset: bool = False) -> FittedSchema:
    """``schema`` as ``api`` takes it for a structured answer; SchemaUnfit if it
    cannot be (``gemini_subset``: Gemini's OpenAPI ``responseSchema``)."""
    check_value(schema)
    if not isinstance(schema, dict):
        raise SchemaUnfit("", f"a JSON Schema is an object, not {kind_of(schema)}")
    refs = check_schema(schema)
    if api in ("chat", "responses"):
        return _openai(api, schema, refs)
    if api == "messages":
        return _anthropic(schema, refs)
    if api == "generate_content":
        return _gemini(schema, refs, subset=gemini_subset)
    raise SchemaUnfit("", f"no structured answers over the {api!r} API")


def fit_for_request(
    api: WireApi, schema: Any, provider: str, *, gemini_subset: bool = False
) -> FittedSchema:
    """``fit_schema`` for a codec: a schema that cannot be fitted fails the call
    as an invalid request (the daemon refuses one before, when it is given)."""
    try:
        return fit_schema(api, schema, gemini_subset=gemini_subset)
    except SchemaUnfit as e:
        why = f"the answer's {e}"
        raise ProviderFailure(provider_error("invalid_request", why, provider=provider)) from None


Refs = dict[str, tuple[Any, str]]


def _openai(api: WireApi, schema: dict[str, Any], refs: Refs) -> FittedSchema:
    fitter = Fitter(api, schema, refs)
    doc = fitter.run()
    check_size(doc, " once fitted")
    dropped = tuple(dict.fromkeys(fitter.dropped))
    from ..openai._schema import strict_schema  # here: the codecs import this module

    strict = None if _open(doc) else strict_schema(doc)
    if strict is not None and not _over_openai_limits(strict):
        return FittedSchema(strict, True, dropped)
    return FittedSchema(doc, False, dropped)


def _anthropic(schema: dict[str, Any], refs: Refs) -> FittedSchema:
    fitter = Fitter("messages", schema, refs)
    doc = fitter.run()
    who = f"the {API_NAME['messages']} API"
    cycle = _cycle(_ref_graph(doc), required_only=False)
    if cycle is not None:
        raise SchemaUnfit(
            fitter.def_paths.get(cycle[0], ""),
            f"'$ref' cycle {' -> '.join(cycle)}: {who} takes no recursive schema "
            "(\"Circular reference detected in schema definitions\"): unroll it to a fixed depth",
        )
    optional, unions = _counts(doc)
    if optional > ANTHROPIC_MAX_OPTIONAL:
        raise SchemaUnfit(
            "", f"{optional} optional properties (not in 'required'): {who} takes at most "
            f"{ANTHROPIC_MAX_OPTIONAL} in a schema: list more of them in 'required'",
        )  # fmt: skip
    if unions > ANTHROPIC_MAX_UNIONS:
        raise SchemaUnfit(
            "", f"{unions} values with a union type ('anyOf', or a list of types such as "
            f"[\"string\", \"null\"]): {who} takes at most {ANTHROPIC_MAX_UNIONS} in a schema: "
            "give more of them one type",
        )  # fmt: skip
    check_size(doc, " once fitted")
    return FittedSchema(doc, True, tuple(dict.fromkeys(fitter.dropped)))


def _gemini(schema: dict[str, Any], refs: Refs, *, subset: bool) -> FittedSchema:
    fitter = Fitter("generate_content", schema, refs, subset=subset)
    doc = fitter.run()
    # "Cyclic references are unrolled to a limited degree and, as such, may only
    # be used within non-required properties"; the OpenAPI subset has no $ref
    cycle = _cycle(_ref_graph(doc), required_only=not subset)
    if cycle is not None:
        how = (
            "Gemini's responseSchema (the v1 API, or the gemini_schema_subset dialect) has "
            "no '$ref': unroll it to a fixed depth"
            if subset
            else "Gemini follows recursion only through a property that is not required: "
            "leave one property on the cycle out of 'required'"
        )
        raise SchemaUnfit(
            fitter.def_paths.get(cycle[0], ""), f"'$ref' cycle {' -> '.join(cycle)}: {how}"
        )
    if subset:
        from ..google._schema import to_gemini_schema  # here: the codec imports this module

        try:
            doc = to_gemini_schema(doc, limit=MAX_BYTES // 10)
        except ValueError as e:
            raise SchemaUnfit("", str(e)) from None
        if any("type" not in n and "anyOf" not in n for n, _home, _opt in _walk(doc)):
            raise SchemaUnfit(  # a $ref to a definition that is only null, say
                "", "a value that can only be null: Gemini's responseSchema has no null type"
            )
    check_size(doc, " once fitted")
    return FittedSchema(doc, True, tuple(dict.fromkeys(fitter.dropped)))


# ------------------------------------------------------------------ the fitted document


def _walk(doc: dict[str, Any]) -> list[tuple[dict[str, Any], str, bool]]:
    """Every schema node of a fitted document: (node, the $defs name it is in or
    "#" for the root, whether an optional property leads to it from there)."""
    out: list[tuple[dict[str, Any], str, bool]] = []
    stack: list[tuple[Any, str, bool]] = [(doc, "#", False)]
    stack.extend((body, name, False) for name, body in (doc.get("$defs") or {}).items())
    while stack:
        node, home, optional = stack.pop()
        if not isinstance(node, dict):
            continue
        out.append((node, home, optional))
        required = node.get("required") or ()
        for name, sub in (node.get("properties") or {}).items():
            stack.append((sub, home, optional or name not in required))
        subs = [node.get("items"), node.get("additionalProperties"), *node.get("anyOf", ())]
        stack.extend((s, home, optional) for s in [*subs, *node.get("prefixItems", ())])
    return out


def _ref_graph(doc: dict[str, Any]) -> dict[str, list[tuple[str, bool]]]:
    """Which definition refers to which: name -> [(target name, through an optional property)]."""
    graph: dict[str, list[tuple[str, bool]]] = {"#": []}
    for name in doc.get("$defs") or {}:
        graph[name] = []
    for node, home, optional in _walk(doc):
        ref = node.get("$ref")
        if isinstance(ref, str):
            graph[home].append((ref.removeprefix("#/$defs/") if ref != "#" else "#", optional))
    return graph


def _cycle(graph: dict[str, list[tuple[str, bool]]], *, required_only: bool) -> list[str] | None:
    """A cycle of references (only through required properties, if asked), or None."""
    state: dict[str, int] = {}
    for start in graph:
        if start in state:
            continue
        path = [start]
        state[start] = 1
        stack = [iter(graph[start])]
        while stack:
            edge = next(stack[-1], None)
            if edge is None:
                stack.pop()
                state[path.pop()] = 2
                continue
            target, optional = edge
            if (required_only and optional) or state.get(target) == 2:
                continue
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            state[target] = 1
            path.append(target)
            stack.append(iter(graph.get(target, ())))
    return None


def _counts(doc: dict[str, Any]) -> tuple[int, int]:
    """(optional properties, values with a union type) in a fitted document."""
    optional = unions = 0
    for node, _home, _opt in _walk(doc):
        props = node.get("properties") or {}
        optional += len(set(props) - set(node.get("required") or ()))
        unions += "anyOf" in node or len(types_of(node)) > 1
    return optional, unions


def _open(doc: dict[str, Any]) -> bool:
    """Whether strict mode cannot take a fitted document: a node that takes any
    value ("schema must have a 'type' key"), or an object whose keys are not
    listed (strict would allow only {})."""
    for node, _home, _opt in _walk(doc):
        if "$ref" in node:
            continue
        if "type" not in node and "anyOf" not in node:
            return True
        listed = node.get("properties") or node.get("additionalProperties") is False
        if "object" in types_of(node) and not listed:
            return True
    return False


def _over_openai_limits(doc: dict[str, Any]) -> bool:
    """Beyond Structured Outputs' limits: nesting, properties, text, enum values."""
    nodes = _walk(doc)
    props = sum(len(n.get("properties") or ()) for n, _h, _o in nodes)
    text = sum(len(name) for n, _h, _o in nodes for name in n.get("properties") or ())
    text += sum(len(name) for name in doc.get("$defs") or ())
    enums = 0
    for n, _h, _o in nodes:
        values = [v for v in n.get("enum") or () if isinstance(v, str)]
        enums += len(n.get("enum") or ())
        text += sum(map(len, values)) + (len(n["const"]) if isinstance(n.get("const"), str) else 0)
        if len(values) > 250 and sum(map(len, values)) > 15_000:
            return True
    return (
        props > OPENAI_MAX_PROPERTIES
        or text > OPENAI_MAX_TEXT
        or enums > OPENAI_MAX_ENUM
        or levels(doc) > OPENAI_MAX_LEVELS
    )


def levels(doc: dict[str, Any]) -> int:
    """The deepest nesting of objects and arrays in a fitted document, through
    its $refs (a recursive one counts once): what OpenAI's "N levels of nesting
    exceeds limit of 10" counts."""
    defs = doc.get("$defs") or {}
    memo: dict[str, int] = {}
    active: set[str] = set()

    def depth(node: Any) -> int:
        if not isinstance(node, dict):
            return 0
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.removeprefix("#/$defs/") if ref != "#" else "#"
            if name in active:
                return 0
            if name not in memo:
                active.add(name)
                memo[name] = depth(doc if name == "#" else defs.get(name))
                active.discard(name)
            return memo[name]
        nested = "object" in types_of(node) or "array" in types_of(node)
        subs = [*(node.get("properties") or {}).values(), node.get("items"),
                node.get("additionalProperties"), *node.get("anyOf", ())]  # fmt: skip
        return int(nested) + max((depth(s) for s in subs), default=0)

    return depth(doc)
