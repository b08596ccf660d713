"""Bad input gets a clear error that names the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import AgentNotFound, BadForkPoint, DatabaseUnreachable, NameTaken, Store, migrate
from store._engine import resolve_url

from .helpers import user


def test_unknown_agent_id(store: Store) -> None:
    ghost = "01900000-0000-7000-8000-00000000beef"
    with pytest.raises(AgentNotFound, match=f"no agent has the id '{ghost}'"):
        store.get_agent(ghost)
    with pytest.raises(AgentNotFound, match=f"no agent has the id '{ghost}'"):
        store.append_user(ghost, user("x"))
    with pytest.raises(AgentNotFound, match="no agent has the id or name 'nobody'"):
        store.resolve("nobody")


def test_fork_point_not_in_the_history(store: Store) -> None:
    a = store.create_agent("a", provider="p", model="m").uuid
    early = store.append_user(a, user("early")).id
    b = store.fork(a, name="b").uuid
    later = store.append_user(a, user("after the fork")).id
    own = store.append_user(b, user("b's own")).id
    stranger = store.create_agent("s", provider="p", model="m").uuid
    theirs = store.append_user(stranger, user("not related")).id

    # the parent's rows after the fork point are not in b's history
    with pytest.raises(
        BadForkPoint,
        match=rf"cannot fork agent b \({b}\) at message {later}: that message is not in its history",
    ):
        store.fork(b, at_message_id=later)
    # nor is a child's row in the parent's
    with pytest.raises(BadForkPoint, match=f"at message {own}: that message is not in its history"):
        store.fork(a, at_message_id=own)
    with pytest.raises(BadForkPoint, match=f"at message {theirs}"):
        store.fork(a, at_message_id=theirs)
    with pytest.raises(BadForkPoint, match="at message 987654: that message does not exist"):
        store.fork(a, at_message_id=987654)
    # nothing was created by the failed forks
    assert [x.name for x in store.list_agents()] == ["a", "b", "s"]
    # inherited rows are fine
    assert store.fork(b, at_message_id=early, name="c").fork_message_id == early


def test_duplicate_live_name(store: Store) -> None:
    a = store.create_agent("dup", provider="p", model="m")
    with pytest.raises(NameTaken, match=f"the name 'dup' is taken by live agent {a.uuid}"):
        store.create_agent("dup", provider="q", model="n")
    assert len(store.list_agents()) == 1


def test_unreachable_database(engine_kind: str, tmp_path: Path) -> None:
    if engine_kind == "sqlite":
        blocker = tmp_path / "a-file"
        blocker.write_text("not a folder")
        url = f"sqlite:///{blocker}/sub/ikigai.db"
        with pytest.raises(
            DatabaseUnreachable, match=f"cannot open SQLite database {blocker}/sub/ikigai.db"
        ):
            Store(url)
        folder = tmp_path / "a-folder"
        folder.mkdir()
        with pytest.raises(
            DatabaseUnreachable, match=f"cannot reach database sqlite:///{folder}: .*unable to open"
        ):
            Store(f"sqlite:///{folder}")
    else:
        url = "postgresql+psycopg://ikigai@/ikigai?host=/nonexistent-ikigai-socket-dir&port=5432"
        with pytest.raises(
            DatabaseUnreachable,
            match=r"cannot reach database postgresql\+psycopg://ikigai@/ikigai\?host=/nonexistent-ikigai-socket-dir",
        ):
            Store(url)
        # a password never shows; plain postgresql:// means psycopg 3
        with pytest.raises(DatabaseUnreachable) as info:
            Store("postgresql://bob:s3cret@127.0.0.1:1/ikigai")
        assert "s3cret" not in str(info.value)
        assert "postgresql+psycopg://bob:***@127.0.0.1:1/ikigai" in str(info.value)
        with pytest.raises(DatabaseUnreachable, match="cannot reach database"):
            migrate.upgrade(url)


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("not a url", "is not valid"),
        ("mysql://x@localhost/db", "only sqlite:/// and postgresql"),
    ],
)
def test_unusable_urls(url: str, match: str) -> None:
    with pytest.raises(DatabaseUnreachable, match=match):
        Store(url)


def test_url_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("IKIGAI_DB_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert resolve_url() == f"sqlite:///{tmp_path}/ikigai/ikigai.db"
    assert resolve_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    monkeypatch.setenv("IKIGAI_DB_URL", "postgresql://env@h/db")
    assert resolve_url("sqlite:///configured.db") == "postgresql+psycopg://env@h/db"


def test_default_location_is_created(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("IKIGAI_DB_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with Store() as s:
        assert s.url == f"sqlite:///{tmp_path}/data/ikigai/ikigai.db"
        s.create_agent("a", provider="p", model="m")
    assert (tmp_path / "data" / "ikigai" / "ikigai.db").is_file()
    assert (tmp_path / "data" / "ikigai").stat().st_mode & 0o777 == 0o700
