"""agents, messages, mail and the message_usage view

Revision ID: 0001
Revises:
Create Date: 2025-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "thinking_tokens",
    "cached_tokens",
    "cache_write_tokens",
)


def _usage_view_sql(dialect: str) -> str:
    if dialect == "sqlite":

        def text(key: str) -> str:
            return f"json_extract(data, '$.{key}')"

        def tokens(key: str) -> str:
            return f"COALESCE(json_extract(data, '$.usage.{key}'), 0)"
    else:

        def text(key: str) -> str:
            return f"data ->> '{key}'"

        def tokens(key: str) -> str:
            return f"COALESCE((data -> 'usage' ->> '{key}')::bigint, 0)"

    columns = ",\n  ".join(f"{tokens(k)} AS {k}" for k in USAGE_FIELDS)
    return f"""CREATE VIEW message_usage AS
SELECT
  id AS message_id,
  agent_uuid,
  kind,
  created_at,
  {text("provider")} AS provider,
  {text("model")} AS model,
  {text("thinking_level")} AS thinking_level,
  {columns}
FROM messages
WHERE kind IN ('assistant', 'usage')"""


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("parent_uuid", sa.String(36), nullable=True),
        sa.Column("fork_message_id", ROW_ID, nullable=True),
        sa.Column("provider", sa.String(100), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("thinking_level", sa.String(8), nullable=False),
        sa.Column("system_prompt", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("ended_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["parent_uuid"], ["agents.uuid"], name="fk_agents_parent_uuid_agents"
        ),
        sa.PrimaryKeyConstraint("uuid", name="pk_agents"),
    )
    op.create_table(
        "messages",
        sa.Column("id", ROW_ID, autoincrement=True, nullable=False),
        sa.Column("agent_uuid", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("data", JSON_DOC, nullable=True),
        sa.Column("message_json", sa.Text(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_uuid"], ["agents.uuid"], name="fk_messages_agent_uuid_agents"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_messages"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "mail",
        sa.Column("id", ROW_ID, autoincrement=True, nullable=False),
        sa.Column("from_uuid", sa.String(36), nullable=True),
        sa.Column("to_uuid", sa.String(36), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("read_at", TS, nullable=True),
        sa.ForeignKeyConstraint(["from_uuid"], ["agents.uuid"], name="fk_mail_from_uuid_agents"),
        sa.ForeignKeyConstraint(["to_uuid"], ["agents.uuid"], name="fk_mail_to_uuid_agents"),
        sa.PrimaryKeyConstraint("id", name="pk_mail"),
        sqlite_autoincrement=True,
    )
    # agents and messages point at each other: the second key comes after both
    # tables exist (on SQLite, batch mode rebuilds the still-empty agents table)
    with op.batch_alter_table("agents") as batch:
        batch.create_foreign_key(
            "fk_agents_fork_message_id_messages", "messages", ["fork_message_id"], ["id"]
        )
    op.create_index("ix_agents_parent_uuid", "agents", ["parent_uuid"])
    op.create_index(
        "ux_agents_live_name",
        "agents",
        ["name"],
        unique=True,
        sqlite_where=sa.text("status <> 'dead'"),
        postgresql_where=sa.text("status <> 'dead'"),
    )
    op.create_index("ix_messages_agent_uuid_id", "messages", ["agent_uuid", "id"])
    op.create_index(
        "ix_messages_clear",
        "messages",
        ["agent_uuid", "id"],
        sqlite_where=sa.text("kind = 'clear'"),
        postgresql_where=sa.text("kind = 'clear'"),
    )
    op.create_index("ix_mail_to_uuid_id", "mail", ["to_uuid", "id"])
    op.execute(_usage_view_sql(op.get_bind().dialect.name))


def downgrade() -> None:
    op.execute("DROP VIEW message_usage")
    if op.get_bind().dialect.name != "sqlite":
        # (SQLite: store.migrate runs with foreign keys off, tables drop in any order)
        op.drop_constraint("fk_agents_fork_message_id_messages", "agents", type_="foreignkey")
    op.drop_table("mail")
    op.drop_table("messages")
    op.drop_table("agents")
