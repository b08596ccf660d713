"""Store fixtures: every store test runs on a real SQLite file and on the real
PostgreSQL server named by IKIGAI_TEST_PG_URL (an admin URL; a database
``ikigai_test_<random>`` is created for the run and dropped after it).

Without IKIGAI_TEST_PG_URL the postgres variants fail, unless IKIGAI_TEST_PG=skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from providers.catalog import Catalog, load_catalog
from store import Store, migrate

ENGINES = ["sqlite", "postgres"]
NO_PG = (
    "IKIGAI_TEST_PG_URL is not set: run the tests with scripts/test (it starts a throwaway "
    "server), or start one with `scripts/pg start /tmp/ikigai-pg` and export the URL it "
    "prints as IKIGAI_TEST_PG_URL; set IKIGAI_TEST_PG=skip to run without PostgreSQL"
)


def _pg_admin_url() -> str:
    url = os.environ.get("IKIGAI_TEST_PG_URL")
    if not url:
        if os.environ.get("IKIGAI_TEST_PG") == "skip":
            pytest.skip("PostgreSQL tests skipped (IKIGAI_TEST_PG=skip)")
        pytest.fail(NO_PG, pytrace=False)
    return url


def _admin_engine(admin_url: str) -> sa.Engine:
    return sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)


def create_pg_database(admin_url: str, name: str) -> str:
    engine = _admin_engine(admin_url)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    finally:
        engine.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(admin_url: str, name: str) -> None:
    engine = _admin_engine(admin_url)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    return _pg_admin_url()


@pytest.fixture(scope="session")
def pg_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh database for this run, migrated to head; dropped at the end."""
    name = f"ikigai_test_{secrets.token_hex(4)}"
    url = create_pg_database(pg_admin_url, name)
    try:
        migrate.upgrade(url)
        yield url
    finally:
        drop_pg_database(pg_admin_url, name)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to head once; each test gets a copy."""
    path = tmp_path_factory.mktemp("template") / "ikigai.db"
    migrate.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog([Path(__file__).with_name("catalog.json")])


@pytest.fixture(
    params=[
        pytest.param(e, marks=[pytest.mark.postgres] if e == "postgres" else []) for e in ENGINES
    ]
)
def engine_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def pg_store(pg_url: str, catalog: Catalog) -> Iterator[Store]:
    """One Store on the run's PostgreSQL database, emptied before each test
    (connecting is most of a small test's time there)."""
    s = Store(pg_url, upgrade=False, catalog=catalog)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def db_url(engine_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database at head for one test."""
    if engine_kind == "sqlite":
        path = tmp_path / "ikigai.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    shared: Store = request.getfixturevalue("pg_store")
    with shared.engine.begin() as conn:
        # (DELETE beats TRUNCATE on tables this small)
        conn.exec_driver_sql("DELETE FROM mail")
        conn.exec_driver_sql("DELETE FROM prompt_queue")
        conn.exec_driver_sql("DELETE FROM budgets")
        conn.exec_driver_sql("DELETE FROM daemons")
        conn.exec_driver_sql("UPDATE agents SET fork_message_id = NULL")
        conn.exec_driver_sql("DELETE FROM messages")
        conn.exec_driver_sql("DELETE FROM agents")
        conn.exec_driver_sql("DELETE FROM blobs")
    return shared.url


@pytest.fixture
def store(
    db_url: str, engine_kind: str, request: pytest.FixtureRequest, catalog: Catalog
) -> Iterator[Store]:
    if engine_kind == "postgres":
        yield request.getfixturevalue("pg_store")
        return
    s = Store(db_url, upgrade=False, catalog=catalog)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def open_store(db_url: str, catalog: Catalog) -> Iterator[Callable[[], Store]]:
    """Open more Stores on the same database (a restarted daemon); closed after."""
    opened: list[Store] = []

    def _open() -> Store:
        s = Store(db_url, upgrade=False, catalog=catalog)
        opened.append(s)
        return s

    try:
        yield _open
    finally:
        for s in opened:
            s.close()


@pytest.fixture
def empty_db_url(engine_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with no schema at all (for the migration tests)."""
    if engine_kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    admin = request.getfixturevalue("pg_admin_url")
    name = f"ikigai_test_{secrets.token_hex(4)}"
    url = create_pg_database(admin, name)
    try:
        yield url
    finally:
        drop_pg_database(admin, name)
