"""agent.create and agent.fork honour ``wait: true`` as agent.prompt does
(issue 21 item 5): the answer comes when the first turn has ended."""

from __future__ import annotations

import pytest

from protocol import TURN_FAILED
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import HttpError, Reply


async def test_create_and_fork_with_wait_answer_after_the_turn(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    fake_provider.push(Reply(text="first answer", delay=0.2))
    created = await c.call("agent.create", name="w", prompt="hello", wait=True)
    assert created["outcome"]["status"] == "completed"
    assert created["outcome"]["reply"] == "first answer"
    assert created["outcome"]["turn"] == created["turn"]
    fake_provider.push(Reply(text="child answer", delay=0.2))
    forked = await c.call("agent.fork", agent="w", name="w2", prompt="and you?", wait=True)
    assert forked["outcome"]["reply"] == "child answer"
    # without wait, or without a prompt, nothing changes
    plain = await c.call("agent.create", name="w3", wait=True)
    assert "outcome" not in plain and plain["turn"] is None
    fake_provider.push(Reply(text="later"))
    queued = await c.call("agent.create", name="w4", prompt="hi")
    assert "outcome" not in queued and queued["turn"]


async def test_a_failed_first_turn_is_an_error_naming_the_agent(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    fake_provider.push(Reply(fault=HttpError(400, "bad request", code="invalid_request_error")))
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.create", name="f", prompt="hello", wait=True)
    assert e.value.code == TURN_FAILED
    data = e.value.error["data"]
    assert data["status"] == "error" and data["agent"]
    shown = await c.call("agent.show", agent=data["agent"])
    assert shown["name"] == "f"  # the agent exists: only its turn failed
