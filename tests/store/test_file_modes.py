"""The database holds every prompt and reply: its files are the user's alone.
A new SQLite database, its -wal and -shm and the daemon's lock file are 0600
even under umask 022; an existing file is not changed behind the user's back
(the daemon says which chmod to run)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from providers.types import Message, TextBlock
from store import Store
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import connect
from tests.fakes.server import FakeProvider

FILES = ("ikigai.db", "ikigai.db-wal", "ikigai.db-shm")


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def modes(folder: Path, names: tuple[str, ...]) -> dict[str, int]:
    return {n: stat.S_IMODE((folder / n).stat().st_mode) for n in names}


def _write_some(url: str) -> Store:
    """An open store after a write (its -wal and -shm go when the last connection closes)."""
    s = Store(url)
    a = s.create_agent("m", provider="anthropic", model="claude-sonnet-4-5")
    s.append_user(a.uuid, Message(role="user", content=[TextBlock(text="private words")]))
    return s


def test_a_new_database_and_its_wal_and_shm_are_0600(tmp_path: Path) -> None:
    with umask(0o022), _write_some(f"sqlite:///{tmp_path / 'data' / 'ikigai.db'}"):
        assert modes(tmp_path / "data", FILES) == dict.fromkeys(FILES, 0o600)
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700


def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    db = tmp_path / "ikigai.db"
    db.touch()
    db.chmod(0o640)  # the user chose this (a group backup job): not ours to change
    with umask(0o022), _write_some(f"sqlite:///{db}"):
        assert modes(tmp_path, ("ikigai.db",)) == {"ikigai.db": 0o640}


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ikm-", dir="/tmp"))  # short: a socket path
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_a_fresh_daemon_home_is_private(
    home: Path, fake_provider: FakeProvider, nursery
) -> None:
    write_home(home, fake_provider)
    d = DaemonProcess(home)
    try:
        with umask(0o022):
            await d.start()
        c = await connect(nursery, str(d.socket))
        await c.call("agent.create", name="m")  # a write: the -wal exists
        assert modes(home, (*FILES, "ikigai.db.lock")) == dict.fromkeys(
            (*FILES, "ikigai.db.lock"), 0o600
        )
    finally:
        d.stop()
    lines = (home / "logs" / "ikigaid.log").read_text()
    assert "chmod 600" not in lines


async def test_a_database_others_can_read_is_reported(
    home: Path, fake_provider: FakeProvider
) -> None:
    write_home(home, fake_provider)
    db = home / "ikigai.db"
    _write_some(f"sqlite:///{db}").close()
    db.chmod(0o644)
    d = DaemonProcess(home)
    try:
        await d.start()
    finally:
        d.stop()
    assert stat.S_IMODE(db.stat().st_mode) == 0o644  # told, not changed
    records = [
        json.loads(line) for line in (home / "logs" / "ikigaid.log").read_text().splitlines()
    ]
    (warning,) = [r for r in records if r.get("fix") == f"chmod 600 {db}"]
    assert warning["level"] == "warning" and warning["path"] == str(db)
    assert warning["mode"] == "0o644"
