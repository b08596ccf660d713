"""schedules and their runs

``schedules``: a prompt for an agent (or a fresh fork of it) at the times a
rule gives (cron in a zone, an interval, once). ``schedule_runs``: one row per
due time, fired or skipped; unique on (schedule_id, due_at), the claim that
makes a due time fire once. ``prompt_queue.meta``: what a queued prompt's
user row carries beside its turn id (a scheduled run's ids).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", ROW_ID, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("agent_uuid", sa.String(36), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("rule", JSON_DOC, nullable=False),
        sa.Column("fork", sa.Boolean(), nullable=False),
        sa.Column("keep", sa.Integer(), nullable=True),
        sa.Column("budget_usd", sa.Float(), nullable=True),
        sa.Column("missed", sa.String(8), nullable=False),
        sa.Column("overlap", sa.String(8), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("next_due", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("removed_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_uuid"], ["agents.uuid"], name="fk_schedules_agent_uuid_agents"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_schedules"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "schedule_runs",
        sa.Column("id", ROW_ID, autoincrement=True, nullable=False),
        sa.Column("schedule_id", ROW_ID, nullable=False),
        sa.Column("due_at", TS, nullable=False),
        sa.Column("fired_at", TS, nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("agent_uuid", sa.String(36), nullable=True),
        sa.Column("turn", sa.String(64), nullable=True),
        sa.ForeignKeyConstraint(
            ["schedule_id"], ["schedules.id"], name="fk_schedule_runs_schedule_id_schedules"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_schedule_runs"),
        sa.UniqueConstraint(
            "schedule_id", "due_at", name="uq_schedule_runs_schedule_id_due_at"
        ),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("prompt_queue") as batch:
        batch.add_column(sa.Column("meta", JSON_DOC, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("prompt_queue") as batch:
        batch.drop_column("meta")
    op.drop_table("schedule_runs")
    op.drop_table("schedules")
