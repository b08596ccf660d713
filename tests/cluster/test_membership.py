"""Three daemons on one PostgreSQL database: who they are, where agents go,
and any daemon answering for every agent (docs/cluster.md)."""

from __future__ import annotations

import pytest
import trio

from store import migrate
from tests.cluster.conftest import Cluster
from tests.daemon.rpc import RpcFailure, turn_ended
from tests.fakes.script import Reply

pytestmark = pytest.mark.postgres


async def test_daemons_list_each_other_and_place_agents(cluster: Cluster) -> None:
    a = await cluster.add("a")
    b = await cluster.add("b", labels=["gpu"])
    c = await cluster.add("c")
    assert len({a.id, b.id, c.id}) == 3
    listed = await b.call("daemons.list")
    assert listed["self"] == b.id
    rows = {d["id"]: d for d in listed["daemons"]}
    assert set(rows) == {a.id, b.id, c.id}
    assert rows[b.id]["self"] and not rows[a.id]["self"]
    assert rows[b.id]["labels"] == ["gpu"] and rows[a.id]["state"] == "up"
    assert all(d["heartbeat_age"] < 30 and not d["expired"] for d in rows.values())
    status = await a.call("daemon.status")
    assert status["cluster"]["shared"] and status["cluster"]["lease_held"]
    assert status["cluster"]["generation"] == 1

    # placed where asked: here by default, by id, by label, and spread by "any"
    here = await a.call("agent.create", name="here")
    assert here["agent"]["daemon"] == a.id
    there = await a.call("agent.create", name="there", on=c.id)
    assert there["agent"]["daemon"] == c.id
    gpu = await a.call("agent.create", name="gpu", on="gpu")
    assert gpu["agent"]["daemon"] == b.id
    anywhere = await a.call("agent.create", name="anywhere", on="any")
    # a has one, b one, c one: the tie goes to the daemon asked
    assert anywhere["agent"]["daemon"] == a.id
    assert cluster.owners() == {"here": a.id, "there": c.id, "gpu": b.id, "anywhere": a.id}
    with pytest.raises(RpcFailure) as refused:
        await a.call("agent.create", name="nowhere", on="tpu")
    assert refused.value.code == -32602
    message = refused.value.error["message"]
    assert message.startswith("on: no live daemon is 'tpu'")
    assert a.id in message and b.id in message and c.id in message
    listing = {x["name"]: x["daemon"] for x in await c.call("agent.list")}
    assert listing == {"here": a.id, "there": c.id, "gpu": b.id, "anywhere": a.id}


async def test_any_daemon_answers_for_every_agent(cluster: Cluster) -> None:
    a = await cluster.add("a")
    b = await cluster.add("b")
    await b.call("agent.create", name="far")
    cluster.fake.push(Reply(text="from far away"))
    # asked of a, run by b
    done = await a.call("agent.prompt", agent="far", text="hello", wait=True)
    assert done["reply"] == "from far away"
    shown = await a.call("agent.show", agent="far")
    assert shown["daemon"] == b.id and shown["state"] == "idle"
    history = await a.call("agent.history", agent="far")
    rows = history["messages"]
    assert [m["content"] for m in rows if m["kind"] in ("user", "assistant")][-2:] == [
        "hello",
        "from far away",
    ]
    # a subscription through a follows b's events, seq by seq
    sub = await a.call("agent.subscribe", agent="far")
    assert sub["subscription"] >= 1 and sub["next_seq"] > 1
    cluster.fake.push(Reply(text="streamed across", pieces=4))
    started = await b.call("agent.prompt", agent="far", text="again")
    assert a.client is not None
    events = await a.client.events_until(turn_ended(started["turn"]))
    assert all(e["subscription"] == sub["subscription"] for e in events)
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(sub["next_seq"], sub["next_seq"] + len(seqs)))
    text = "".join(
        e["event"].get("text", "") for e in events if e["event"]["type"] == "text_delta"
    )
    assert text == "streamed across"
    # errors come back as the owner gives them
    with pytest.raises(RpcFailure) as bad:
        await a.call("agent.set_model", agent="far", model="no-such-provider/x")
    assert bad.value.code == -32003
    killed = await a.call("agent.kill", agent="far")
    assert killed["killed"]
    with trio.fail_after(10):
        shown = await a.call("agent.show", agent="far")
    assert shown["status"] == "dead"


async def test_a_schedule_fires_on_its_agents_daemon_only(cluster: Cluster) -> None:
    """Every daemon knows every schedule; only the one running its agent
    fires it, and no other daemon takes the agent for dead and pauses it."""
    a = await cluster.add("a")
    b = await cluster.add("b")
    await a.call("agent.create", name="far", on=b.id)
    cluster.fake.default = Reply(text="on time")
    added = await a.call(
        "schedule.add", agent="far", prompt="tick", every="1s", allow_fast=True
    )
    with trio.fail_after(30):
        while True:
            shown = await a.call("schedule.show", schedule=str(added["id"]))
            fired = [r for r in shown["runs"] if r["status"] == "fired"]
            if len(fired) >= 2:
                break
            await trio.sleep(0.2)
    assert shown["status"] == "active", shown
    assert not any("dead" in (r["reason"] or "") for r in shown["runs"]), shown["runs"]
    history = (await b.call("agent.history", agent="far"))["messages"]
    assert sum(r["content"] == "tick" for r in history if r["kind"] == "user") >= 2


async def test_a_daemon_of_another_schema_is_refused_naming_both(cluster: Cluster) -> None:
    a = await cluster.add("a")
    engine = cluster.engine()
    try:
        with engine.begin() as conn:  # as if a ran an older ikigai
            conn.exec_driver_sql("UPDATE daemons SET schema = '0010' WHERE id = %(d)s", {"d": a.id})
    finally:
        engine.dispose()
    with pytest.raises(AssertionError):  # it never becomes ready
        await cluster.add("b")
    b = cluster.members[-1]
    out = b.proc.start_output()
    head = migrate.head_revision()  # the newest migration: this daemon's schema
    assert f"{a.id} (schema 0010)" in out and f"this daemon's schema is {head}" in out, out
    assert b.proc.proc is not None and b.proc.proc.wait(10) != 0
    assert (await a.call("daemon.status"))["cluster"]["lease_held"]
