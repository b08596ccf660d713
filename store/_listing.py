"""What a listing of every agent reads besides the agents themselves: each
agent's usage totals and last activity, kept between calls and brought up to
date from the rows written since the last one (a high-water mark), and the
agent rows read at a fraction of the cost of SQLAlchemy's rows.

An agent's totals and last activity depend only on its own history rows (and
its agent row's model, which changes only with a model_switch row written in
the same transaction), and history rows are only ever inserted, with ids
never reused (AUTOINCREMENT on SQLite, a sequence on PostgreSQL), or deleted
by a purge. So the store keeps, per agent, what the full computation gives
(store/_usage.py ``own_totals``; the newest row's time), and ``hwm``: an id
such that every row that will ever exist with an id at or below it was
committed when those values were read. A call reads the top id ``top``, the
agents with rows in (hwm, top], computes those agents again (with the same
queries as for every agent, so the same values) and sets hwm to top.
Computing an agent again is idempotent: counting a row twice is harmless;
missing one is not. That needs ``top`` to be safe: no row with an id at or
below it may commit after it was read.

- SQLite: one writer at a time for the whole database (its write lock, for
  every connection and process), and ids are given out inside the writing
  transaction. If the row ``top`` is in a snapshot, the transaction that
  wrote it committed; every smaller id was given out by it or by a writer
  that ended (committed or rolled back) before it began. So every row at or
  below ``top`` that will ever exist is in that snapshot, and the agents
  are computed again in that same read transaction.
- PostgreSQL: writers run in parallel and take ids from the sequence in one
  order and commit in another: a row below ``top`` may still be in flight.
  Every insert holds ROW EXCLUSIVE on messages until its transaction ends,
  so ``top`` is read in a short transaction that first takes SHARE on the
  table (it waits for the writers in flight and holds off new ones for one
  statement); every later id is larger. If the lock is not had within
  LOCK_WAIT (a writer waits on something queued behind the lock), hwm stays
  where it is for this call: the agents with rows above it are computed again
  all the same, so the answer is as fresh, only the next call has more to do.

Deletes are not seen by the mark: a purge (store/_admin.py) names the agents
whose rows it deleted (``_listing_forget``) once it has committed, and they
are computed again at the next call. That covers purges made through this
Store; several daemons on one database (a later issue) would need another
invalidation (LISTEN/NOTIFY on PostgreSQL), and rows deleted by hand (SQL)
need a new Store. A catalog other than the one the values were priced with
starts again from nothing.

An agent with no rows of its own has no entry: no usage (the listing's zero)
and its creation time as its last activity. Calls take turns on one lock:
the Store is called from several threads (agents/store.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy import exc

from providers.catalog import Catalog

from ._base import StoreBase
from ._schema import agents, messages
from ._types import AgentRecord, AgentRef, UsageTotals
from ._usage import fetch_totals, own_totals

# agents with new rows beyond which a call computes every agent (one query,
# no list of ids as parameters: SQLite and PostgreSQL cap those)
MAX_CHANGED = 2000
LOCK_WAIT = "100ms"  # PostgreSQL: how long a call waits for SHARE on messages

_FIELDS = AgentRecord.__struct_fields__
_TIMES = ("created_at", "ended_at", "hidden_at")
_TOP = sa.select(sa.func.max(messages.c.id))


class ListingFacts(NamedTuple):
    """What Store.listing_facts gives: copies, the caller's to keep."""

    totals: dict[str, UsageTotals]  # agents with usage rows: as Store.usage_totals()
    active: dict[str, datetime]  # agents with rows of their own: the newest one's time


