"""saved answer schemas and attachment bytes by content hash

``schemas``: JSON Schemas saved by name (``schema.save``) that a prompt may
name instead of sending the schema. ``blobs``: the bytes of files attached to
prompts, kept once per content (sha256 hex), so a history that attaches the
same file many times, or forks that copy it, hold one copy.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
JSONDoc = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    op.create_table(
        "schemas",
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("schema", JSONDoc, nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_schemas"),
    )
    op.create_table(
        "blobs",
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("media_type", sa.String(255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("sha256", name="pk_blobs"),
    )


def downgrade() -> None:
    op.drop_table("blobs")
    op.drop_table("schemas")
