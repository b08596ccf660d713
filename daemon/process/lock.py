"""One daemon per database.

Two daemons on one database each believe they own every running agent: the
second marks the first's live agents dead on restore. So the database is
locked before the store touches a row, for the daemon's whole life:

- SQLite: an exclusive ``flock`` on ``ikigai.db.lock`` beside the file (0600),
  which holds the holder's pid, socket and host as JSON. The kernel drops the
  lock when the process dies, even by ``kill -9``: a stale file never blocks.
- PostgreSQL: a session advisory lock on a connection kept open for the
  daemon's life, keyed by the daemon's id: several daemons share one
  database (docs/cluster.md), but two with the same id (the same host and
  IKIGAI_HOME, or the same ``cluster.id``) would be one member twice. The
  holder's JSON is the text of that connection's last query, which
  ``pg_stat_activity`` shows to the next daemon: no table needed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import socket
import stat
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy import exc
from sqlalchemy.pool import NullPool

from store import display_url
from store._engine import PG_CONNECT_TIMEOUT_S, normalize_url, sqlite_file, unreachable

log = structlog.get_logger("ikigai.daemon")

LOCK_SUFFIX = ".lock"
_HOLDER_BYTES = 4096  # a holder's JSON is small; a larger file is not ours
_HOLDER_WAIT_S = 1.0  # the holder writes its JSON just after taking the lock
_DEAD_HOLDER_WAIT_S = 5.0  # for the server to notice that a killed daemon's session ended
_HOLDER_SQL = re.compile(r"SELECT '(\{[^']*\})' AS ikigaid_holder")


class LockError(RuntimeError):
    """The database cannot be locked: the message says why."""


class DatabaseInUse(LockError):
    """Another ikigaid holds the database."""


def _holder_info(socket_path: Path) -> dict[str, Any]:
    return {"pid": os.getpid(), "socket": str(socket_path), "host": socket.gethostname()}


def _parse_holder(text: str | bytes) -> dict[str, Any]:
    """The holder's fields that are safe to print; {} for anything else."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {}
    pid = data.get("pid")
    if isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < 1 << 32:
        out["pid"] = pid
    for name in ("socket", "host"):
        value = data.get(name)
        # a file anyone could have written: nothing that would act on a terminal
        if isinstance(value, str) and 0 < len(value) <= 1024 and value.isprintable():
            out[name] = value
    return out


def in_use_message(
    holder: dict[str, Any], database: str, ours: Path, *, postgres: bool = False
) -> str:
    pid = holder.get("pid")
    sock = holder.get("socket")
    if sock == str(ours):  # the same socket too: it is simply already running
        return (
            f"another ikigaid is already running on {sock} (pid {pid or 'unknown'}) "
            f"with the database {database}"
        )
    who = [f"pid {pid}" if pid else "pid unknown"]
    host = holder.get("host")
    if host and host != socket.gethostname():
        who[0] += f" on {host}"
    if sock:
        who.append(f"socket {sock}")
    text = f"another ikigaid ({', '.join(who)}) already uses the database {database}"
    if postgres:
        text += (
            " as the same daemon id (daemons sharing a PostgreSQL database need distinct"
            " ids: give this one another IKIGAI_HOME or cluster.id)"
        )
    reach = f"IKIGAI_SOCKET={sock} ikictl" if sock else "ikictl with that daemon's IKIGAI_SOCKET"
    stop = f"stop it first (kill {pid})" if pid else "stop it first"
    return f"{text}: use it through {reach}, or {stop}, or set another IKIGAI_DB_URL"


class DatabaseLock:
    """Held from ``hold_database`` until ``release`` (idempotent)."""

    def release(self) -> None:  # memory databases: nothing to hold
        pass


class _FileLock(DatabaseLock):
    def __init__(self, fd: int, path: Path) -> None:
        self.fd: int | None = fd
        self.path = path

    def release(self) -> None:
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # the next holder's pid, not ours, is what a reader should see
        os.close(fd)  # closing drops the flock


class _PgLock(DatabaseLock):
    def __init__(self, engine: sa.Engine, conn: sa.Connection) -> None:
        self.engine: sa.Engine | None = engine
        self.conn = conn

    def release(self) -> None:
        if self.engine is None:
            return
        engine, self.engine = self.engine, None
        with contextlib.suppress(exc.DBAPIError):
            self.conn.close()  # the session ends: its advisory lock goes with it
        engine.dispose()


def _read_holder(fd: int) -> dict[str, Any]:
    deadline = time.monotonic() + _HOLDER_WAIT_S
    while True:
        data = os.pread(fd, _HOLDER_BYTES + 1, 0)
        if data or time.monotonic() > deadline:
            return _parse_holder(data) if len(data) <= _HOLDER_BYTES else {}
        time.sleep(0.02)


