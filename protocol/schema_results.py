"""What the ``schema.*`` methods answer: JSON Schemas saved by name for
``agent.prompt {schema: NAME}`` (docs/protocol.md, "Structured answers").
Re-exported by protocol.results; TypedDicts, as there."""

# no ``from __future__ import annotations``: TypedDict must see its types
from typing import Any, TypedDict


class SavedSchema(TypedDict):
    """``schema.save``; a row of ``schema.list``."""

    name: str
    description: str
    created_at: str
    updated_at: str


class SchemaShown(SavedSchema):
    """``schema.show``: the schema itself too."""

    schema: dict[str, Any]


class SchemaDeleted(TypedDict):
    deleted: bool  # false: no schema had that name
