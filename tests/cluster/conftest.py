"""Several real ikigaid processes on one real PostgreSQL database (a fresh
one per test), each with its own IKIGAI_HOME and socket, all answering from
one fake provider on loopback. docs/cluster.md is what they check."""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import sqlalchemy as sa
import trio
from sqlalchemy.engine import make_url

from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import Client, connect
from tests.fakes.server import FakeProvider
from tests.store.conftest import _pg_admin_url, create_pg_database, drop_pg_database

# short, so that failover tests take seconds; the watchdog stops a cut-off
# daemon's agents after 0.7 of it
LEASE = 4.0
HEARTBEAT = 1.0


async def until(check: Callable[[], Awaitable[bool]], limit: float, step: float = 0.1) -> None:
    """Wait until ``check()`` holds (readiness, not a fixed time); fail after ``limit`` s."""
    with trio.fail_after(limit):
        while True:
            if await check():
                return
            await trio.sleep(step)


def pg_socket(url: str) -> str:
    """The Unix socket of the PostgreSQL server at ``url`` (scripts/pg's kind)."""
    u = make_url(url)
    host = u.query.get("host") or parse_qs(str(u).split("?", 1)[-1]).get("host", [""])[0]
    if isinstance(host, tuple):
        host = host[0]
    return f"{host}/.s.PGSQL.{u.query.get('port') or u.port or 5432}"


class Member:
    """One daemon of the cluster, and a client connected to it."""

    def __init__(self, name: str, home: Path) -> None:
        self.name = name
        self.home = home
        self.proc = DaemonProcess(home)
        self.client: Client | None = None
        self.id = ""

    async def call(self, method: str, **params: object) -> object:
        assert self.client is not None
        return await self.client.call(method, **params)

    def log(self) -> str:
        path = self.home / "logs" / "ikigaid.log"
        return path.read_text(errors="replace") if path.exists() else ""


class Cluster:
    def __init__(self, url: str, fake: FakeProvider, nursery: trio.Nursery) -> None:
        self.url = url
        self.fake = fake
        self.nursery = nursery
        self.members: list[Member] = []

    async def add(
        self, name: str, *, url: str | None = None, secret: str | None = None, **cluster: object
    ) -> Member:
        home = Path(tempfile.mkdtemp(prefix=f"ikc{name}-", dir="/tmp"))
        settings = {"lease": LEASE, "heartbeat": HEARTBEAT, **cluster}
        write_home(home, self.fake, database_url=url or self.url, cluster=settings)
        if secret is not None:  # daemons of several hosts share it
            creds = home / "credentials.json"
            creds.write_text(json.dumps({**json.loads(creds.read_text()), "cluster_secret": secret}))
        m = Member(name, home)
        self.members.append(m)
        await self.start(m)
        return m

    async def start(self, m: Member) -> None:
        await m.proc.restart()
        m.client = await connect(self.nursery, str(m.proc.socket))
        status = await m.client.call("daemon.status")
        m.id = status["cluster"]["id"]

    def engine(self) -> sa.Engine:
        return sa.create_engine(self.url, poolclass=sa.pool.NullPool)

    def owners(self) -> dict[str, str | None]:
        """Each live agent's daemon, as the database has it."""
        engine = self.engine()
        try:
            with engine.connect() as conn:
                rows = conn.exec_driver_sql(
                    "SELECT name, daemon FROM agents WHERE status <> 'dead'"
                ).all()
        finally:
            engine.dispose()
        return {r[0]: r[1] for r in rows}

    def stop(self) -> None:
        for m in self.members:
            m.proc.stop()
        for m in self.members:
            shutil.rmtree(m.home, ignore_errors=True)


@pytest.fixture
def cluster_db() -> AsyncIterator[str]:
    admin = _pg_admin_url()
    name = f"ikigai_cluster_{secrets.token_hex(4)}"
    url = create_pg_database(admin, name)
    try:
        yield url
    finally:
        drop_pg_database(admin, name)


@pytest.fixture
async def cluster(
    cluster_db: str, fake_provider: FakeProvider, nursery: trio.Nursery
) -> AsyncIterator[Cluster]:
    c = Cluster(cluster_db, fake_provider, nursery)
    try:
        yield c
    finally:
        c.stop()
