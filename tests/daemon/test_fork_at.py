"""agent.fork ``at`` a message holding tool calls (issue 21 item 2): refused
with the valid points near it, and a fork at one of those takes its first
prompt with a request the provider accepts (the fake enforces the API's rules)."""

from __future__ import annotations

import pytest

from protocol import REFUSED
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Reply, ToolCall


async def test_fork_at_tool_calls_is_refused_and_the_named_points_work(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="p")
    fake_provider.push(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo one"}, id="t1"), ToolCall("bash", {"command": "echo two"}, id="t2")]),
        Reply(text="both ran"),
    )
    await c.call("agent.prompt", agent="p", text="run two things", wait=True)
    rows = (await c.call("agent.history", agent="p"))["messages"]
    kinds = {r["id"]: r["kind"] for r in rows}
    calls = [i for i, k in kinds.items() if k == "tool_call"]
    answer = min(calls) - 1
    results = next(i for i, k in kinds.items() if k == "tool_result")
    prompt = answer - 1
    assert kinds[answer] == "assistant" and kinds[prompt] == "user"
    before = len(await c.call("agent.list"))
    for at in (answer, *calls):
        with pytest.raises(RpcFailure) as e:
            await c.call("agent.fork", agent="p", at=at, prompt="lost?", wait=True)
        assert e.value.code == REFUSED
        message = e.value.error["message"]
        assert "tool calls" in message and f"at {results} (with the results)" in message
        assert f"at {prompt} (before the calls)" in message
    assert len(await c.call("agent.list")) == before  # nothing made, nothing queued
    for at, name in ((results, "after"), (prompt, "before")):
        fake_provider.push(Reply(text=f"fork {name} answers"))
        forked = await c.call("agent.fork", agent="p", at=at, name=name, prompt="go on", wait=True)
        assert forked["outcome"]["status"] == "completed"
        assert forked["outcome"]["reply"] == f"fork {name} answers"
