"""Handing agents over without losing an event: ``agent.move`` of an idle
agent, and a daemon with ``cluster.drain`` stopped by SIGTERM (a rolling
restart). A subscriber on a third daemon sees every seq once: its
subscription ends with "agent moved" and it subscribes again from the next
seq, which the new owner goes on from."""

from __future__ import annotations

import signal

import pytest
import trio

from tests.cluster.conftest import Cluster, Member, until
from tests.daemon.rpc import RpcFailure
from tests.fakes.script import Reply

pytestmark = pytest.mark.postgres


class Follower:
    """A subscriber to one agent through one daemon, resubscribing after a move."""

    def __init__(self, m: Member, agent: str) -> None:
        self.m, self.agent = m, agent
        self.seqs: list[int] = []
        self.ends: list[str] = []
        self.sid = 0

    async def subscribe(self, from_seq: int | None = None) -> None:
        params = {"agent": self.agent} if from_seq is None else {"agent": self.agent, "from_seq": from_seq}
        self.sid = (await self.m.call("agent.subscribe", **params))["subscription"]  # type: ignore[index]

    async def read_until(self, done) -> None:  # type: ignore[no-untyped-def]
        """Notes until ``done(params)`` holds for an event, or the subscription ends."""
        assert self.m.client is not None
        with trio.fail_after(30):
            async for note in self.m.client.notes:
                params = note["params"]
                if params.get("subscription") != self.sid:
                    continue
                if note["method"] == "agent.subscription_end":
                    self.ends.append(params["reason"])
                    return
                self.seqs.append(params["seq"])
                if done(params):
                    return


def _ended(params: dict) -> bool:
    return params["event"]["type"] == "turn_ended"


async def test_move_and_drain_lose_no_event(cluster: Cluster) -> None:
    a = await cluster.add("a")
    b = await cluster.add("b", drain=True)
    c = await cluster.add("c")
    cluster.fake.default = Reply(text="an answer", pieces=3)
    await a.call("agent.create", name="w")
    await a.call("agent.prompt", agent="w", text="one", wait=True)
    f = Follower(c, "w")
    await f.subscribe(from_seq=1)
    await a.call("agent.prompt", agent="w", text="two")
    await f.read_until(_ended)

    # move it from a to b, asked of c
    moved = await c.call("agent.move", agent="w", to=b.id)
    assert moved["moved_from"] == a.id and moved["to"] == b.id
    await f.read_until(lambda _: False)  # the Notice, then "agent moved"
    assert f.ends == ["agent moved"] and f.seqs[-1] == moved["next_seq"] - 1
    assert (await a.call("agent.show", agent="w"))["daemon"] == b.id
    await f.subscribe(from_seq=f.seqs[-1] + 1)
    await c.call("agent.prompt", agent="w", text="three")
    await f.read_until(_ended)

    # b drains on SIGTERM: w goes to a or c, and its seq goes on there
    b.proc.signal(signal.SIGTERM)
    await f.read_until(lambda _: False)
    assert f.ends == ["agent moved", "agent moved"]
    assert b.proc.wait(30) == 0

    async def placed() -> bool:
        try:
            return (await c.call("agent.show", agent="w"))["daemon"] in (a.id, c.id)  # type: ignore[index]
        except RpcFailure as e:
            return e.code == -32009 and False

    await until(placed, 30)
    await f.subscribe(from_seq=f.seqs[-1] + 1)
    await a.call("agent.prompt", agent="w", text="four")
    await f.read_until(_ended)
    assert f.seqs == list(range(1, len(f.seqs) + 1)), f.seqs  # every seq, once, in order
    assert "drained" in b.log()

    # a busy agent is refused, naming why; a move to where it runs too
    with pytest.raises(RpcFailure) as same:
        await a.call("agent.move", agent="w", to=(await a.call("agent.show", agent="w"))["daemon"])
    assert same.value.code in (-32602, -32003)
    with pytest.raises(RpcFailure) as nowhere:
        await a.call("agent.move", agent="w", to="nope")
    assert nowhere.value.error["message"].startswith("to: no live daemon is 'nope'")
