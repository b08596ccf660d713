"""SQL history of every agent, message and mail (SQLAlchemy 2, SQLite or PostgreSQL).

    from store import Store
    store = Store()                      # $IKIGAI_DB_URL or ~/.local/share/ikigai/ikigai.db
    a = store.create_agent("main", provider="anthropic", model="claude-sonnet-4-5")
    store.append_user(a.uuid, Message(role="user", content=[TextBlock(text="hi")]))
    messages = store.replay(a.uuid)      # list[providers.types.Message]

Durability: when a write returns, it is committed and survives ``kill -9``.
The store knows nothing of trio: call it through ``trio.to_thread.run_sync``.
See docs/store.md for the schema, the message kinds and how replay works.
"""

from ._admin import AgentAlive, Outline, Removal
from ._approvals import ApprovalClosed, NoSuchApproval
from ._budgets import Budget, BudgetRefused, BudgetState, InvalidBudget, Spent, check_budget
from ._cluster import DaemonRecord, Joining
from ._engine import data_dir, default_url, display_url, resolve_url, sqlite_file
from ._errors import (
    AgentNotFound,
    AmbiguousAgent,
    BadForkPoint,
    DatabaseUnreachable,
    Fenced,
    InvalidEntry,
    NameTaken,
    NoSuchMark,
    ScheduleNotFound,
    SchemaDrift,
    SchemaOutOfDate,
    StoreError,
)
from ._ids import uuid7
from ._replay import SUMMARY_PREFIX, summary_message
from ._rows import MAX_NAME
from ._schedules import Fired, ScheduleRecord, ScheduleRunRecord, ScheduleStats
from ._store import Store
from ._transfer import REFERENCES, ImportedRow, StoredRow
from ._types import (
    KINDS,
    AgentRecord,
    AgentRef,
    ApprovalRecord,
    Entry,
    ForkChild,
    MailRecord,
    MessageRecord,
    QueuedPrompt,
    Replayed,
    UsageReport,
    UsageTotals,
    WorktreeSpec,
)
from ._worktrees import WorktreeRecord

__all__ = [
    "KINDS",
    "MAX_NAME",
    "REFERENCES",
    "SUMMARY_PREFIX",
    "AgentAlive",
    "AgentNotFound",
    "AgentRecord",
    "AgentRef",
    "AmbiguousAgent",
    "ApprovalClosed",
    "ApprovalRecord",
    "BadForkPoint",
    "Budget",
    "BudgetRefused",
    "BudgetState",
    "DaemonRecord",
    "DatabaseUnreachable",
    "Entry",
    "Fenced",
    "Fired",
    "ForkChild",
    "ImportedRow",
    "InvalidBudget",
    "InvalidEntry",
    "Joining",
    "MailRecord",
    "MessageRecord",
    "NameTaken",
    "NoSuchApproval",
    "NoSuchMark",
    "Outline",
    "QueuedPrompt",
    "Removal",
    "Replayed",
    "ScheduleNotFound",
    "ScheduleRecord",
    "ScheduleRunRecord",
    "ScheduleStats",
    "SchemaDrift",
    "SchemaOutOfDate",
    "Spent",
    "Store",
    "StoreError",
    "StoredRow",
    "UsageReport",
    "UsageTotals",
    "WorktreeRecord",
    "WorktreeSpec",
    "check_budget",
    "data_dir",
    "default_url",
    "display_url",
    "resolve_url",
    "sqlite_file",
    "summary_message",
    "uuid7",
]
