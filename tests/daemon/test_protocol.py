"""Bad input on the control socket never hurts the daemon or other clients."""

from __future__ import annotations

import json
import socket
import tempfile
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import Store
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import connect, turn_ended
from tests.fakes.script import Reply


class _NoFake:
    base_url = "http://127.0.0.1:9"  # nothing listens: the fuzz never reaches a provider


@pytest.fixture(scope="module")
def quiet_daemon():
    home = Path(tempfile.mkdtemp(prefix="ikf-", dir="/tmp"))
    write_home(home, _NoFake(), max_line_bytes=4096)
    d = DaemonProcess(home)
    d.start_blocking()
    with _client(d) as c:
        _call(c, "agent.create", {"name": "fixed"})
    yield d
    d.stop()


class _client:
    def __init__(self, d: DaemonProcess) -> None:
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(10)
        self.s.connect(str(d.socket))
        self.f = self.s.makefile("rb")

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.f.close()
        self.s.close()


def _call(c: _client, method: str, params: dict | None = None, rid: int = 99) -> dict:
    c.s.sendall(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode() + b"\n")
    while True:
        msg = json.loads(c.f.readline())
        if msg.get("id") == rid:
            return msg


def _counts(d: DaemonProcess) -> tuple:
    with Store(f"sqlite:///{d.home / 'ikigai.db'}", upgrade=False) as store, store.engine.connect() as conn:
        return tuple(conn.exec_driver_sql(f"select count(*) from {t}").scalar() for t in ("agents", "messages", "mail"))


# no hex digits: a junk string must never be a uuid prefix of a real agent
_junk_text = st.text(alphabet="ghijkmnoz!@# \u00e9\u4e16", max_size=20)
_junk_values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _junk_text, st.lists(st.integers(), max_size=3))
_bad_requests = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(str.encode),
    st.builds(
        lambda m, p: json.dumps({"jsonrpc": "2.0", "id": 1, "method": m, "params": p}).encode(),
        st.sampled_from(["agent.prompt", "agent.fork", "agent.kill", "agent.set_model", "agent.history", "mail.send", "agent.rewind", "nope", ""]),
        st.dictionaries(st.sampled_from(["agent", "text", "model", "at", "limit", "to", "name", "wait", "bogus"]), _junk_values, max_size=4),
    ),
    st.builds(lambda v: json.dumps(v).encode(), _junk_values),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_bad_requests, min_size=1, max_size=5), st.booleans())
def test_fuzz_never_hurts_the_daemon(quiet_daemon, requests, truncate):
    before = _counts(quiet_daemon)
    with _client(quiet_daemon) as c:
        for raw in requests:
            c.s.sendall(raw.replace(b"\n", b" ") + (b"" if truncate else b"\n"))
        if truncate:
            c.s.shutdown(socket.SHUT_WR)
    with _client(quiet_daemon) as c:
        assert _call(c, "daemon.status")["result"]["agents"]["running"] >= 1
    assert _counts(quiet_daemon) == before


def test_parse_errors_keep_the_connection_usable(quiet_daemon):
    with _client(quiet_daemon) as c:
        c.s.sendall(b"{not json\n")
        err = json.loads(c.f.readline())
        assert err["error"]["code"] == -32700 and err["id"] is None
        c.s.sendall(b'{"jsonrpc": "2.0", "id": 7, "method": "agent.show", "params": {"agent": 12}}\n')
        err = json.loads(c.f.readline())
        assert err == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "invalid params for agent.show: agent: Expected `str`, got `int`"}}
        assert _call(c, "daemon.status")["result"]["version"]


def test_a_line_over_the_limit_closes_only_that_connection(quiet_daemon):
    with _client(quiet_daemon) as other, _client(quiet_daemon) as c:
        c.s.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "daemon.status", "params": {"x": "' + b"y" * 10_000 + b'"}}\n')
        err = json.loads(c.f.readline())
        assert err["error"]["code"] == -32004
        assert c.f.readline() == b""  # closed
        assert "result" in _call(other, "daemon.status")


def test_a_client_that_never_reads_is_dropped(quiet_daemon):
    with _client(quiet_daemon) as c:
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        for i in range(20_000):
            try:
                c.s.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": "models.list"}).encode() + b"\n")
            except OSError:
                break  # the daemon dropped us
    with _client(quiet_daemon) as ok:
        assert "result" in _call(ok, "daemon.status")


async def test_two_hundred_clients_subscribe_and_prompt(daemon, fake_provider, nursery):
    await daemon.start()
    fake_provider.default = Reply(text="a b c d", pieces=4)
    n = 200
    admin = await connect(nursery, str(daemon.socket))
    for i in range(n):
        await admin.call("agent.create", name=f"c{i}")
    results: dict[int, list] = {}

    async def one(i: int) -> None:
        c = await connect(nursery, str(daemon.socket))
        await c.call("agent.subscribe", agent=f"c{i}")
        turn = (await c.call("agent.prompt", agent=f"c{i}", text="go"))["turn"]
        results[i] = await c.events_until(turn_ended(turn), limit=120)
        await c.stream.aclose()

    with trio.fail_after(180):
        async with trio.open_nursery() as inner:
            for i in range(n):
                inner.start_soon(one, i)
    for i in range(n):
        events = results[i]
        assert "".join(e["event"]["text"] for e in events if e["event"]["type"] == "text_delta") == "a b c d"
        assert events[-1]["event"]["status"] == "completed"
    # the 200 that left are cleaned up (closing is asynchronous: allow it a moment)
    for _ in range(500):
        status = await admin.call("daemon.status")
        if status["connections"] == 1:
            break
        await trio.sleep(0.01)
    assert status["connections"] == 1
