"""Group commit: concurrent writes share one transaction and one commit.

The store's writes take turns on one writer connection. Each runs its body
in its turn; the first of a batch begins the transaction, each later member
runs inside a SAVEPOINT of it. A writer whose body is done while others wait
for their turn does not commit: it leaves the transaction open, hands the
turn on and waits. The last member of the batch (no one waiting), or any
member once the batch is full (MAX_MEMBERS, or MAX_WAIT seconds after its
first write was done), commits once (one fsync) for all and wakes them.

What each caller sees is what a transaction of its own would give it:

- it returns only after the commit holding its write, so "acknowledged =
  committed" stays exactly true;
- a body that raises (a refusal, a constraint) rolls back to its savepoint
  and fails its own caller only; the others' writes are committed;
- a commit that fails (or a savepoint that cannot be rolled back or
  released: the transaction is in doubt) fails every member whose write was
  in the batch, and the connection is discarded: none was acknowledged.

Members run one after another in one transaction, so each sees the rows of
those before it, as it would after their commits. A write started inside
another write of the same thread raises RuntimeError (it would wait for its
own turn forever).
"""

from __future__ import annotations

import copy
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import NoReturn

import sqlalchemy as sa
from sqlalchemy import exc

from ._errors import StoreError

# A batch is closed at this many members, or this long after its first
# write was done: its first member waits for every later body and for the
# commit, so these bound its extra latency. A body takes a fraction of a
# millisecond; the next batch gathers while a commit runs.
MAX_MEMBERS = 64
MAX_WAIT = 0.005  # seconds


class _Batch:
    """One open transaction and the members whose writes are in it."""

    __slots__ = ("conn", "done", "error", "members", "ready_at")

    def __init__(self, conn: sa.Connection) -> None:
        self.conn = conn
        self.members = 1
        self.ready_at = 0.0  # monotonic time the first member's body was done
        # set once committed (or failed); made only when a member is to wait
        # for it, as most batches under light load have one member
        self.done: threading.Event | None = None
        self.error: BaseException | None = None

    def settled(self) -> None:
        if self.done is not None:
            self.done.set()


