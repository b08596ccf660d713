"""Adapting a checked schema to one wire API's subset of JSON Schema (the rules
and their sources: providers/schema_fit/__init__.py). ``Fitter.run()`` walks
the schema once, each $ref target once more (hoisted into the root
``$defs``); recursion is safe here: check_value bounded the depth."""

from __future__ import annotations

import json
import re
from typing import Any

from ..catalog._schema import WireApi
from ._check import MAX_BYTES, MAX_DEPTH, SchemaUnfit, pointer

_EXPAND = 50_000  # nodes copied by inlining $refs (allOf, anyOf branches), at most
_HINT_VALUE = 200  # characters of one dropped constraint said in a description

API_NAME = {
    "chat": "OpenAI Chat Completions",
    "responses": "OpenAI Responses",
    "messages": "Anthropic Messages",
    "generate_content": "Gemini",
}

# validation keywords said in the description when dropped (others are annotations)
_HINTS = frozenset(
    {
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems",
        "minContains", "maxContains", "contains", "minProperties", "maxProperties",
        "propertyNames", "patternProperties", "dependentRequired", "dependentSchemas",
        "not", "if", "then", "else", "const", "enum", "default",
    }
)  # fmt: skip
_QUIET = frozenset({"$schema", "$id", "$comment", "$defs", "definitions"})

_OPENAI = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
        "const", "$ref", "description", "title", "pattern", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip
_OPENAI_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_ANTHROPIC = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "minItems", "anyOf",
        "enum", "const", "$ref", "description", "title", "default", "format", "pattern",
    }
)  # fmt: skip
_ANTHROPIC_FORMATS = _OPENAI_FORMATS | {"uri"}
_GEMINI = frozenset(
    {
        "type", "format", "title", "description", "enum", "items", "prefixItems", "minItems",
        "maxItems", "minimum", "maximum", "anyOf", "properties", "additionalProperties",
        "required", "propertyOrdering", "$ref",
    }
)  # fmt: skip
# the JSON Schema keywords to_gemini_schema carries to the OpenAPI subset
_SUBSET = frozenset(
    {
        "type", "format", "title", "description", "nullable", "enum", "const", "items",
        "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties",
        "pattern", "minimum", "maximum", "anyOf", "properties", "required", "propertyOrdering",
        "default", "example", "$ref",
    }
)  # fmt: skip
# keywords that constrain values of some types only: on a node of other types they mean nothing
_APPLIES = {
    **dict.fromkeys(
        ("properties", "required", "additionalProperties", "patternProperties", "minProperties",
         "maxProperties", "propertyNames", "dependentRequired", "dependentSchemas",
         "unevaluatedProperties", "propertyOrdering"), frozenset({"object"})),
    **dict.fromkeys(
        ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
         "contains", "minContains", "maxContains", "unevaluatedItems"), frozenset({"array"})),
    **dict.fromkeys(("minLength", "maxLength", "pattern"), frozenset({"string"})),
    **dict.fromkeys(
        ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
        frozenset({"number", "integer"})),
}  # fmt: skip
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment"})
_SUBSET_FORMATS = {"string": {"date-time", "enum"}, "integer": {"int32", "int64"},
                   "number": {"float", "double"}}  # fmt: skip
# Anthropic: "Backreferences ... Lookahead/lookbehind ... Word boundaries ... Complex {n,m}
# quantifiers with large ranges" are not taken; a pattern with one is dropped
_HARD_PATTERN = re.compile(r"\\[1-9bBk]|\(\?<?[=!]|\{\s*\d{3,}|,\s*\d{3,}\s*\}")


def _is(value: Any, kind: str) -> bool:
    """Whether ``value`` is of JSON Schema type ``kind``."""
    if kind == "integer":
        if isinstance(value, float):
            return value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    checks: dict[str, Any] = {
        "string": str, "boolean": bool, "object": dict, "array": list, "null": type(None)
    }  # fmt: skip
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, checks[kind])


def _type_of(value: Any) -> str:
    return next(k for k in ("null", "boolean", "integer", "number", "string", "array", "object")
                if _is(value, k))  # fmt: skip


