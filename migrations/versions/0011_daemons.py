"""several daemons on one database

``daemons``: every daemon that joined this database, its heartbeat and its
generation (the lease epoch every write it makes checks); ``agents.daemon``:
the daemon that owns (runs) each agent; ``agents.seq``: the event seq its
next owner goes on from after a move or a drain. NULL: no owner yet (an agent from
before this revision, or one whose owner was lost and nobody has adopted).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "daemons",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("host", sa.Text(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("home", sa.Text(), nullable=False),
        sa.Column("socket", sa.Text(), nullable=False),
        sa.Column("address", sa.Text(), nullable=True),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("schema", sa.String(64), nullable=False),
        sa.Column("labels", sa.Text(), nullable=False),
        sa.Column("lease", sa.Float(), nullable=False),
        sa.Column("agents", sa.Integer(), nullable=False),
        sa.Column("started_at", TS, nullable=False),
        sa.Column("heartbeat_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_daemons"),
    )
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("daemon", sa.String(64), nullable=True))
        batch.add_column(sa.Column("seq", sa.BigInteger(), nullable=True))
        batch.create_index("ix_agents_daemon", ["daemon"])


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_index("ix_agents_daemon")
        batch.drop_column("seq")
        batch.drop_column("daemon")
    op.drop_table("daemons")