class _Kept:
    """The values between calls (see the module doc); guarded by ``lock``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.filled = False
        self.catalog: Catalog | None = None
        self.hwm = 0
        self.totals: dict[str, UsageTotals] = {}
        self.active: dict[str, datetime] = {}
        # agents whose rows a purge deleted: computed again at the next call
        self.forgotten: set[str] = set()
        self.forgotten_lock = threading.Lock()  # not ``lock``: a purge never waits for a call
        # agent.list's rows as last read, with their records (see listing_records)
        self.records: dict[str, tuple[Any, AgentRecord, AgentRef]] = {}


def _newest(uuids: Sequence[str] | None) -> sa.Select[Any]:
    """Each agent's newest own row's time (NULL when it has none): an index
    probe per agent (as AdminMixin.last_active)."""
    a, m = agents.c, messages.c
    newest = (
        sa.select(m.created_at)
        .where(m.agent_uuid == a.uuid)
        .order_by(m.id.desc())
        .limit(1)
        .correlate(agents)
        .scalar_subquery()
    )
    q = sa.select(a.uuid, newest.label("newest"))
    return q if uuids is None else q.where(a.uuid.in_(list(uuids)))


class ListingMixin(StoreBase):
    """Store methods for listings of every agent (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._kept = _Kept()
        self._sql: dict[bool, tuple[str, str]] = {}  # listing_records' SQL, by include_dead
        super().__init__(*args, **kwargs)

    # ------------------------------------------------------------ usage and activity

    def listing_facts(self) -> ListingFacts:
        """Every agent's own usage totals (what usage_totals() gives) and last
        activity (what last_active() gives, for the agents with rows), brought
        up to date from the rows written since the last call."""
        kept = self._kept
        with kept.lock:
            # taken before the rows are read: a purge named after that is
            # computed again next time
            forgotten = self._take_forgotten()
            try:
                if not kept.filled or kept.catalog is not self.catalog:
                    self._fill(kept)
                else:
                    self._catch_up(kept, forgotten)
            except BaseException:
                self._listing_forget(list(forgotten))  # not computed: still to do
                raise
            return ListingFacts(dict(kept.totals), dict(kept.active))

    def _listing_forget(self, uuids: Sequence[str]) -> None:
        """These agents' rows were deleted (committed): compute them again."""
        with self._kept.forgotten_lock:
            self._kept.forgotten.update(uuids)

    def _take_forgotten(self) -> set[str]:
        with self._kept.forgotten_lock:
            taken, self._kept.forgotten = self._kept.forgotten, set()
        return taken

    def _fill(self, kept: _Kept) -> None:
        """Every agent, from nothing."""
        catalog = self.catalog
        top = None if self._sqlite else self._locked_top()
        with self._read() as conn:
            if self._sqlite:
                top = conn.execute(_TOP).scalar() or 0
            fetched = fetch_totals(conn, None)
            newest = conn.execute(_newest(None)).all()
        kept.totals = own_totals(fetched, catalog)
        kept.active = {r[0]: r[1] for r in newest if r[1] is not None}
        kept.catalog = catalog
        kept.hwm = top or 0
        kept.filled = top is not None  # else from nothing again next time

    def _catch_up(self, kept: _Kept, forgotten: set[str]) -> None:
        """The agents with rows above the mark, and those a purge named."""
        # PostgreSQL: None when the lock was not had in time; then every row
        # above the mark is read, and the mark stays
        top = None if self._sqlite else self._locked_top()
        m = messages.c
        with self._read() as conn:
            if self._sqlite:
                top = conn.execute(_TOP).scalar() or 0
            q = sa.select(m.agent_uuid).where(m.id > kept.hwm)
            if top is not None:
                q = q.where(m.id <= top)
            changed = sorted(set(conn.execute(q.distinct()).scalars()) | forgotten)
            if len(changed) > MAX_CHANGED:
                fetched = fetch_totals(conn, None)
                newest = conn.execute(_newest(None)).all()
            elif changed:
                fetched = fetch_totals(conn, changed)
                newest = conn.execute(_newest(changed)).all()
        if len(changed) > MAX_CHANGED:
            kept.totals = own_totals(fetched, self.catalog)
            kept.active = {r[0]: r[1] for r in newest if r[1] is not None}
        elif changed:
            totals = own_totals(fetched, self.catalog)
            active = {r[0]: r[1] for r in newest}
            for u in changed:  # an agent purged away has neither any more
                _put(kept.totals, u, totals.get(u))
                _put(kept.active, u, active.get(u))
        if top is not None:
            kept.hwm = max(kept.hwm, top)

    def _locked_top(self) -> int | None:
        """PostgreSQL: the top id, read under SHARE on messages (see the
        module doc); None when the lock was not had within LOCK_WAIT."""
        with self._read() as conn:
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
            try:
                with conn.begin_nested():
                    conn.exec_driver_sql("LOCK TABLE messages IN SHARE MODE")
            except exc.OperationalError as e:
                if getattr(e.orig, "sqlstate", None) != "55P03":  # lock_not_available
                    raise
                return None
            return int(conn.execute(_TOP).scalar() or 0)

    # ------------------------------------------------------------ the agent rows

    def listing_records(
        self, *, include_dead: bool = False
    ) -> tuple[list[AgentRecord], list[AgentRef]]:
        """What list_agents(include_dead=..., include_hidden=False) gives, and
        every agent's AgentRef (what agent_refs() gives, in id order), in one
        read. The rows come from the driver as they are, each read once: a
        row unchanged since the last call gives the record made from it then."""
        sql = self._sql.get(include_dead)
        if sql is None:
            sql = self._sql[include_dead] = self._listing_sql(include_dead)
        with self._read() as conn:
            cursor = conn.connection.cursor()
            try:
                cursor.execute(sql[0])
                rows = cursor.fetchall()
                cursor.execute(sql[1])  # the agents not listed: their refs only
                others = [AgentRef(u, n, s != "dead") for u, n, s in cursor.fetchall()]
            finally:
                cursor.close()
        before = self._kept.records
        kept: dict[str, tuple[Any, AgentRecord, AgentRef]] = {}
        records: list[AgentRecord] = []
        refs: list[AgentRef] = []
        when = self._times()
        for row in rows:
            seen = before.get(row[0])
            if seen is None or seen[0] != row:
                record = AgentRecord(
                    **{f: when[f](v) if f in when else v for f, v in zip(_FIELDS, row, strict=True)}
                )
                seen = (row, record, AgentRef(record.uuid, record.name, record.alive))
            kept[row[0]] = seen
            records.append(seen[1])
            refs.append(seen[2])
        self._kept.records = kept  # one assignment: a concurrent call reads either
        if others:  # two runs in id order: one merge
            refs = sorted([*refs, *others])
        return records, refs

    def _listing_sql(self, include_dead: bool) -> tuple[str, str]:
        """The listed agents' rows, and the others' refs."""
        a = agents.c
        listed: sa.ColumnElement[bool] = a.hidden_at.is_(None)
        if not include_dead:
            listed = sa.and_(listed, a.status != sa.literal_column("'dead'"))
        rows = sa.select(*(a[f] for f in _FIELDS)).where(listed).order_by(a.uuid)
        others = sa.select(a.uuid, a.name, a.status).where(sa.not_(listed))
        dialect = self._engine.dialect
        return str(rows.compile(dialect=dialect)), str(others.compile(dialect=dialect))

    def _times(self) -> dict[str, Callable[[Any], Any]]:
        """The columns' own conversion (UTCDateTime's, through the driver's)."""
        dialect = self._engine.dialect
        out: dict[str, Callable[[Any], Any]] = {}
        for f in _TIMES:
            convert = agents.c[f].type.dialect_impl(dialect).result_processor(dialect, None)
            out[f] = convert if convert is not None else _same
        return out


def _same(value: Any) -> Any:
    return value


def _put(into: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        into.pop(key, None)
    else:
        into[key] = value