def _lock_file(db: Path, socket_path: Path) -> _FileLock:
    path = db.with_name(db.name + LOCK_SUFFIX)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        raise LockError(f"cannot open the lock file {path}: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(fd)
        os.close(fd)
        raise DatabaseInUse(in_use_message(holder, str(db), socket_path)) from None
    except OSError as e:
        os.close(fd)
        raise LockError(f"cannot lock {path}: {e.strerror}") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(_holder_info(socket_path)).encode(), 0)
    except OSError as e:
        os.close(fd)
        raise LockError(f"cannot write the lock file {path}: {e.strerror}") from None
    return _FileLock(fd, path)


def _warn_if_readable(db: Path) -> None:
    try:
        mode = db.stat().st_mode
    except OSError:
        return  # not created yet: the store creates it 0600
    if stat.S_ISREG(mode) and mode & 0o077:
        log.warning(
            "the database file can be read by other users",
            path=str(db),
            mode=oct(mode & 0o777),
            fix=f"chmod 600 {db}",
        )


def _holder_sql(socket_path: Path) -> str:
    # no quote, percent or dollar sign in the literal: the JSON escapes them
    text = json.dumps(_holder_info(socket_path), ensure_ascii=True)
    for ch in "'%$":
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return f"SELECT '{text}' AS ikigaid_holder"


_PG_HOLDER_QUERY = """
SELECT a.query FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = {high} AND l.objid::bigint = {low}
"""


def pg_lock_key(daemon_id: str) -> int:
    """The advisory lock of one daemon id: a signed 64-bit key."""
    digest = hashlib.sha256(f"ikigaid:{daemon_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _pg_holder(conn: sa.Connection, key: int) -> dict[str, Any]:
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    sql = _PG_HOLDER_QUERY.format(high=unsigned >> 32, low=unsigned & 0xFFFFFFFF)
    try:
        query = conn.exec_driver_sql(sql).scalar()
    except exc.DBAPIError:
        return {}
    match = _HOLDER_SQL.search(query) if isinstance(query, str) else None
    return _parse_holder(match.group(1)) if match else {}


def _dead_here(holder: dict[str, Any]) -> bool:
    """The holder ran on this host and its process is gone (killed -9: its
    session ends when the server reads the closed connection, a moment later)."""
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _try_pg_lock(conn: sa.Connection, url: str, socket_path: Path, key: int) -> None:
    deadline = time.monotonic() + _DEAD_HOLDER_WAIT_S
    while not conn.exec_driver_sql(f"SELECT pg_try_advisory_lock({key})").scalar():
        holder = _pg_holder(conn, key)
        if not _dead_here(holder) or time.monotonic() > deadline:
            raise DatabaseInUse(
                in_use_message(holder, display_url(url), socket_path, postgres=True)
            )
        time.sleep(0.05)


def _lock_pg(url: str, socket_path: Path, key: int) -> _PgLock:
    engine = sa.create_engine(
        url,
        poolclass=NullPool,
        isolation_level="AUTOCOMMIT",
        connect_args={"connect_timeout": PG_CONNECT_TIMEOUT_S, "application_name": "ikigaid"},
    )
    try:
        conn = engine.connect()
    except exc.DBAPIError as e:
        engine.dispose()
        raise unreachable(url, e) from None
    try:
        _try_pg_lock(conn, url, socket_path, key)
        # the last statement of this connection: what pg_stat_activity shows the next daemon
        conn.exec_driver_sql(_holder_sql(socket_path))
    except BaseException as e:
        conn.close()
        engine.dispose()
        if isinstance(e, exc.DBAPIError):
            raise unreachable(url, e) from None
        raise
    return _PgLock(engine, conn)


def hold_database(url: str, socket_path: Path, daemon_id: str = "") -> DatabaseLock:
    """Lock the database at ``url`` for this daemon (on PostgreSQL: for this
    daemon id), or raise DatabaseInUse naming the daemon that holds it
    (LockError or a StoreError for other failures)."""
    url = normalize_url(url)
    if url.startswith("postgresql"):
        return _lock_pg(url, socket_path, pg_lock_key(daemon_id))
    db = sqlite_file(url)
    if db is None:
        return DatabaseLock()  # in memory: no other process can open it
    held = _lock_file(db, socket_path)
    _warn_if_readable(db)
    return held


__all__ = ["DatabaseInUse", "DatabaseLock", "LockError", "hold_database", "in_use_message"]
