"""Structured answers: ``agent.prompt``'s ``schema``, checked before anything
is stored, and the ``schema.*`` methods that save schemas by name.

A schema must be a JSON Schema (checked against its draft's meta-schema with
``jsonschema``; 2020-12 unless ``$schema`` names another), at most
``MAX_SCHEMA`` bytes and ``MAX_DEPTH`` levels, and one the agent's model can
be asked for: a model that takes a response schema natively gets it fitted to
its wire API's subset (providers/schema_fit.py), and what that API cannot
express at all is refused here, naming the place in the schema. What the turn
does with it: agents/_answer.py."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import trio

import protocol as p
from daemon.methods.shapes import stamp
from protocol import params as P
from protocol import results as R

if TYPE_CHECKING:
    from agents import Actor, Supervisor
    from daemon.methods.shapes import ApiHost
    from daemon.server import Connection, Handler
    from store._schemas import SavedSchema

__all__ = ["MAX_DEPTH", "MAX_SCHEMA", "SchemasApi", "checked_schema", "schema_error"]

MAX_SCHEMA = 256 * 1024  # bytes of a schema as JSON
# nesting of objects and arrays in a schema (a request line nests 64 at most:
# protocol.MAX_DEPTH; a schema saved through the store could be deeper)
MAX_DEPTH = 40


def _refuse(field: str, why: str) -> p.RpcError:
    return p.RpcError(p.INVALID_PARAMS, f"{field}: {why}")


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False


def schema_error(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is not a usable JSON Schema (the place and the rule it
    breaks), or None."""
    if _depth_over(schema, MAX_DEPTH):
        return f"nested deeper than {MAX_DEPTH} levels"
    size = len(json.dumps(schema, ensure_ascii=False).encode())
    if size > MAX_SCHEMA:
        return f"{size} bytes as JSON; a schema is at most {MAX_SCHEMA}"
    import jsonschema  # only when a schema is given

    try:
        default = jsonschema.Draft202012Validator
        cls = jsonschema.validators.validator_for(schema, default=default)
        cls.check_schema(schema)
        # a trial run: a $ref that leads nowhere fails here, not mid-turn
        cls(schema).is_valid(None)
    except jsonschema.SchemaError as e:
        where = "".join(f"/{part}" for part in e.absolute_path)
        return f"not a valid JSON Schema at {_short(where or '/', 200)}: {_short(e.message)}"
    except Exception as e:  # any other failure of a hostile schema
        return f"not a usable JSON Schema: {type(e).__name__}: {_short(str(e))}"
    return None


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def checked_schema(
    sup: Supervisor, actor: Actor, asked: dict[str, Any] | str | None
) -> dict[str, Any] | None:
    """The schema a prompt's answer must match (a saved one by name), checked
    for the agent's model; -32602 naming ``schema`` otherwise."""
    if asked is None:
        return None
    if isinstance(asked, str):
        saved = await sup.db.call(sup.db.store.saved_schema, asked)
        if saved is None:
            raise _refuse(
                "schema",
                f"no saved schema is named {asked!r} (schema.list shows them; "
                "schema.save saves one)",
            )
        schema = saved.schema
    else:
        schema = asked
        why = await trio.to_thread.run_sync(schema_error, schema)
        if why is not None:
            raise _refuse("schema", why)
    why = _unfit(sup, actor.provider, actor.model, schema)
    if why is not None:
        raise _refuse("schema", why)
    return schema


def _unfit(sup: Supervisor, provider: str, model: str, schema: dict[str, Any]) -> str | None:
    """What the model's wire API cannot express of ``schema``, when the model
    is asked natively (else the schema is a tool's parameters, which every
    API takes as JSON Schema)."""
    pool = sup.deps.pool
    entry = pool.catalog.lookup(provider, model)
    if entry is None or not entry.capabilities.json_schema:
        return None
    from providers.schema_fit import SchemaUnfit, fit_schema

    api = pool.api_for(provider, model)
    try:
        subset = bool(getattr(pool.get(provider, model).codec, "schema_subset", False))
    except Exception:  # a provider that cannot be built fails its turn instead
        subset = False
    try:
        fit_schema(api, schema, gemini_subset=subset)
    except SchemaUnfit as e:
        return f"{provider}/{model} ({api} API) cannot be asked for it: {_short(str(e), 500)}"
    return None


def _saved(s: SavedSchema) -> R.SavedSchema:
    return {
        "name": s.name,
        "description": s.description,
        "created_at": stamp(s.created_at),
        "updated_at": stamp(s.updated_at),
    }


class SchemasApi:
    """Schemas saved by name, shared by every daemon on the database."""

    def __init__(self, host: ApiHost) -> None:
        self.host = host
        self.db = host.db

    def handlers(self) -> dict[str, Handler]:
        return {
            p.SCHEMA_SAVE: self.save,
            p.SCHEMA_LIST: self.list,
            p.SCHEMA_SHOW: self.show,
            p.SCHEMA_DELETE: self.delete,
        }

    async def save(self, conn: Connection, params: P.SchemaSave) -> R.SavedSchema:
        why = await trio.to_thread.run_sync(schema_error, params.schema)
        if why is not None:
            raise _refuse("schema", why)
        save = self.db.store.save_schema
        saved = await self.db.call(save, params.name, params.schema, params.description)
        return _saved(saved)

    async def list(self, conn: Connection, params: P.NoParams) -> list[R.SavedSchema]:
        return [_saved(s) for s in await self.db.call(self.db.store.saved_schemas)]

    async def show(self, conn: Connection, params: P.SchemaRef) -> R.SchemaShown:
        saved = await self.db.call(self.db.store.saved_schema, params.name)
        if saved is None:
            raise _refuse("name", f"no saved schema is named {params.name!r} (schema.list)")
        return {**_saved(saved), "schema": saved.schema}

    async def delete(self, conn: Connection, params: P.SchemaRef) -> R.SchemaDeleted:
        return {"deleted": await self.db.call(self.db.store.delete_schema, params.name)}
