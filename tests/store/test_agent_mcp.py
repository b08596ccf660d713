"""agents.mcp (migration 0005): each agent's MCP server names as a JSON list,
NULL for the configured defaults; a fork inherits its parent's unless given
its own. On both engines, and through the migration up and down with data."""

from __future__ import annotations

import json

import sqlalchemy as sa

from store import Store, migrate


def test_create_keeps_the_list_and_null_means_the_defaults(store: Store) -> None:
    plain = store.create_agent("plain", provider="p", model="m")
    assert plain.mcp is None
    chosen = store.create_agent("chosen", provider="p", model="m", mcp=json.dumps(["git", "docs"]))
    none = store.create_agent("none", provider="p", model="m", mcp="[]")
    assert chosen.mcp == '["git", "docs"]'
    # read back from the database, not the record the insert built
    assert store.get_agent(chosen.uuid).mcp == '["git", "docs"]'
    assert store.get_agent(none.uuid).mcp == "[]"
    assert store.get_agent(plain.uuid).mcp is None
    listed = {r.name: r.mcp for r in store.list_agents()}
    assert listed == {"plain": None, "chosen": '["git", "docs"]', "none": "[]"}


def test_a_fork_inherits_the_parents_servers_unless_given(store: Store) -> None:
    parent = store.create_agent("parent", provider="p", model="m", mcp='["git"]')
    inherited = store.fork(parent.uuid, name="inherits")
    own = store.fork(parent.uuid, name="own", mcp="[]")
    assert store.get_agent(inherited.uuid).mcp == '["git"]'
    assert store.get_agent(own.uuid).mcp == "[]"
    # a child of a default agent stays on the defaults (NULL), not a frozen copy
    default = store.create_agent("default", provider="p", model="m")
    assert store.get_agent(store.fork(default.uuid, name="d2").uuid).mcp is None
    # a spawned child (create with a parent) does not inherit: it gets what it is given
    spawned = store.create_agent("spawned", provider="p", model="m", parent_uuid=parent.uuid)
    assert spawned.mcp is None


def _columns(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return {c["name"] for c in sa.inspect(engine).get_columns("agents")}
    finally:
        engine.dispose()


def test_migration_0005_adds_and_drops_the_column_keeping_the_agents(empty_db_url: str) -> None:
    url = empty_db_url
    assert migrate.upgrade(url, "0004") == "0004"
    assert "mcp" not in _columns(url)
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO agents (uuid, name, provider, model, thinking_level, "
                "system_prompt, status, created_at, policy) VALUES ('0191e5f1-0000-7000-8000-"
                "000000000001', 'old', 'p', 'm', 'none', '', 'running', "
                "'2026-01-01 00:00:00', '[\"default\"]')"
            )
    finally:
        engine.dispose()

    assert migrate.upgrade(url, "0005") == "0005"
    assert "mcp" in _columns(url)
    migrate.upgrade(url)  # the Store reads the head schema
    with Store(url, upgrade=False) as s:
        old = s.resolve("old")
        assert (old.mcp, old.policy) == (None, '["default"]')  # an old agent: the defaults
        s.create_agent("new", provider="p", model="m", mcp='["time"]')
    migrate.check(url)

    assert migrate.downgrade(url, "0004") == "0004"
    assert "mcp" not in _columns(url)
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            names = {r[0] for r in conn.exec_driver_sql("SELECT name FROM agents")}
    finally:
        engine.dispose()
    assert names == {"old", "new"}  # the downgrade keeps every agent
    assert migrate.upgrade(url) == migrate.head_revision()
    with Store(url, upgrade=False) as s:
        assert s.resolve("new").mcp is None  # what was dropped is gone, not invented
