"""The params of the ``schema.*`` methods (JSON Schemas saved by name, for
``agent.prompt {schema: NAME}``). Re-exported by protocol.params."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from protocol._params_base import _P

# a saved schema's name: a letter or digit, then letters, digits, _ . -
SchemaName = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")]


class SchemaSave(_P, frozen=True):
    name: SchemaName
    schema: dict[str, Any]
    description: Annotated[str, Meta(max_length=2000)] = ""


class SchemaRef(_P, frozen=True):
    name: SchemaName
