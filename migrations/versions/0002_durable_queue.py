"""the durable prompt queue and the open-turn marker

An acknowledged prompt is a ``prompt_queue`` row before the daemon answers, and
``agents.turn_start`` names the user row of the turn that is running, so a
daemon killed at any point can restore the queue in order and mark the cut
turn interrupted.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "prompt_queue",
        sa.Column("id", ROW_ID, autoincrement=True, nullable=False),
        sa.Column("agent_uuid", sa.String(36), nullable=False),
        sa.Column("turn", sa.String(64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("mail_ids", JSON_DOC, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("dropped_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_uuid"], ["agents.uuid"], name="fk_prompt_queue_agent_uuid_agents"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_prompt_queue"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_prompt_queue_agent_uuid_id", "prompt_queue", ["agent_uuid", "id"])
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("turn_start", ROW_ID, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("turn_start")
    op.drop_index("ix_prompt_queue_agent_uuid_id", table_name="prompt_queue")
    op.drop_table("prompt_queue")
