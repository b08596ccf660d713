"""tool permissions: each agent's policy chain, and pending approvals

``agents.policy`` holds the agent's chain of policy names as a JSON list (its
ancestors' first, its own last; NULL: the configured default). ``approvals``
holds every approval asked: a pending one (``decided_at`` NULL) survives a
restart and is asked again.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("policy", sa.Text(), nullable=True))
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("agent_uuid", sa.String(36), nullable=False),
        sa.Column("turn", sa.String(64), nullable=False),
        sa.Column("tool_call_id", sa.String(256), nullable=False),
        sa.Column("call_json", sa.Text(), nullable=False),
        sa.Column("rule", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("decided_at", TS, nullable=True),
        sa.Column("decision", sa.String(8), nullable=True),
        sa.Column("decided_by", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_uuid"], ["agents.uuid"], name="fk_approvals_agent_uuid_agents"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_approvals"),
    )
    op.create_index("ix_approvals_agent_uuid", "approvals", ["agent_uuid"])


def downgrade() -> None:
    op.drop_index("ix_approvals_agent_uuid", table_name="approvals")
    op.drop_table("approvals")
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("policy")
