"""A prompt's ``schema`` from what a script has at hand: a JSON Schema dict,
a saved schema's name, or a type — a msgspec Struct, a TypedDict or a
dataclass (through msgspec, imported only then), or a pydantic model (when
pydantic is installed; never a dependency). With a type, the answer comes
back as an instance of it."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # importing typing itself costs ikictl start-up time
if TYPE_CHECKING:
    from typing import Any

    SchemaLike = Any  # dict | str | type: see json_schema

__all__ = ["json_schema", "typed_answer"]


def _pydantic(schema: Any) -> bool:
    base = getattr(sys.modules.get("pydantic"), "BaseModel", None)
    return base is not None and isinstance(schema, type) and issubclass(schema, base)


def _typed(schema: Any) -> bool:
    """A type the answer is converted to (not a dict or a saved name)."""
    return isinstance(schema, type) and not isinstance(schema, (dict, str))


def json_schema(schema: SchemaLike) -> dict[str, Any] | str:
    """The JSON Schema (or the saved name) ``agent.prompt`` takes."""
    if isinstance(schema, (dict, str)):
        return schema
    if _pydantic(schema):
        return _root_inlined(schema.model_json_schema())
    import dataclasses
    from typing import is_typeddict

    if isinstance(schema, type) and (
        dataclasses.is_dataclass(schema) or is_typeddict(schema) or _is_struct(schema)
    ):
        import msgspec

        return _root_inlined(msgspec.json.schema(schema))
    raise TypeError(
        "schema: give a JSON Schema dict, a saved schema's name, or a msgspec Struct, "
        f"TypedDict, dataclass or pydantic model type (not {type(schema).__name__})"
    )


def _is_struct(schema: type) -> bool:
    msgspec = sys.modules.get("msgspec")
    return msgspec is not None and issubclass(schema, msgspec.Struct)


def _root_inlined(doc: dict[str, Any]) -> dict[str, Any]:
    """msgspec and pydantic put a type's schema in ``$defs`` and refer to it
    from the root; the APIs want an object at the root. A type that refers
    to itself keeps its definition there too."""
    ref = doc.get("$ref")
    defs = doc.get("$defs")
    if not isinstance(ref, str) or not ref.startswith("#/$defs/") or not isinstance(defs, dict):
        return doc
    name = ref[len("#/$defs/") :]
    if name not in defs:
        return doc
    import copy

    root: dict[str, Any] = copy.deepcopy(defs[name])
    recursive = f'"{ref}"' in _text(defs)
    rest = {k: v for k, v in defs.items() if k != name or recursive}
    if rest:
        root["$defs"] = rest
    return root


def _text(value: Any) -> str:
    import json

    return json.dumps(value)


def typed_answer(outcome: Any, schema: SchemaLike) -> Any:
    """``outcome`` with its ``data`` as an instance of ``schema`` when that is
    a type (and the answer was valid)."""
    if not _typed(schema) or not isinstance(outcome, dict) or outcome.get("data") is None:
        return outcome
    data = outcome["data"]
    if _pydantic(schema):
        value = schema.model_validate(data)
    else:
        import msgspec

        value = msgspec.convert(data, schema)
    return {**outcome, "data": value}
