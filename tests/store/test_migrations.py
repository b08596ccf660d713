"""Migrations: empty -> head -> base -> head on both engines; models and
migrations agree; a database at the wrong revision is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

import migrations
from providers.types import Message, TextBlock
from store import SchemaDrift, SchemaOutOfDate, Store, display_url, migrate
from store._schema import metadata

TABLES = {
    "agents",
    "messages",
    "mail",
    "prompt_queue",
    "approvals",
    "worktrees",
    "daemons",
    "budgets",
    "schemas",
    "blobs",
    "schedules",
    "schedule_runs",
}


def tables(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        insp = sa.inspect(engine)
        return set(insp.get_table_names()) - {"sqlite_sequence"}
    finally:
        engine.dispose()


def views(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return set(sa.inspect(engine).get_view_names())
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(empty_db_url: str) -> None:
    url = empty_db_url
    assert migrate.current_revision(url) is None
    head = migrate.head_revision()
    assert migrate.upgrade(url) == head
    assert migrate.current_revision(url) == head
    assert tables(url) == TABLES | {"alembic_version"}
    assert views(url) == {"message_usage"}
    migrate.check(url)  # autogenerate finds no drift
    assert migrate.upgrade(url) == head  # again: nothing to do

    # with data in it, down to base and up again
    with Store(url, upgrade=False) as s:
        a = s.create_agent("a", provider="p", model="m", system_prompt="x")
        s.append_user(a.uuid, Message(role="user", content=[TextBlock(text="hi")]))
        s.fork(a.uuid, name="b")
    assert migrate.downgrade(url, "base") is None
    assert tables(url) == {"alembic_version"}
    assert views(url) == set()
    assert migrate.upgrade(url) == head
    assert tables(url) == TABLES | {"alembic_version"}
    migrate.check(url)
    with Store(url, upgrade=False) as s:
        assert s.list_agents(include_dead=True) == []
        assert s.create_agent("a", provider="p", model="m").name == "a"


def test_store_upgrades_on_open_by_default(empty_db_url: str) -> None:
    with pytest.raises(SchemaOutOfDate, match=r"empty \(no schema\).*ikigaid migrate"):
        Store(empty_db_url, upgrade=False)
    with Store(empty_db_url) as s:
        assert s.revision == migrate.head_revision()
        s.create_agent("a", provider="p", model="m")


def test_a_database_from_a_newer_ikigai_is_refused(empty_db_url: str) -> None:
    migrate.upgrade(empty_db_url)
    engine = sa.create_engine(empty_db_url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_future'")
    engine.dispose()
    with pytest.raises(SchemaOutOfDate, match="9999_future"):
        Store(empty_db_url)
    with pytest.raises(SchemaOutOfDate, match=r"9999_future.*needs revision"):
        Store(empty_db_url, upgrade=False)


def test_drift_is_detected(empty_db_url: str) -> None:
    """The check can fail: a column the models do not have is reported."""
    migrate.upgrade(empty_db_url)
    engine = sa.create_engine(empty_db_url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE agents ADD COLUMN mood VARCHAR(10)")
        conn.exec_driver_sql("CREATE INDEX ix_stray ON messages (kind)")
    engine.dispose()
    with pytest.raises(SchemaDrift, match="mood") as info:
        migrate.check(empty_db_url)
    assert "ix_stray" in str(info.value)


def test_models_declare_what_the_migration_builds() -> None:
    assert set(metadata.tables) == TABLES
    assert {i.name for i in metadata.tables["messages"].indexes} == {
        "ix_messages_agent_uuid_id",
        "ix_messages_clear",
        "ix_messages_spend_day",
    }


def test_engine_settings(store: Store) -> None:
    with store.engine.connect() as conn:
        if store.dialect == "sqlite":
            get = lambda p: conn.exec_driver_sql(f"PRAGMA {p}").scalar()  # noqa: E731
            assert get("journal_mode") == "wal"
            assert get("foreign_keys") == 1
            assert get("busy_timeout") == 10_000
            assert get("synchronous") == 2  # FULL
        else:
            kinds = dict(
                conn.exec_driver_sql(
                    "SELECT column_name, data_type FROM information_schema.columns "
                    "WHERE table_name = 'messages' AND column_name IN ('data', 'message_json')"
                ).all()
            )
            assert kinds == {"data": "jsonb", "message_json": "text"}
        # None is SQL NULL, not JSON 'null'
        a = store.create_agent("a", provider="p", model="m").uuid
        store.clear(a)
        assert (
            conn.exec_driver_sql("SELECT count(*) FROM messages WHERE data IS NULL").scalar() == 1
        )


def test_migrate_command_line(empty_db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """What `ikigaid migrate` runs."""
    shown = display_url(empty_db_url)
    head = sorted(p.name[:4] for p in (Path(migrations.LOCATION) / "versions").glob("0*.py"))[-1]
    assert migrate.head_revision() == head
    assert migrate.main(["--url", empty_db_url, "current"]) == 0
    assert capsys.readouterr().out == f"{shown}: revision none (empty) (head is {head})\n"
    assert migrate.main(["--url", empty_db_url]) == 0
    assert capsys.readouterr().out == f"{shown}: revision {head} (head)\n"
    assert migrate.main(["--url", empty_db_url, "check"]) == 0
    assert capsys.readouterr().out == f"{shown}: revision {head} (head)\n"
    assert migrate.main(["--url", empty_db_url, "downgrade", "base"]) == 0
    assert capsys.readouterr().out == f"{shown}: revision none (empty) (head is {head})\n"
    assert migrate.main(["--url", "postgresql://u:pw@/x?host=/nonexistent-ikigai-dir"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "ikigai: cannot reach database postgresql+psycopg://u:***@/x?host=/nonexistent-ikigai-dir"
    )
