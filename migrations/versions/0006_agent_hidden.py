"""removed and purged agents

``agents.hidden_at``: when the agent was removed from listings (``agent.remove``,
``agent.prune``: dead agents only); NULL: listed. ``agents.purged_at``: when
its rows were purged; such a row stays only while other agents' lineages read
some of its rows or it has children.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("hidden_at", TS, nullable=True))
        batch.add_column(sa.Column("purged_at", TS, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("purged_at")
        batch.drop_column("hidden_at")
