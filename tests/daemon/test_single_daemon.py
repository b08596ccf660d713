"""One daemon per database, and a daemon that shows as ``ikigaid``.

A second real ikigaid on the same database but another socket is refused at
start, naming the first's pid and socket; the first keeps serving its live
agent; after ``kill -9`` of the first a new daemon starts at once. On SQLite
and on the real PostgreSQL server.
"""

from __future__ import annotations

import fcntl
import json
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from tests._ready import READY_TIMEOUT
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import connect
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider


class OtherSocket(DaemonProcess):
    """A daemon of the same home (same database), on its own socket."""

    def __init__(self, home: Path, name: str) -> None:
        super().__init__(home)
        self.socket = home / "run" / name

    @property
    def env(self) -> dict[str, str]:
        return {**super().env, "IKIGAI_SOCKET": str(self.socket)}


async def _refused(d: DaemonProcess, limit: float = READY_TIMEOUT) -> tuple[int, str]:
    """Run ``d`` to its exit; a daemon still running after ``limit`` seconds
    fails the test (the suite's start-up bound: a refusal comes at start)."""
    d.spawn()
    assert d.proc is not None
    try:
        code = await trio.to_thread.run_sync(d.proc.wait, limit)
    except subprocess.TimeoutExpired:
        d.stop()
        raise AssertionError(f"the second daemon was not refused:\n{d.start_output()}") from None
    return code, d.start_output()


async def _one_daemon_per_database(
    home: Path, fake: FakeProvider, nursery: trio.Nursery, database: str
) -> None:
    first = DaemonProcess(home)
    await first.start()
    third = OtherSocket(home, "third.sock")
    try:
        assert first.proc is not None
        c = await connect(nursery, str(first.socket))
        await c.call("agent.create", name="keeper")
        fake.push(Reply(text="first answer"))
        assert (await c.call("agent.prompt", agent="keeper", text="one", wait=True))[
            "reply"
        ] == "first answer"

        second = OtherSocket(home, "second.sock")
        began = time.monotonic()
        code, out = await _refused(second)
        assert code == 1 and time.monotonic() - began < 10
        assert (
            f"ikigaid: another ikigaid (pid {first.proc.pid}, socket {first.socket}) "
            f"already uses the database {database}"
        ) in out
        assert f"IKIGAI_SOCKET={first.socket} ikictl" in out and f"kill {first.proc.pid}" in out
        assert not second.socket.exists()

        # the first did not notice: its agent is alive and answers
        shown = await c.call("agent.show", agent="keeper")
        assert shown["status"] == "running"
        fake.push(Reply(text="still here"))
        assert (await c.call("agent.prompt", agent="keeper", text="two", wait=True))[
            "reply"
        ] == "still here"

        # kill -9: the kernel (SQLite) or the server (PostgreSQL) frees the database
        first.proc.kill()
        first.proc.wait(10)
        await third.start()
        c3 = await connect(nursery, str(third.socket))
        assert (await c3.call("agent.show", agent="keeper"))["status"] == "running"
        fake.push(Reply(text="after the crash"))
        answer = await c3.call("agent.prompt", agent="keeper", text="three", wait=True)
        assert answer["reply"] == "after the crash"
    finally:
        third.stop()
        first.stop()


async def test_a_second_daemon_on_the_same_sqlite_database_is_refused(
    daemon_home: Path, fake_provider: FakeProvider, nursery: trio.Nursery
) -> None:
    write_home(daemon_home, fake_provider)
    await _one_daemon_per_database(
        daemon_home, fake_provider, nursery, str(daemon_home / "ikigai.db")
    )
    # the lock file tells who held it last; nobody holds it now
    lock = daemon_home / "ikigai.db.lock"
    assert lock.exists() and (lock.stat().st_mode & 0o777) == 0o600


@pytest.mark.postgres
async def test_a_second_daemon_on_the_same_postgres_database_is_refused(
    daemon_home: Path, fake_provider: FakeProvider, nursery: trio.Nursery
) -> None:
    from tests.store.conftest import _pg_admin_url, create_pg_database, drop_pg_database

    admin = _pg_admin_url()
    name = f"ikigai_lock_{secrets.token_hex(4)}"
    url = create_pg_database(admin, name)
    try:
        write_home(daemon_home, fake_provider, database_url=url)
        from store import display_url

        await _one_daemon_per_database(daemon_home, fake_provider, nursery, display_url(url))
    finally:
        drop_pg_database(admin, name)


async def test_a_hostile_lock_file_is_reported_safely(
    daemon_home: Path, fake_provider: FakeProvider
) -> None:
    # the holder's JSON is a file anyone of this user could write: whatever it
    # holds, the refusal is a clear line with nothing that acts on a terminal
    write_home(daemon_home, fake_provider)
    lock = daemon_home / "ikigai.db.lock"
    bodies = [
        b"\xff\x00{\x1b]0;pwned\x07" * 1000,
        json.dumps({"pid": "1; rm -rf /", "socket": "/s\x1b]0;x\x07", "host": ["h"]}).encode(),
        b"[" * 100_000,
        json.dumps({"pid": 2**80, "socket": "x" * 5000}).encode(),
    ]
    for body in bodies:
        lock.write_bytes(body)
        with lock.open("rb") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # held by "someone": this test process
            code, out = await _refused(DaemonProcess(daemon_home))
        assert code == 1, out
        db = daemon_home / "ikigai.db"
        assert (
            out == f"ikigaid: another ikigaid (pid unknown) already uses the database {db}: "
            "use it through ikictl with that daemon's IKIGAI_SOCKET, or stop it first, "
            "or set another IKIGAI_DB_URL\n"
        )
        assert not db.exists()  # refused before the store made the file
    d = DaemonProcess(daemon_home)  # nobody holds it: the content does not matter
    try:
        await d.start()
    finally:
        d.stop()


def _pgrep_ikigaid() -> list[int]:
    out = subprocess.run(["pgrep", "-x", "ikigaid"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def _args(pid: int) -> str:
    return subprocess.run(
        ["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True
    ).stdout.strip()


class Script(DaemonProcess):
    """Started through the installed ``ikigaid`` console script."""

    command = [str(Path(sys.executable).with_name("ikigaid")), "run"]


@pytest.mark.parametrize("kind", [DaemonProcess, Script], ids=["python-m-daemon", "script"])
async def test_the_process_is_called_ikigaid(
    kind: type[DaemonProcess], daemon_home: Path, fake_provider: FakeProvider
) -> None:
    write_home(daemon_home, fake_provider)
    d = kind(daemon_home)
    try:
        await d.start()
        assert d.proc is not None
        assert d.proc.pid in _pgrep_ikigaid()  # comm: what pgrep and top match
        assert _args(d.proc.pid) == "ikigaid"  # argv: what ps -o args shows
    finally:
        d.stop()
