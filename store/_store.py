"""The Store: every agent, message and mail in SQL, behind a synchronous API.

One module per concern, each a mixin over StoreBase (_base.py: the engine,
the transactions, the lineage cache, the shared row writers):

    _agents.py    create, look up, list, the tree, kill, switch model, fork
    _messages.py  append rows; history and replay (folding: _replay.py)
    _mail.py      send, inbox, mark read
    _usage.py     token totals and cost
    _budgets.py   budgets over agent trees, and the spend they are checked against
    _turns.py     the durable prompt queue and turn boundaries
    _approvals.py tool calls asked about, and the permission rows of decisions
    _admin.py     rename, remove and purge; last activity; a lineage's outline
    _cluster.py   daemons sharing the database: membership, ownership, the fence
    _listing.py   listings of every agent: usage and last activity kept up to date
    _transfer.py  a lineage as stored (export); a new agent from such rows (import)
    _schemas.py   JSON Schemas saved by name, for prompts that name one
    _blobs.py     attached files' bytes, once per sha256; the rows refer to them
    _rows.py      entries -> rows (with their checks), SQL rows -> records
"""

from __future__ import annotations

from ._admin import AdminMixin
from ._agents import AgentsMixin
from ._approvals import ApprovalsMixin
from ._budgets import BudgetsMixin
from ._cluster import ClusterMixin
from ._listing import ListingMixin
from ._mail import MailMixin
from ._messages import MessagesMixin
from ._schedules import SchedulesMixin
from ._schemas import SchemasMixin
from ._transfer import TransferMixin
from ._turns import TurnsMixin
from ._usage import UsageMixin
from ._worktrees import WorktreesMixin


class Store(
    TransferMixin,  # first: it builds on AgentsMixin
    BudgetsMixin,  # before AgentsMixin: create_agent and fork write budgets through it
    WorktreesMixin,  # before AgentsMixin: create_agent and fork write worktree rows through it
    AgentsMixin,
    MessagesMixin,
    MailMixin,
    UsageMixin,
    TurnsMixin,
    ApprovalsMixin,
    AdminMixin,
    ListingMixin,  # after AdminMixin: a purge tells it
    SchedulesMixin,
    ClusterMixin,
    SchemasMixin,
):
    """SQL history of every agent: SQLite file (default) or PostgreSQL.

    Synchronous and thread-safe: call it from trio with
    ``trio.to_thread.run_sync``. On a SQLite file, writes take turns on one
    writer connection (``BEGIN IMMEDIATE``) and concurrent ones share one
    commit (_group.py); PostgreSQL's run in parallel. Reads run concurrently.

    Durability: when an append (or any other write) returns, its transaction
    is committed and survives ``kill -9`` of the process. SQLite runs in WAL
    mode with ``synchronous=FULL`` by default, which also survives power loss;
    PostgreSQL follows the server's ``synchronous_commit``.

    ``url`` is used as given; None means ``resolve_url()`` ($IKIGAI_DB_URL, else
    the SQLite file in the user's data folder). With ``upgrade`` (the default)
    the schema is migrated to head on open; without it a database not at head
    raises SchemaOutOfDate. A database that cannot be reached raises
    DatabaseUnreachable.
    """
