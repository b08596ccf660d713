"""each agent's working directory

Tools ran in the daemon's own working directory (that of whichever command
autostarted it); now every agent has one, set at creation and inherited by
forks. NULL for agents created before: they keep the daemon's.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("cwd", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("cwd")
