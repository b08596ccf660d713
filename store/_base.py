"""What every concern of the Store shares: the engine, the locks, the
transactions, the lineage cache, and the two primitives every write goes
through (the agent's row, the insert of history rows).

Each concern (_agents, _messages, _mail, _usage, _turns) is a mixin over
StoreBase, so its methods see these with their types; _store.py composes them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import Any, Self

import sqlalchemy as sa
from sqlalchemy import exc

from providers.catalog import Catalog, default_catalog

from . import _head, _replay
from ._blobs import put_blobs
from ._engine import (
    Synchronous,
    display_url,
    is_memory_sqlite,
    make_engine,
    normalize_url,
    ping,
    resolve_url,
)
from ._errors import AgentNotFound, DatabaseUnreachable, Fenced, StoreError
from ._group import MAX_MEMBERS, GroupCommit
from ._rows import Prepared, row_params
from ._rows import now as _now
from ._schema import agents, daemons, messages
from ._types import MessageRecord

# Statements built once: building one per call (and its cache key) costs more
# than running it on the connection.
_INSERT_ONE = messages.insert()
_INSERT_MANY = messages.insert().returning(messages.c.id, sort_by_parameter_order=True)
# the fence: this daemon's row, still at its generation, locked against
# being marked lost until the write commits (_cluster.py)
_FENCE = (
    sa.select(daemons.c.id)
    .where(
        daemons.c.id == sa.bindparam("f_id"),
        daemons.c.generation == sa.bindparam("f_gen"),
        daemons.c.state.in_(("up", "draining")),
    )
    .with_for_update(read=True)
)
_AGENT_ROW = sa.select(agents).where(agents.c.uuid == sa.bindparam("uuid"))


class AgentLookup:
    """An agent's row, read from the database the first time one of its
    columns is asked for (AgentNotFound then if there is none)."""

    __slots__ = ("_conn", "_row", "_store", "_uuid")

    def __init__(self, store: StoreBase, conn: sa.Connection, uuid: str) -> None:
        self._store, self._conn, self._uuid = store, conn, uuid
        self._row: Any = None

    def row(self) -> Any:
        if self._row is None:
            self._row = self._store._agent_row(self._conn, self._uuid)
        return self._row

    def __getattr__(self, column: str) -> Any:
        return getattr(self.row(), column)


class StoreBase:
    """The engine and its transactions; see Store for the whole contract."""

    def __init__(
        self,
        url: str | None = None,
        *,
        upgrade: bool = True,
        catalog: Catalog | None = None,
        sqlite_synchronous: Synchronous = "FULL",
        echo: bool = False,
        group_commit: bool | None = None,
    ) -> None:
        """``group_commit``: whether concurrent writes share one transaction
        and one commit (_group.py). None, the default, means on for a SQLite
        file and off for PostgreSQL, whose writers then run in parallel on the
        pool, each its own transaction. There the server already shares one
        WAL flush among concurrent commits, and one writer connection runs
        every round trip one after another (three per write: savepoint,
        statement, release) where parallel connections overlap them: on a
        local server it measured no faster for 32 writers (0.75x to 1.3x of
        parallel, tests/bench/bench_store.py), and a server a network away
        would cap writes at one per three round trips. Off on SQLite, each
        write commits alone. A memory database ignores it (one connection for
        all, under a lock)."""
        self.url = resolve_url() if url is None else normalize_url(url)
        self._engine = make_engine(self.url, synchronous=sqlite_synchronous, echo=echo)
        self.dialect: str = self._engine.dialect.name
        self._sqlite = self.dialect == "sqlite"
        # an in-memory SQLite database is one connection shared by every
        # thread: reads and writes take turns under one lock, with a
        # transaction each (a read cannot run inside a batch left open)
        memory = self._sqlite and is_memory_sqlite(self._engine.url)
        self._write_lock: threading.Lock | None = threading.Lock() if memory else None
        self._read_lock = self._write_lock
        # A SQLite file's writers take turns on one connection kept between
        # writes (no pool checkout and reset per write), grouped or one
        # commit each. Grouped PostgreSQL writers take a connection from the
        # pool per batch, so one the server or a firewall dropped while idle
        # is found by the pool's ping, not by a write.
        grouped = self._sqlite if group_commit is None else group_commit
        self._writer: sa.Connection | None = None
        self._group: GroupCommit | None = None
        if not memory and (grouped or self._sqlite):
            self._group = GroupCommit(
                self._begin_batch,
                self._end_batch,
                self._forget_uncommitted,
                max_members=MAX_MEMBERS if grouped else 1,
            )
        self._catalog = catalog
        # the daemon this store writes for: new agents are its own, and on
        # PostgreSQL every write checks its lease first (_cluster.py)
        self.daemon_id: str | None = None
        self._fence: dict[str, Any] | None = None
        # lineage ranges never change once an agent exists (parent and fork
        # point are fixed at creation), so they are cached by agent id
        self._ranges: dict[str, tuple[_replay.Range, ...]] = {}
        try:
            ping(self._engine)
            # alembic costs more to import than SQLAlchemy: only when the schema needs it
            self.revision: str | None = _head.at_head(self._engine)
            if self.revision is None:
                from . import migrate

                self.revision = (
                    migrate.upgrade(self._engine)
                    if upgrade
                    else migrate.ensure_current(self._engine)
                )
        except BaseException:
            self._engine.dispose()
            raise

    # ------------------------------------------------------------ plumbing

    def close(self) -> None:
        """Close every pooled connection; the store is not used after this."""
        if self._group is not None:
            self._group.close(self._drop_writer)
        self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({display_url(self.url)!r})"

    @property
    def engine(self) -> sa.Engine:
        return self._engine

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = default_catalog()
        return self._catalog

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except exc.OperationalError as e:
            text = " ".join(str(e.orig).split())
            if e.connection_invalidated or "connect" in text.lower() or "unable to open" in text:
                raise DatabaseUnreachable(f"lost database {display_url(self.url)}: {text}") from e
            raise StoreError(f"database {display_url(self.url)}: {text}") from e
        except exc.DBAPIError as e:
            raise StoreError(f"database {display_url(self.url)}: {e.orig}") from e
        except sqlite3.Error as e:  # from the driver itself (BEGIN is issued there, see _engine)
            raise StoreError(f"database {display_url(self.url)}: {e}") from e

    @contextmanager
    def _read(self) -> Iterator[sa.Connection]:
        lock = self._read_lock if self._read_lock is not None else nullcontext()
        with self._guard(), lock, self._engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _write(self) -> Iterator[sa.Connection]:
        """A write transaction: committed when the block exits without error."""
        if self._group is not None:
            with self._guard(), self._group.write() as conn:
                yield conn
            return
        lock = self._write_lock if self._write_lock is not None else nullcontext()
        with self._guard(), lock, self._engine.connect() as conn:
            if self._sqlite:
                conn.execution_options(ikigai_begin="IMMEDIATE")
            with conn.begin():
                self._check_fence(conn)
                yield conn

    @contextmanager
    def _unfenced(self) -> Iterator[sa.Connection]:
        """A write transaction that does not check the lease: the daemon's
        own membership writes (join, heartbeat, marking others lost)."""
        if self._sqlite:  # one daemon per file: nothing is fenced there
            with self._write() as conn:
                yield conn
            return
        with self._guard(), self._engine.connect() as conn, conn.begin():
            yield conn

    def _check_fence(self, conn: sa.Connection) -> None:
        """Raise Fenced unless this daemon still holds its lease (see _cluster.py)."""
        if self._fence is not None and conn.execute(_FENCE, self._fence).first() is None:
            raise Fenced(
                f"daemon {self._fence['f_id']} lost its lease on this database: "
                "another daemon may run its agents now; it writes nothing more"
            )

    def _begin_batch(self) -> sa.Connection:
        """A connection with a write transaction begun, for a batch of writes."""
        if self._sqlite:
            conn = self._writer
            if conn is None or conn.closed or conn.invalidated:
                self._drop_writer()
                conn = self._writer = self._engine.connect()
                conn.execution_options(ikigai_begin="IMMEDIATE")
        else:
            conn = self._engine.connect()
        try:
            conn.begin()
            self._check_fence(conn)
        except BaseException:
            self._end_batch(conn, True)
            raise
        return conn

    def _end_batch(self, conn: sa.Connection, broken: bool) -> None:
        """A batch is over; ``broken``: its connection may be in any state."""
        if self._sqlite:  # the kept writer
            if broken:
                self._drop_writer(broken=True)
            return
        if broken and not conn.invalidated:
            conn.invalidate()  # discarded, not reset and pooled
        conn.close()

    def _forget_uncommitted(self) -> None:
        """A batch of writes failed at its commit: a lineage cached while it
        was open may have been read from rows of it that do not exist."""
        self._ranges.clear()

    def _drop_writer(self, *, broken: bool = False) -> None:
        conn, self._writer = self._writer, None
        if conn is None:
            return
        if broken and not conn.invalidated:
            conn.invalidate()  # discarded, not reset and pooled
        conn.close()

    # ------------------------------------------------------------ lineage

    def _lineage(self, conn: sa.Connection, uuid: str) -> tuple[_replay.Range, ...]:
        ranges = self._ranges.get(uuid)
        if ranges is None:
            chain = conn.execute(_replay.chain_query(uuid)).all()
            if not chain:
                raise AgentNotFound(f"no agent has the id {uuid!r}")
            ranges = _replay.ranges_from_chain((r.uuid, r.fork_message_id) for r in chain)
            self._ranges[uuid] = ranges
        return ranges

    def _fold(self, conn: sa.Connection, uuid: str) -> _replay.Folded:
        ranges = self._lineage(conn, uuid)
        return _replay.fold(_replay.replay_rows(conn, ranges))

    # ------------------------------------------------------------ shared primitives

    def _agent_row(self, conn: sa.Connection, uuid: str) -> Any:
        row = conn.execute(_AGENT_ROW, {"uuid": uuid}).first()
        if row is None:
            raise AgentNotFound(f"no agent has the id {uuid!r}")
        return row

    def _insert(
        self,
        conn: sa.Connection,
        agent_uuid: str,
        rows: Sequence[Prepared],
        *,
        now: datetime | None = None,
    ) -> list[MessageRecord]:
        """Write history rows (every messages row goes through here), in order."""
        at = now or _now()
        params = [row_params(agent_uuid, row, at) for row in rows]
        files = [b for row in rows for b in row.blobs]
        if files:  # before the rows that refer to them, in their transaction
            put_blobs(conn, files)
        try:
            if len(params) == 1:
                ids = [conn.execute(_INSERT_ONE, params[0]).inserted_primary_key[0]]  # type: ignore[index]
            else:  # one multi-row INSERT ... RETURNING, ids in the order given
                ids = list(conn.execute(_INSERT_MANY, params).scalars())
        except exc.IntegrityError as e:
            raise AgentNotFound(f"no agent has the id {agent_uuid!r}") from e
        return [
            MessageRecord(
                id=new_id,
                agent_uuid=agent_uuid,
                kind=p["kind"],
                content=p["content"],
                data=p["data"],
                message=row.message,
                created_at=at,
            )
            for new_id, p, row in zip(ids, params, rows, strict=True)
        ]
