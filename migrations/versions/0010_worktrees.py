"""worktrees of agents

``worktrees``: the git worktree an agent was made in (agent.fork/create
{worktree}), kept after the agent dies until the worktree is pruned.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "worktrees",
        sa.Column("agent_uuid", sa.String(36), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("branch", sa.Text(), nullable=False),
        sa.Column("base", sa.String(64), nullable=False),
        sa.Column("repo", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("pruned_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_uuid"], ["agents.uuid"], name="fk_worktrees_agent_uuid_agents"
        ),
        sa.PrimaryKeyConstraint("agent_uuid", name="pk_worktrees"),
    )


def downgrade() -> None:
    op.drop_table("worktrees")
