"""Database URLs and engines: SQLite (WAL, foreign keys, busy timeout) or
PostgreSQL through psycopg 3."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

import msgspec
import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import StaticPool

from ._errors import DatabaseUnreachable, StoreError

ENV_URL = "IKIGAI_DB_URL"
DB_FILE = "ikigai.db"
BUSY_TIMEOUT_MS = 10_000
PG_CONNECT_TIMEOUT_S = 5
# A client cut off mid-transaction (a partition, a paused host) must not hold
# its locks for long: daemons marking it lost wait for its share lock on its
# row (_cluster.py). The server ends such a transaction after 5 s idle (ours
# never idle that long), and a TCP connection whose packets go unanswered
# fails after 10 s instead of the kernel's quarter of an hour.
PG_CONNECT_ARGS = {
    "connect_timeout": PG_CONNECT_TIMEOUT_S,
    "application_name": "ikigai",
    "options": "-c idle_in_transaction_session_timeout=5000",
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 10000,
}

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]


def data_dir() -> Path:
    """The user's data folder for ikigai: $XDG_DATA_HOME/ikigai or ~/.local/share/ikigai."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ikigai"


def default_url() -> str:
    return f"sqlite:///{data_dir() / DB_FILE}"


def resolve_url(configured: str | None = None) -> str:
    """The database to use: $IKIGAI_DB_URL, else the configured URL, else the SQLite default."""
    return normalize_url(os.environ.get(ENV_URL) or configured or default_url())


def normalize_url(url: str) -> str:
    """postgres:// and postgresql:// mean psycopg 3 (the driver ikigai ships with)."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def display_url(url: str | URL) -> str:
    """The URL with any password hidden, for messages and logs."""
    try:
        # unquoted for reading: host=/run/pg, not host=%2Frun%2Fpg
        return unquote(make_url(url).render_as_string(hide_password=True))
    except exc.ArgumentError:
        return "<unparsable database URL>"


def _json_dumps(obj: Any) -> str:
    return msgspec.json.encode(obj).decode()


def is_memory_sqlite(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def sqlite_file(url: str | URL) -> Path | None:
    """The file of a SQLite database URL; None for PostgreSQL, memory and ``file:`` URIs."""
    try:
        u = make_url(normalize_url(url) if isinstance(url, str) else url)
    except exc.ArgumentError:
        return None
    if u.get_backend_name() != "sqlite" or is_memory_sqlite(u) or u.database is None:
        return None
    if u.database.startswith("file:"):
        return None
    return Path(u.database).expanduser()


def _create_private(path: Path) -> None:
    """Create a missing database file 0600 ourselves: SQLite would make it 0644
    (umask 022), and it gives its -wal and -shm files the main file's mode.
    An existing file is left as it is (the daemon warns when others can read it)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError:
        return  # it exists, or SQLite will report why it cannot be opened
    os.close(fd)


def make_engine(
    url: str,
    *,
    foreign_keys: bool = True,
    synchronous: Synchronous = "FULL",
    echo: bool = False,
) -> Engine:
    """An engine for ``url`` (not yet connected). Raises DatabaseUnreachable for
    a URL that cannot be parsed or a SQLite folder that cannot be made."""
    try:
        u = make_url(normalize_url(url))
    except exc.ArgumentError as e:
        raise DatabaseUnreachable(f"database URL {url!r} is not valid: {e}") from None
    backend = u.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(u, foreign_keys=foreign_keys, synchronous=synchronous, echo=echo)
    if backend == "postgresql":
        if u.get_driver_name() not in ("psycopg", "psycopg_async"):
            u = u.set(drivername="postgresql+psycopg")
        return sa.create_engine(
            u,
            echo=echo,
            pool_pre_ping=True,
            pool_size=8,
            max_overflow=32,
            json_serializer=_json_dumps,
            json_deserializer=msgspec.json.decode,
            connect_args=PG_CONNECT_ARGS,
        )
    raise DatabaseUnreachable(
        f"database URL {display_url(u)}: only sqlite:/// and postgresql+psycopg:// are supported"
    )


def _sqlite_engine(u: URL, *, foreign_keys: bool, synchronous: Synchronous, echo: bool) -> Engine:
    if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ValueError(
            f"sqlite synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}"
        )
    memory = is_memory_sqlite(u)
    if not memory and u.database is not None and not u.database.startswith("file:"):
        path = Path(u.database).expanduser()
        u = u.set(database=str(path))
        folder = path.resolve().parent
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as e:
            raise DatabaseUnreachable(
                f"cannot open SQLite database {u.database}: "
                f"cannot create folder {folder}: {e.strerror}"
            ) from None
        _create_private(path)
    kwargs: dict[str, Any] = {}
    if memory:
        # one connection shared by every thread, or each would see its own empty database
        kwargs["poolclass"] = StaticPool
    else:
        kwargs.update(pool_size=8, max_overflow=32)
    engine = sa.create_engine(
        u,
        echo=echo,
        json_serializer=_json_dumps,
        json_deserializer=msgspec.json.decode,
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        **kwargs,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # We issue BEGIN ourselves (below): pysqlite's implicit transactions
        # do not cover SELECTs and cannot BEGIN IMMEDIATE.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        try:
            if not memory:
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={synchronous}")
            cur.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
            cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        finally:
            cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        # write transactions take the write lock up front (no deadlock on upgrade)
        mode = conn.get_execution_options().get("ikigai_begin", "DEFERRED")
        # straight to the driver: this runs once per transaction
        conn.connection.driver_connection.execute(f"BEGIN {mode}")  # type: ignore[union-attr]

    return engine


def unreachable(url: str | URL, error: BaseException) -> StoreError:
    """The error to raise for a failed connection to ``url``."""
    reason = getattr(error, "orig", None) or error
    text = " ".join(str(reason).split())
    return DatabaseUnreachable(f"cannot reach database {display_url(url)}: {text}")


def ping(engine: Engine) -> None:
    """Connect once; DatabaseUnreachable if that fails."""
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
            conn.rollback()
    except exc.DBAPIError as e:
        raise unreachable(engine.url, e) from None
