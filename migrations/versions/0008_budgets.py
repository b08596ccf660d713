"""budgets over agent trees

``budgets``: one row per agent that has a budget (``max_cost_usd``,
``max_tokens``, ``max_turns``, each NULL for none; ``allow_unpriced``;
``set_at``). It applies to the agent and every descendant. Spend is not
stored: it is summed from the usage rows of ``messages``.
``ix_messages_spend_day``: the usage rows by time, for the daily budgets.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
_USAGE_ROWS = "kind IN ('assistant', 'usage')"


def upgrade() -> None:
    op.create_table(
        "budgets",
        sa.Column("agent_uuid", sa.String(36), nullable=False),
        sa.Column("max_cost_usd", sa.Float(), nullable=True),
        sa.Column("max_tokens", sa.BigInteger(), nullable=True),
        sa.Column("max_turns", sa.Integer(), nullable=True),
        sa.Column("allow_unpriced", sa.Boolean(), nullable=False),
        sa.Column("set_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_uuid"], ["agents.uuid"], name="fk_budgets_agent_uuid_agents"
        ),
        sa.PrimaryKeyConstraint("agent_uuid", name="pk_budgets"),
    )
    op.create_index(
        "ix_messages_spend_day",
        "messages",
        ["created_at"],
        sqlite_where=sa.text(_USAGE_ROWS),
        postgresql_where=sa.text(_USAGE_ROWS),
    )


def downgrade() -> None:
    op.drop_index(
        "ix_messages_spend_day",
        table_name="messages",
        sqlite_where=sa.text(_USAGE_ROWS),
        postgresql_where=sa.text(_USAGE_ROWS),
    )
    op.drop_table("budgets")
