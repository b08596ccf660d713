"""Mail and ``wait`` across daemons: an agent's ``send`` wakes the recipient
on another daemon, and a ``wait`` there is woken by the answer, through
PostgreSQL's LISTEN/NOTIFY (no polling loop)."""

from __future__ import annotations

import json

import pytest
import trio

from tests.cluster.conftest import Cluster
from tests.fakes.script import Reply, ToolCall

pytestmark = pytest.mark.postgres


async def test_send_and_wait_between_agents_of_two_daemons(cluster: Cluster) -> None:
    a = await cluster.add("a")
    b = await cluster.add("b")
    await a.call("agent.create", name="x", system="I am x")
    await a.call("agent.create", name="y", system="I am y", on=b.id)

    def respond(req):  # type: ignore[no-untyped-def]
        body = json.dumps(req.json)
        done = body.count('"tool_result"')
        if "I am x" in body:
            if done == 0:
                return Reply(tool_calls=[ToolCall("send", {"to": "y", "text": "hello y"}, id="s1")])
            if done == 1:
                return Reply(tool_calls=[ToolCall("wait", {"agents": ["y"], "timeout": 60}, id="w1")])
            return Reply(text="x done")
        if "I am y" in body and "hello y" in body:
            if done == 0:
                return Reply(
                    tool_calls=[ToolCall("send", {"to": "x", "text": "y got hello"}, id="s2")]
                )
            return Reply(text="y done")
        return Reply(text="?")

    cluster.fake.responder = respond
    with trio.fail_after(60):
        done = await a.call("agent.prompt", agent="x", text="go", wait=True)
    assert done["reply"] == "x done"
    rows = (await a.call("agent.history", agent="x"))["messages"]
    waited = [r for r in rows if r["kind"] == "tool_result" and "y got hello" in r["content"]]
    assert waited and "answered" in waited[0]["content"], [(r["kind"], r["content"][:200]) for r in rows]
    # y's turn ran on b, woken by the mail from a
    yrows = (await b.call("agent.history", agent="y"))["messages"]
    assert any("hello y" in r["content"] for r in yrows)
    assert (await b.call("agent.show", agent="y"))["daemon"] == b.id
