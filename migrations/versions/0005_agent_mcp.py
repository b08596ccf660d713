"""each agent's MCP servers

``agents.mcp`` holds the names of the MCP servers an agent may use, as a JSON
list (``[]``: none); NULL: the servers the config marks ``default``, followed
across reloads. A fork inherits its parent's unless given its own.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("mcp", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("mcp")
