"""an agent's priority in the provider limiter

``agents.priority``: ``interactive`` or ``background``, the place of every
model call of the agent in its provider key's queue (``agent.set_priority``,
``ikictl new/fork --priority``; a fork inherits its parent's); NULL: each
turn's, by who started it (a person: interactive; agents and mail:
background).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("priority", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("priority")