def types_of(node: dict[str, Any]) -> list[str]:
    kind = node.get("type")
    return [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []


def _merge(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """``base`` and ``other`` as one schema (allOf): properties and required
    joined, any other keyword kept from ``base`` when both have it. The result
    takes every value both take (and maybe more): the answer is validated
    against the user's schema anyway."""
    out = dict(base)
    for key, value in other.items():
        if key == "properties" and isinstance(out.get(key), dict):
            out[key] = {**out[key], **{k: v for k, v in value.items() if k not in out[key]}}
        elif key == "required" and isinstance(out.get(key), list):
            out[key] = list(dict.fromkeys([*out[key], *value]))
        elif key not in out and key not in ("$defs", "definitions"):
            out[key] = value
    return out


def _hint(node: dict[str, Any], said: dict[str, Any]) -> None:
    """Say dropped constraints in the node's description, as Anthropic's SDK does."""
    if not said:
        return
    parts = []
    for key, value in said.items():
        text = json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}: {text if len(text) <= _HINT_VALUE else text[:_HINT_VALUE] + '…'}")
    note = "{" + ", ".join(parts) + "}"
    old = node.get("description")
    node["description"] = f"{old}\n\n{note}" if isinstance(old, str) and old else note


def _guess(node: dict[str, Any]) -> str | list[str] | None:
    """The type(s) a node's keywords imply, for an API that wants a type."""
    values = [*node.get("enum", ()), *([node["const"]] if "const" in node else [])]
    if values:
        kinds = list(dict.fromkeys(_type_of(v) for v in values))
        if "number" in kinds and "integer" in kinds:
            kinds.remove("integer")
    else:
        implied = {
            "object": ("properties", "required", "additionalProperties", "patternProperties",
                       "minProperties", "maxProperties", "propertyNames"),
            "array": ("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"),
            "string": ("minLength", "maxLength", "pattern"),
            "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
        }  # fmt: skip
        kinds = [k for k, keys in implied.items() if any(key in node for key in keys)]
    return None if not kinds else kinds[0] if len(kinds) == 1 else kinds


def _def_name(ref: str, taken: set[str]) -> str:
    match = re.fullmatch(r"#/(?:\$defs|definitions)/([^/]+)", ref)
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", match.group(1))[:64] if match else "ref"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


class Fitter:
    """One schema made into one API's subset: ``run()`` the fitted document."""

    def __init__(
        self, api: WireApi, root: dict[str, Any], refs: dict[str, tuple[Any, str]], *,
        subset: bool = False,
    ) -> None:  # fmt: skip
        self.api, self.root, self.refs, self.subset = api, root, refs, subset
        self.names: dict[str, str] = {}  # $ref -> its name in the fitted $defs
        self.def_paths: dict[str, str] = {}  # that name -> the target's path in the user's schema
        self.queue: list[str] = []
        self.dropped: list[str] = []
        self.active: list[str] = []  # the $refs inlined into the nodes being fitted
        self.said: list[dict[str, Any]] = []  # for each node being fitted, its dropped constraints
        self.budget = _EXPAND + 3 * MAX_BYTES // 20  # node() calls: every node once, and copies
        openai = api in ("chat", "responses")
        anthropic = api == "messages"
        self.takes = (
            _OPENAI if openai else _ANTHROPIC if anthropic else _SUBSET if subset else _GEMINI
        )
        self.typed = openai or anthropic or subset  # the API wants a type where one can be told
        self.closed = anthropic  # additionalProperties: false on every object
        self.bare_any = openai or anthropic  # nothing beside anyOf but words
        self.listed = anthropic or subset  # no object without its properties listed
        self.exact = anthropic or subset  # no node that takes any value

    @property
    def who(self) -> str:
        if self.subset:
            return "Gemini's responseSchema (the v1 API, or the gemini_schema_subset dialect)"
        return f"the {API_NAME[self.api]} API"

    def run(self) -> dict[str, Any]:
        out = self.node(self.root, "", root=True)
        defs: dict[str, Any] = {}
        while self.queue:
            ref = self.queue.pop()
            target, path = self.refs[ref]
            defs[self.names[ref]] = self.node(target, path)
        if defs:
            out["$defs"] = dict(sorted(defs.items()))
        return out

    def _spend(self, path: str) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise SchemaUnfit(path, "too large once its '$ref's and 'allOf's are expanded")

    def _ref(self, ref: str) -> str:
        if ref == "#":
            return ref
        if ref not in self.names:
            name = self.names[ref] = _def_name(ref, set(self.names.values()))
            self.def_paths[name] = self.refs[ref][1]
            self.queue.append(ref)
        return "#/$defs/" + self.names[ref]

    def _drop(self, node: dict[str, Any], path: str, keys: list[str]) -> None:
        for key in keys:
            value = node.pop(key)
            if key not in _QUIET:
                self.dropped.append(pointer(path, key))
            if key in _HINTS:
                self.said[-1][key] = value

    def _inline(
        self, node: dict[str, Any], path: str, *, recursive: bool = False
    ) -> dict[str, Any]:
        """``node`` with its $ref's target merged in (and the target's own); a
        $ref already being inlined stays (``recursive``), or is refused."""
        while "$ref" in node:
            ref = node["$ref"]
            if ref in self.active:
                if recursive:
                    return node
                raise SchemaUnfit(
                    path, f"'$ref' {ref!r} makes the schema recursive here, which "
                    f"{self.who} cannot take: unroll it to a fixed depth",
                )  # fmt: skip
            del node["$ref"]
            self.active.append(ref)
            target = self.refs[ref][0]
            node = _merge(node, target if isinstance(target, dict) else {})
            self._spend(path)
        return node

    def _flatten(self, raw: dict[str, Any], path: str, *, root: bool) -> dict[str, Any]:
        """``raw`` with every allOf merged in (and a root $ref inlined)."""
        node = dict(raw)
        rounds = 0
        while "allOf" in node or (root and "$ref" in node):
            rounds += 1
            if rounds > MAX_DEPTH:
                raise SchemaUnfit(path, "'allOf' and '$ref' nested too deep to merge")
            if root and "$ref" in node:
                node = self._inline(node, path)
            if "allOf" in node:
                self.dropped.append(pointer(path, "allOf"))
                recursive = None
                for i, branch in enumerate(node.pop("allOf")):
                    if branch is False:
                        raise SchemaUnfit(pointer(path, "allOf", i), "false matches no value")
                    if isinstance(branch, dict):
                        flat = self._inline(dict(branch), path, recursive=True)
                        if "$ref" in flat:  # recursion cannot be inlined: it stays a $ref
                            recursive = flat["$ref"]
                        else:
                            node = _merge(node, flat)
                if recursive is not None and not set(node) - _ANNOTATIONS - _QUIET:
                    node["$ref"] = recursive
        return node

    def node(
        self, raw: Any, path: str, *, root: bool = False, branch: bool = False
    ) -> dict[str, Any]:
        self._spend(path)
        if raw is False:
            raise SchemaUnfit(path, "the schema false matches no value: no answer could be given")
        mark = len(self.active)
        self.said.append({})
        try:
            out = self._node(raw if isinstance(raw, dict) else {}, path, root=root, branch=branch)
            if "$ref" not in out:  # nothing may stand beside a $ref
                _hint(out, self.said[-1])
            return out
        finally:
            self.said.pop()
            del self.active[mark:]

    def _node(self, raw: dict[str, Any], path: str, *, root: bool, branch: bool) -> dict[str, Any]:
        node = self._flatten(raw, path, root=root)
        if "$ref" in node:
            out = {"$ref": self._ref(node.pop("$ref"))}
            self._drop(node, path, list(node))  # nothing may stand beside a $ref
            return out
        any_key = "anyOf"
        if "oneOf" in node:
            self.dropped.append(pointer(path, "oneOf"))
            branches = node.pop("oneOf")
            if "anyOf" not in node:  # "at least one" for "exactly one": the answer is checked
                node["anyOf"], any_key = branches, "oneOf"
        if self.bare_any and "anyOf" in node:
            node = self._split(node, path, any_key)
        if self.typed and "type" not in node and "anyOf" not in node:
            guess = _guess(node)
            if guess is not None:
                node["type"] = guess
        kinds = set(types_of(node))
        for key in [k for k in node if kinds and k in _APPLIES and not _APPLIES[k] & kinds]:
            del node[key]  # it constrains no value the node takes: nothing is lost
        if root and self.api in ("chat", "responses"):
            self._object_root(node)
        self._values(node, path)
        items = self._tuple(node, path)
        self._drop(node, path, [k for k in node if k not in self.takes])
        self._constraints(node, path)
        self._children(node, path, any_key)
        if items is not None:
            node["items"] = items
        self._objects(node, path)
        if self.exact and not any(k in node for k in ("type", "anyOf", "enum", "const")):
            raise SchemaUnfit(
                path, f"this schema takes any JSON value, which {self.who} cannot be "
                "asked for: give it a 'type'",
            )  # fmt: skip
        if self.exact and "array" in types_of(node) and "items" not in node:
            raise SchemaUnfit(path, f"an array of any values: {self.who} needs its 'items'")
        if self.subset:  # a null branch of anyOf makes it nullable; alone it is nothing
            nulls = "anyOf" in node and all(types_of(b) == ["null"] for b in node["anyOf"])
            if nulls or (types_of(node) == ["null"] and not branch):
                raise SchemaUnfit(path, f"a value that can only be null: {self.who} has no null")
        return node

    def _object_root(self, node: dict[str, Any]) -> None:
        kinds = types_of(node)
        if "anyOf" in node or "object" not in kinds:
            got = "anyOf" if "anyOf" in node else "/".join(kinds) or "any value"
            raise SchemaUnfit(
                "", f"{self.who} takes only an object at the root of an answer's schema "
                f"(got {got}): wrap it in one, e.g. {{\"type\": \"object\", \"properties\": "
                "{\"result\": <this schema>}, \"required\": [\"result\"]}",
            )  # fmt: skip
        node["type"] = "object"

    def _split(self, node: dict[str, Any], path: str, any_key: str) -> dict[str, Any]:
        """Anthropic takes nothing beside anyOf ("For 'anyOf', 'type' is not
        supported"), nor OpenAI beside a $ref that may be a branch: the siblings
        go into each branch, which is what they meant."""
        if "default" in node:
            self._drop(node, path, ["default"])
        keep = {"anyOf", "description", "title"}
        siblings = {k: v for k, v in node.items() if k not in keep and k not in _QUIET}
        if not siblings:
            return node
        branches = []
        for i, branch in enumerate(node["anyOf"]):
            if isinstance(branch, dict):
                at = pointer(path, any_key, i)
                flat = self._inline(dict(branch), at, recursive=not self.closed)
                if "$ref" in flat:  # recursion (OpenAI takes it): the branch as it is
                    branches.append({"$ref": flat["$ref"]})
                else:
                    branches.append(_merge(self._flatten(flat, at, root=False), siblings))
            elif branch is True:
                branches.append(dict(siblings))
        if not branches:
            raise SchemaUnfit(pointer(path, any_key), "no branch can match: nothing could")
        out = {k: v for k, v in node.items() if k in keep}
        out["anyOf"] = branches
        return out

    def _values(self, node: dict[str, Any], path: str) -> None:
        """enum and const as the API takes them."""
        gemini = self.api == "generate_content"
        if gemini and not self.subset and "const" in node:
            value = node["const"]
            if "enum" in node:
                self._drop(node, path, ["const"])
            elif value is None or isinstance(value, str) or _is(value, "number"):
                node["enum"] = [node.pop("const")]
        if "enum" in node:
            values = node["enum"]
            nulls = None in values
            if gemini and self.subset:
                fits = all(v is None or isinstance(v, str) for v in values)
                if fits and not any(isinstance(v, str) for v in values):
                    del node["enum"]  # only null
                    node["type"] = "null"
            elif gemini:
                fits = all(v is None or _is(v, "number") or isinstance(v, str) for v in values)
                if fits and nulls:  # "enum (for strings and numbers)": null goes in the type
                    node["enum"] = [v for v in values if v is not None]
                    kinds = types_of(node) or list(dict.fromkeys(map(_type_of, values)))
                    node["type"] = list(dict.fromkeys([*kinds, "null"]))
                    if not node["enum"]:
                        del node["enum"]
            else:
                complex_ = any(isinstance(v, (dict, list)) for v in values)
                fits = self.api != "messages" or not complex_
            if not fits:
                self._drop(node, path, ["enum"])
        if self.api == "messages":
            kinds = types_of(node)
            if len(kinds) > 1 and ("enum" in node or "const" in node):
                del node["type"]  # Claude checks enum values against a list of types wrongly
            elif len(kinds) == 1 and "enum" in node:
                node["enum"] = [v for v in node["enum"] if _is(v, kinds[0])]
                if not node["enum"]:
                    raise SchemaUnfit(pointer(path, "enum"), f"no value of 'enum' is a {kinds[0]}")
            if isinstance(node.get("const"), (dict, list)):
                self._drop(node, path, ["const"])
        if "const" in node and gemini and not isinstance(node["const"], str):
            if node["const"] is None:
                node.pop("const")
                node["type"] = "null"
            else:
                self._drop(node, path, ["const"])

    def _tuple(self, node: dict[str, Any], path: str) -> dict[str, Any] | None:
        """A tuple (``items`` as an array, or ``prefixItems``) as the API takes
        it: Gemini's JSON Schema has prefixItems; the others get the items'
        anyOf. Returns the fitted ``items`` when it made them."""
        items = node.get("items")
        if not isinstance(items, list) and "prefixItems" not in node:
            return None
        key = "items" if isinstance(items, list) else "prefixItems"
        tup = node.pop(key)
        rest = node.pop("additionalItems", None) if key == "items" else node.pop("items", None)
        fitted = [self.node(s, pointer(path, key, i)) for i, s in enumerate(tup)]
        more = None if rest is None or rest is False else self.node(rest, pointer(path, key))
        if self.api == "generate_content" and not self.subset:
            node["prefixItems"] = fitted
            return more
        self.dropped.append(pointer(path, key))
        branches = [*fitted, *([more] if more is not None else [])]
        return branches[0] if len(branches) == 1 else {"anyOf": branches}

    def _constraints(self, node: dict[str, Any], path: str) -> None:
        """Keywords the API has but not with every value."""
        drop = []
        fmt = node.get("format")
        if fmt is not None:
            if self.api != "generate_content" and "string" not in types_of(node):
                allowed: set[str] | frozenset[str] = set()
            elif self.subset:
                allowed = set().union(*(_SUBSET_FORMATS.get(k, ()) for k in types_of(node)))
            elif self.api == "generate_content":
                allowed = {fmt}
            else:
                allowed = _ANTHROPIC_FORMATS if self.api == "messages" else _OPENAI_FORMATS
            if fmt not in allowed:
                drop.append("format")
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            if isinstance(node.get(key), bool):  # draft 4's form
                drop.append(key)
        if self.api == "messages":
            if node.get("minItems", 0) not in (0, 1):
                drop.append("minItems")
            if "pattern" in node and _HARD_PATTERN.search(node["pattern"]):
                drop.append("pattern")
        self._drop(node, path, drop)

    def _children(self, node: dict[str, Any], path: str, any_key: str) -> None:
        props = node.get("properties")
        if isinstance(props, dict):
            out = {}
            required = node.get("required") or []
            for name, sub in props.items():
                at = pointer(path, "properties", name)
                if sub is False:  # the property may not be there: leave it unlisted
                    if name in required:
                        raise SchemaUnfit(at, "a required property whose schema is false")
                    self.dropped.append(at)
                else:
                    out[name] = self.node(sub, at)
            node["properties"] = out
        if node.get("items") is False:  # no items: an empty array; the answer is checked
            self._drop(node, path, ["items"])
        elif isinstance(node.get("items"), (dict, bool)):
            node["items"] = self.node(node["items"], pointer(path, "items"))
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and not self.closed:  # Claude's are all made false
            node["additionalProperties"] = self.node(extra, pointer(path, "additionalProperties"))
        if "anyOf" in node:
            branches = [
                self.node(b, pointer(path, any_key, i), branch=True)
                for i, b in enumerate(node["anyOf"])
                if b is not False
            ]
            if not branches:
                raise SchemaUnfit(pointer(path, any_key), "no branch can match: nothing could")
            node["anyOf"] = branches

    def _objects(self, node: dict[str, Any], path: str) -> None:
        props = node.get("properties") or {}
        if "required" in node:
            kept = [r for r in node["required"] if r in props]
            if len(kept) < len(node["required"]):
                self.dropped.append(pointer(path, "required"))
            if kept:
                node["required"] = kept
            else:
                del node["required"]
        if "object" not in types_of(node):
            return
        extra = node.get("additionalProperties")
        if self.listed and not props and (self.subset or extra is not False):
            raise SchemaUnfit(
                path, f"an object with no 'properties' (a map of any keys) cannot be "
                f"asked of {self.who}: it needs every key listed in 'properties' "
                "(or make it an array of {key, value} objects)",
            )  # fmt: skip
        if self.closed and extra is not False:
            if extra is not None:
                self.dropped.append(pointer(path, "additionalProperties"))
            node["additionalProperties"] = False
