"""JSON Schemas saved by name (``schema.save``), for prompts that name one
instead of sending it. Shared by every daemon on the database; the daemon
checks that a schema is one before saving it (daemon/methods/schemas.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
import sqlalchemy as sa

from ._base import StoreBase
from ._rows import now
from ._schema import schemas


class SavedSchema(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    schema: dict[str, Any]
    description: str
    created_at: datetime
    updated_at: datetime


def _record(r: Any) -> SavedSchema:
    return SavedSchema(
        name=r.name,
        schema=r.schema,
        description=r.description,
        created_at=r.created_at,
        updated_at=r.updated_at,
    )


class SchemasMixin(StoreBase):
    def save_schema(self, name: str, schema: dict[str, Any], description: str = "") -> SavedSchema:
        """Save or replace the schema ``name``; committed when this returns."""
        at = now()
        with self._write() as conn:
            old = conn.execute(
                sa.select(schemas.c.created_at).where(schemas.c.name == name)
            ).scalar()
            if old is None:
                conn.execute(
                    schemas.insert().values(
                        name=name, schema=schema, description=description,
                        created_at=at, updated_at=at,
                    )
                )
            else:
                conn.execute(
                    schemas.update()
                    .where(schemas.c.name == name)
                    .values(schema=schema, description=description, updated_at=at)
                )
        return SavedSchema(
            name=name, schema=schema, description=description,
            created_at=old or at, updated_at=at,
        )

    def saved_schema(self, name: str) -> SavedSchema | None:
        with self._read() as conn:
            row = conn.execute(sa.select(schemas).where(schemas.c.name == name)).first()
        return None if row is None else _record(row)

    def saved_schemas(self) -> list[SavedSchema]:
        with self._read() as conn:
            rows = conn.execute(sa.select(schemas).order_by(schemas.c.name)).all()
        return [_record(r) for r in rows]

    def delete_schema(self, name: str) -> bool:
        with self._write() as conn:
            gone = conn.execute(schemas.delete().where(schemas.c.name == name)).rowcount
        return bool(gone)
