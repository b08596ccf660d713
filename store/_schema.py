"""The tables, as SQLAlchemy Core metadata. Alembic (``migrations/``) owns the
real schema; ``tests/store/test_migrations.py`` checks the two agree.

See docs/store.md for what each column and message kind means.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect

NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)

# A JSON document: JSONB on PostgreSQL, JSON text on SQLite.
# Python None is SQL NULL, not the JSON text 'null'.
JSONDoc = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
# Row ids: BIGSERIAL on PostgreSQL; INTEGER PRIMARY KEY (the rowid) on SQLite.
RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# Agent ids are UUIDv7 strings: 36 characters, time-ordered as text.
AGENT_ID_LEN = 36


class UTCDateTime(sa.TypeDecorator[datetime]):
    """An aware UTC datetime. SQLite keeps naive UTC text; PostgreSQL timestamptz."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("the store only takes timezone-aware datetimes")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


agents = sa.Table(
    "agents",
    metadata,
    sa.Column("uuid", sa.String(AGENT_ID_LEN), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    # the agent it was forked from or spawned by (the tree); NULL for a root
    sa.Column("parent_uuid", sa.String(AGENT_ID_LEN), sa.ForeignKey("agents.uuid"), nullable=True),
    # the last message it inherits from the parent's history; NULL: inherits nothing
    sa.Column(
        "fork_message_id",
        RowId,
        sa.ForeignKey("messages.id", use_alter=True),
        nullable=True,
    ),
    sa.Column("provider", sa.String(100), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("thinking_level", sa.String(8), nullable=False),
    sa.Column("system_prompt", sa.Text(), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # running | dead
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("ended_at", UTCDateTime(), nullable=True),
    # the user row of the turn that is running; NULL when idle. A daemon killed
    # mid-turn leaves it set, and the next start marks that turn interrupted.
    sa.Column("turn_start", RowId, nullable=True),
    # where its tools run; NULL (agents from before 0003): the daemon's own
    sa.Column("cwd", sa.Text(), nullable=True),
    # its chain of tool-permission policy names, JSON: ancestors' first, its own
    # last (a fork can only narrow); NULL: the configured default
    sa.Column("policy", sa.Text(), nullable=True),
    # the MCP servers it may use, a JSON list of names ([]: none); NULL: the
    # configured defaults. A fork inherits its parent's
    sa.Column("mcp", sa.Text(), nullable=True),
    # when it was removed from listings (agent.remove, agent.prune; a dead agent
    # only); NULL: listed. Its id still finds it, its name no longer does (0006)
    sa.Column("hidden_at", UTCDateTime(), nullable=True),
    # when its rows were purged: the row stays (hidden) only while other
    # agents' lineages still read some of its rows, or it has children (0006)
    sa.Column("purged_at", UTCDateTime(), nullable=True),
    # its model calls' place in the provider limiter (interactive, background)
    # for every turn, inherited by forks; NULL: each turn's, by who started it (0007)
    sa.Column("priority", sa.String(16), nullable=True),
    # the daemon that runs it (daemons.id); NULL: none yet, the next daemon
    # to look adopts it (0011)
    sa.Column("daemon", sa.String(64), nullable=True),
    # the seq of its next event, written when one daemon hands it to another
    # (a move, a drain): its events' seqs go on there. NULL: from 1 (0011)
    sa.Column("seq", sa.BigInteger(), nullable=True),
    sa.Index("ix_agents_parent_uuid", "parent_uuid"),
    sa.Index("ix_agents_daemon", "daemon"),
    # a name is unique among live agents; dead ones keep theirs
    sa.Index(
        "ux_agents_live_name",
        "name",
        unique=True,
        sqlite_where=sa.text("status <> 'dead'"),
        postgresql_where=sa.text("status <> 'dead'"),
    ),
)

messages = sa.Table(
    "messages",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("agent_uuid", sa.String(AGENT_ID_LEN), sa.ForeignKey("agents.uuid"), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    # readable text for people (ikictl history, psql, sqlite3)
    sa.Column("content", sa.Text(), nullable=False),
    # per-kind metadata, queryable (see docs/store.md)
    sa.Column("data", JSONDoc, nullable=True),
    # user/assistant/tool_result rows: the providers.types.Message exactly as
    # msgspec encoded it. Text, not JSONB: JSONB reorders object keys, and
    # replay must give back the same bytes (signatures, tool arguments).
    sa.Column("message_json", sa.Text(), nullable=True),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_messages_agent_uuid_id", "agent_uuid", "id"),
    # replay looks for the newest clear in each range of the lineage
    sa.Index(
        "ix_messages_clear",
        "agent_uuid",
        "id",
        sqlite_where=sa.text("kind = 'clear'"),
        postgresql_where=sa.text("kind = 'clear'"),
    ),
    # a day's spend (budget.daily_usd, providers.NAME.daily_budget_usd) reads
    # only the usage rows written since midnight (0008)
    sa.Index(
        "ix_messages_spend_day",
        "created_at",
        sqlite_where=sa.text("kind IN ('assistant', 'usage')"),
        postgresql_where=sa.text("kind IN ('assistant', 'usage')"),
    ),
    sqlite_autoincrement=True,  # ids are never reused: history order is id order
)

mail = sa.Table(
    "mail",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    # NULL: from a person or a script, not an agent
    sa.Column("from_uuid", sa.String(AGENT_ID_LEN), sa.ForeignKey("agents.uuid"), nullable=True),
    sa.Column("to_uuid", sa.String(AGENT_ID_LEN), sa.ForeignKey("agents.uuid"), nullable=False),
    sa.Column("body", sa.Text(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("read_at", UTCDateTime(), nullable=True),
    sa.Index("ix_mail_to_uuid_id", "to_uuid", "id"),
    sqlite_autoincrement=True,
)

# Prompts acknowledged and not yet started: a row is written before the daemon
# answers agent.prompt, and deleted in the transaction that writes the turn's
# user row, so a prompt is always in exactly one of the two tables. A killed
# agent's queue is kept, with dropped_at set.
prompt_queue = sa.Table(
    "prompt_queue",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("agent_uuid", sa.String(AGENT_ID_LEN), sa.ForeignKey("agents.uuid"), nullable=False),
    sa.Column("turn", sa.String(64), nullable=False),
    sa.Column("text", sa.Text(), nullable=False),
    # the mail this prompt delivers (marked read in the same transaction)
    sa.Column("mail_ids", JSONDoc, nullable=True),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("dropped_at", UTCDateTime(), nullable=True),
    # what the turn's user row carries beside its turn id (a scheduled run:
    # {"schedule": id, "schedule_run": id})
    sa.Column("meta", JSONDoc, nullable=True),
    sa.Index("ix_prompt_queue_agent_uuid_id", "agent_uuid", "id"),
    sqlite_autoincrement=True,
)

# Schedules (store/_schedules.py): a prompt for an agent (or a fresh fork of
# it) at times a rule gives. ``next_due`` is the first due time not yet
# fired or skipped (NULL: a one-shot that is done); ``rule`` holds kind,
# cron, tz, every (seconds), at and anchor (agents/schedules/rules.py).
schedules = sa.Table(
    "schedules",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(200), nullable=True),
    sa.Column("agent_uuid", sa.String(AGENT_ID_LEN), sa.ForeignKey("agents.uuid"), nullable=False),
    sa.Column("prompt", sa.Text(), nullable=False),
    sa.Column("rule", JSONDoc, nullable=False),
    sa.Column("fork", sa.Boolean(), nullable=False),
    sa.Column("keep", sa.Integer(), nullable=True),
    sa.Column("budget_usd", sa.Float(), nullable=True),
    sa.Column("missed", sa.String(8), nullable=False),
    sa.Column("overlap", sa.String(8), nullable=False),
    sa.Column("paused", sa.Boolean(), nullable=False),
    sa.Column("next_due", UTCDateTime(), nullable=True),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("removed_at", UTCDateTime(), nullable=True),
    sqlite_autoincrement=True,
)

# One row per due time of a schedule, fired or skipped. The unique key is
# the claim: the transaction that fires a due time inserts it with the run's
# queued prompt (or fork), so a due time fires once even when several
# daemons share the database.
schedule_runs = sa.Table(
    "schedule_runs",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("schedule_id", RowId, sa.ForeignKey("schedules.id"), nullable=False),
    sa.Column("due_at", UTCDateTime(), nullable=False),
    sa.Column("fired_at", UTCDateTime(), nullable=False),
    sa.Column("status", sa.String(8), nullable=False),  # fired | skipped
    sa.Column("reason", sa.Text(), nullable=True),
    sa.Column("agent_uuid", sa.String(AGENT_ID_LEN), nullable=True),
    sa.Column("turn", sa.String(64), nullable=True),
    sa.UniqueConstraint("schedule_id", "due_at"),
    sqlite_autoincrement=True,
)

# The git worktree an agent was made in (agent.fork/create {worktree}): the
# folder is its cwd. The row outlives the agent until the worktree is pruned
# (pruned_at), so dead agents' worktrees are found again after a restart.
worktrees = sa.Table(
    "worktrees",
    metadata,
    sa.Column(
        "agent_uuid", sa.String(AGENT_ID_LEN), sa.ForeignKey("agents.uuid"), primary_key=True
    ),
    sa.Column("path", sa.Text(), nullable=False),
    sa.Column("branch", sa.Text(), nullable=False),
    sa.Column("base", sa.String(64), nullable=False),  # the commit it started from
    sa.Column("repo", sa.Text(), nullable=False),  # the checkout it was made from
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("pruned_at", UTCDateTime(), nullable=True),
)

# Every daemon that joined this database (0011). A daemon renews its row's
# heartbeat_at; one whose heartbeat is older than its lease is lost, and the
# first daemon to see it so bumps its generation and marks it "lost": every
# write a daemon makes checks, in its transaction, that its row still has the
# generation it joined with (the fence), so a lost daemon writes nothing more.
daemons = sa.Table(
    "daemons",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("generation", sa.Integer(), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # up | draining | stopped | lost
    sa.Column("host", sa.Text(), nullable=False),
    sa.Column("pid", sa.Integer(), nullable=False),
    sa.Column("home", sa.Text(), nullable=False),
    sa.Column("socket", sa.Text(), nullable=False),
    sa.Column("address", sa.Text(), nullable=True),  # HOST:PORT for other hosts; NULL: none
    sa.Column("version", sa.String(64), nullable=False),
    sa.Column("schema", sa.String(64), nullable=False),  # its code's schema revision
    sa.Column("labels", sa.Text(), nullable=False),  # JSON list of strings
    sa.Column("lease", sa.Float(), nullable=False),  # seconds
    sa.Column("agents", sa.Integer(), nullable=False),  # running agents, at its last heartbeat
    sa.Column("started_at", UTCDateTime(), nullable=False),
    sa.Column("heartbeat_at", UTCDateTime(), nullable=False),
)

# Every tool-permission approval asked; a pending one (decided_at NULL)
# survives a restart and is asked again.
approvals = sa.Table(
    "approvals",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("agent_uuid", sa.String(AGENT_ID_LEN), sa.ForeignKey("agents.uuid"), nullable=False),
    sa.Column("turn", sa.String(64), nullable=False),
    sa.Column("tool_call_id", sa.String(256), nullable=False),
    # {"call": the ToolCallBlock as msgspec wrote it, "policy": the policy that asked}
    sa.Column("call_json", sa.Text(), nullable=False),
    sa.Column("rule", sa.Text(), nullable=False),  # the label of the rule that asked
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("decided_at", UTCDateTime(), nullable=True),
    sa.Column("decision", sa.String(8), nullable=True),  # allow | deny
    sa.Column("decided_by", sa.Text(), nullable=True),
    sa.Column("reason", sa.Text(), nullable=True),
    sa.Index("ix_approvals_agent_uuid", "agent_uuid"),
)

# An agent's budget (0008): it applies to the agent and every descendant
# (on a root, to the whole tree); each limit NULL: none. Spend is never stored
# here: it is summed from the usage the messages already hold, so it can
# neither drift from them nor be counted twice after a crash.
budgets = sa.Table(
    "budgets",
    metadata,
    sa.Column(
        "agent_uuid", sa.String(AGENT_ID_LEN), sa.ForeignKey("agents.uuid"), primary_key=True
    ),
    sa.Column("max_cost_usd", sa.Float(), nullable=True),
    sa.Column("max_tokens", sa.BigInteger(), nullable=True),
    sa.Column("max_turns", sa.Integer(), nullable=True),
    # the cost limit was set knowing the model has no price: its calls count
    # toward the tokens and turns only
    sa.Column("allow_unpriced", sa.Boolean(), nullable=False),
    sa.Column("set_at", UTCDateTime(), nullable=False),
)

# A view the migrations create (not part of ``metadata``, so autogenerate
# leaves it alone): one row per assistant or usage message, tokens as columns.
message_usage = sa.Table(
    "message_usage",
    sa.MetaData(),
    sa.Column("message_id", sa.BigInteger()),
    sa.Column("agent_uuid", sa.String(AGENT_ID_LEN)),
    sa.Column("kind", sa.String(32)),
    sa.Column("created_at", UTCDateTime()),
    sa.Column("provider", sa.String()),
    sa.Column("model", sa.String()),
    sa.Column("thinking_level", sa.String()),
    sa.Column("input_tokens", sa.BigInteger()),
    sa.Column("output_tokens", sa.BigInteger()),
    sa.Column("thinking_tokens", sa.BigInteger()),
    sa.Column("cached_tokens", sa.BigInteger()),
    sa.Column("cache_write_tokens", sa.BigInteger()),
)

# JSON Schemas saved by name (0012) for ``agent.prompt {schema: NAME}``.
schemas = sa.Table(
    "schemas",
    metadata,
    sa.Column("name", sa.String(128), primary_key=True),
    sa.Column("schema", JSONDoc, nullable=False),
    sa.Column("description", sa.Text(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
)

# Attached files' bytes (0012), once per content: a message's image or
# document block names its blob by sha256 instead of carrying the bytes.
blobs = sa.Table(
    "blobs",
    metadata,
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("media_type", sa.String(255), nullable=False),
    sa.Column("size", sa.BigInteger(), nullable=False),
    sa.Column("data", sa.LargeBinary(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
)