class GroupCommit:
    """Turns on one writer connection, with their commits grouped.

    ``begin()`` gives a connection with a transaction begun, for a new batch;
    ``end(conn, broken)`` is called once the batch is over (committed, rolled
    back, or ``broken``: the connection must be discarded); ``on_abort()``
    when a batch fails after members wrote into it (caches filled from its
    rows must forget them). ``max_members=1`` commits each write alone.
    """

    def __init__(
        self,
        begin: Callable[[], sa.Connection],
        end: Callable[[sa.Connection, bool], None],
        on_abort: Callable[[], None],
        *,
        max_members: int = MAX_MEMBERS,
        max_wait: float = MAX_WAIT,
    ) -> None:
        self._begin, self._end, self._on_abort = begin, end, on_abort
        self._max_members, self._max_wait = max_members, max_wait
        self._turn = threading.Lock()  # held by the writer whose body (or commit) runs
        self._count = threading.Lock()  # guards _waiting
        self._waiting = 0  # writers blocked on _turn
        self._owner: int | None = None  # thread id of the turn's holder
        self._batch: _Batch | None = None  # the open transaction, if any

    @property
    def waiting(self) -> int:
        """Writers waiting for their turn now."""
        return self._waiting

    @contextmanager
    def write(self) -> Iterator[sa.Connection]:
        """A turn on the writer connection; exits once the write is committed."""
        self._take_turn()
        try:
            batch, first = self._join()
            try:
                yield batch.conn
            except BaseException as own:
                self._undo(batch, first, own)
                raise
            self._keep(batch, first)
        finally:
            self._give_turn()
        if batch.done is not None:
            batch.done.wait()  # at once if this writer committed it
        if batch.error is not None:
            _raise_own(batch.error)

    def close(self, then: Callable[[], None]) -> None:
        """Commit a batch left open for the writer this close was (it took a
        turn), then ``then()`` in the turn: no write runs after it."""
        self._take_turn()
        try:
            if self._batch is not None:
                self._commit(self._batch)
            then()
        finally:
            self._give_turn()

    # ------------------------------------------------------------ turns

    def _take_turn(self) -> None:
        if self._owner == threading.get_ident():
            raise RuntimeError("a store write was started inside another write of the same thread")
        if not self._turn.acquire(blocking=False):
            # counted while blocked: a holder that sees the count knows that
            # someone will take the turn after it and close its batch
            with self._count:
                self._waiting += 1
            try:
                self._turn.acquire()
            finally:
                with self._count:
                    self._waiting -= 1
        self._owner = threading.get_ident()

    def _give_turn(self) -> None:
        self._owner = None
        self._turn.release()

    # ------------------------------------------------------------ a batch (the turn held)

    def _join(self) -> tuple[_Batch, bool]:
        """Begin a batch or join the open one (SAVEPOINT); whether this
        writer is its first member."""
        batch = self._batch
        if batch is None:
            self._batch = batch = _Batch(self._begin())
            return batch, True
        try:
            _driver_sql(batch.conn, "SAVEPOINT member")
        except BaseException as e:
            self._abort(batch, e)
            raise
        batch.members += 1
        return batch, False

    def _undo(self, batch: _Batch, first: bool, own: BaseException) -> None:
        """A member's body raised: undo its part only, then close the batch
        or keep it open as after any write."""
        if first:
            # no one else is in the transaction yet: it is rolled back as a
            # lone transaction is
            self._batch = None
            broken = False
            try:
                batch.conn.rollback()
            except BaseException:
                broken = True
            # a refusal leaves the connection as good as before; a driver
            # error (or worse) may have left it in any state
            self._end(batch.conn, broken or not isinstance(own, StoreError))
            batch.settled()
            return
        try:
            _driver_sql(batch.conn, "ROLLBACK TO member")
            _driver_sql(batch.conn, "RELEASE member")
        except BaseException as e:
            self._abort(batch, e)
            return
        if batch.conn.invalidated:
            self._abort(batch, own)
        elif not self._keep_open(batch):
            self._commit(batch)

    def _keep(self, batch: _Batch, first: bool) -> None:
        """A member's body is done: its rows join the batch, which is then
        left open for the next writer or committed."""
        if not first:
            try:
                _driver_sql(batch.conn, "RELEASE member")
            except BaseException as e:
                self._abort(batch, e)
                return
        if not self._keep_open(batch):
            self._commit(batch)

    def _keep_open(self, batch: _Batch) -> bool:
        """Whether to leave the batch open for a writer waiting for the turn."""
        if batch.members == 1:
            batch.ready_at = time.monotonic()
        if (
            self._waiting > 0
            and batch.members < self._max_members
            and time.monotonic() - batch.ready_at < self._max_wait
        ):
            if batch.done is None:
                batch.done = threading.Event()
            return True
        return False

    def _commit(self, batch: _Batch) -> None:
        self._batch = None
        try:
            _check_whole(batch.conn)
            batch.conn.commit()  # one commit, one fsync, for every member
        except BaseException as e:
            self._fail(batch, e)
        else:
            self._end(batch.conn, False)
        finally:
            batch.settled()

    def _abort(self, batch: _Batch, error: BaseException) -> None:
        """The open transaction is in doubt: fail every member with ``error``."""
        self._batch = None
        with suppress(BaseException):  # it is discarded below either way
            batch.conn.rollback()
        self._fail(batch, error)
        batch.settled()

    def _fail(self, batch: _Batch, error: BaseException) -> None:
        batch.error = error
        self._end(batch.conn, True)  # discarded: SQLite or the server rolls back what is left
        self._on_abort()


def _driver_sql(conn: sa.Connection, sql: str) -> None:
    """A savepoint statement, straight to the driver: SQLAlchemy's own
    savepoints build and compile their SQL each time (~50x the cost).
    Errors are wrapped as SQLAlchemy wraps them."""
    dbapi = conn.dialect.loaded_dbapi
    try:
        conn.connection.driver_connection.execute(sql)  # type: ignore[union-attr]
    except dbapi.Error as e:
        raise exc.DBAPIError.instance(sql, None, e, dbapi.Error, dialect=conn.dialect) from e


def _check_whole(conn: sa.Connection) -> None:
    """Refuse to commit a transaction that is no longer whole: SQLite rolls
    one back by itself after some errors (COMMIT is then a no-op), and
    PostgreSQL answers COMMIT of a failed one with a rollback. Either would
    acknowledge writes that are not there."""
    raw = conn.connection.driver_connection
    if isinstance(raw, sqlite3.Connection):
        whole = raw.in_transaction
    else:
        # psycopg's status, by name: importing psycopg here would cost every SQLite start
        whole = raw.info.transaction_status.name != "INERROR"  # type: ignore[union-attr]
    if not whole:
        raise StoreError("the transaction was rolled back by the database before its commit")


def _raise_own(error: BaseException) -> NoReturn:
    """Raise the batch's error in one member's thread as an object of its own
    (a traceback belongs to one exception), caused by the one the batch met."""
    try:
        mine = copy.copy(error)
    except Exception:
        mine = None
    if mine is None or type(mine) is not type(error):
        raise error
    raise mine from error
