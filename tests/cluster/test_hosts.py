"""Daemons of different hosts: reached on the TCP port each announces
(cluster.listen), every connection authenticated both ways with the shared
cluster_secret before a request is read. Two daemons of this machine play
two hosts (cluster.host), so the Unix sockets are not used."""

from __future__ import annotations

import json

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cluster.conftest import Cluster
from tests.daemon.rpc import RpcFailure, turn_ended
from tests.fakes.script import Reply

pytestmark = pytest.mark.postgres

SECRET = "0123456789abcdef0123456789abcdef"


async def test_forwarding_between_hosts_is_authenticated(cluster: Cluster) -> None:
    a = await cluster.add("a", host="host-a", listen="127.0.0.1:0", secret=SECRET)
    b = await cluster.add("b", host="host-b", listen="127.0.0.1:0", secret=SECRET)
    rows = {d["id"]: d for d in (await a.call("daemons.list"))["daemons"]}
    assert rows[b.id]["host"] == "host-b" and rows[b.id]["address"].startswith("127.0.0.1:")
    await a.call("agent.create", name="far", on=b.id)
    cluster.fake.push(Reply(text="over tcp"))
    done = await a.call("agent.prompt", agent="far", text="hi", wait=True)
    assert done["reply"] == "over tcp"
    sub = await a.call("agent.subscribe", agent="far")
    cluster.fake.push(Reply(text="streamed", pieces=2))
    started = await b.call("agent.prompt", agent="far", text="again")
    assert a.client is not None
    events = await a.client.events_until(turn_ended(started["turn"]))
    assert [e["seq"] for e in events] == list(range(sub["next_seq"], sub["next_seq"] + len(events)))
    assert SECRET not in a.log() + b.log()

    # a daemon with another secret is not let in, and says so
    c = await cluster.add("c", host="host-c", listen="127.0.0.1:0", secret="f" * 32)
    with pytest.raises(RpcFailure) as refused:
        await c.call("agent.show", agent="far")
    assert refused.value.code == -32009
    assert "did not prove the shared secret" in refused.value.error["message"]
    assert "refused a daemon connection" in b.log()


def _address(rows: list[dict], daemon: str) -> tuple[str, int]:
    host, _, port = next(d for d in rows if d["id"] == daemon)["address"].rpartition(":")
    return host, int(port)


async def test_hostile_bytes_on_the_peer_port_change_nothing(cluster: Cluster) -> None:
    """Whatever a stranger sends the TCP port, it is dropped before a request
    is read, and the daemon goes on answering."""
    b = await cluster.add("b", host="host-b", listen="127.0.0.1:0", secret=SECRET)
    await b.call("agent.create", name="keeper")
    host, port = _address((await b.call("daemons.list"))["daemons"], b.id)
    line = st.one_of(
        st.binary(max_size=300),
        st.builds(
            lambda d: json.dumps(d).encode() + b"\n",
            st.dictionaries(
                st.sampled_from(["daemon", "proof", "challenge", "method", "id"]),
                st.one_of(st.text(max_size=40), st.integers(), st.none()),
                max_size=4,
            ),
        ),
        st.just(b'{"jsonrpc":"2.0","id":1,"method":"daemon.shutdown"}\n'),
    )

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(line, min_size=1, max_size=3))
    def attempt(lines: list[bytes]) -> None:
        async def one() -> None:
            stream = await trio.open_tcp_stream(host, port)
            async with stream:
                hello = await stream.receive_some(4096)
                assert b'"challenge"' in hello
                for data in lines:
                    try:
                        await stream.send_all(data)
                    except trio.BrokenResourceError:
                        return
                with trio.move_on_after(0.5):
                    while True:
                        try:
                            got = await stream.receive_some(4096)
                        except trio.BrokenResourceError:  # reset: closed with bytes unread
                            return
                        if not got:
                            return
                        # refused, never answered: no proof, no result
                        assert b'"result"' not in got and b'"proof"' not in got

        trio.run(one)

    await trio.to_thread.run_sync(attempt)
    shown = await b.call("agent.show", agent="keeper")
    assert shown["status"] == "running"
    assert (await b.call("daemon.status"))["cluster"]["lease_held"]
