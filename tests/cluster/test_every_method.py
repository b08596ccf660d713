"""Every per-agent method asked of a daemon that does not run the agent is
answered as its owner answers it (forwarded), and what it changes is seen
by the owner."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import Cluster, until
from tests.fakes.script import Reply

pytestmark = pytest.mark.postgres

VOLATILE = {"context", "last_active_at", "state", "queued", "current_turn"}


def _same(x: dict[str, Any], y: dict[str, Any]) -> None:
    assert {k: v for k, v in x.items() if k not in VOLATILE} == {
        k: v for k, v in y.items() if k not in VOLATILE
    }


async def test_every_agent_method_through_a_daemon_that_does_not_run_it(
    cluster: Cluster,
) -> None:
    a = await cluster.add("a")
    b = await cluster.add("b")
    c = await cluster.add("c")
    cluster.fake.default = Reply(text="fine")
    await c.call("agent.create", name="w", on=b.id)
    done = await a.call("agent.prompt", agent="w", text="first", wait=True)
    assert done["reply"] == "fine"

    # reads: the same answer as the owner's
    _same(await a.call("agent.show", agent="w"), await b.call("agent.show", agent="w"))
    assert await a.call("agent.history", agent="w") == await b.call("agent.history", agent="w")
    assert await a.call("agent.usage", agent="w") == await b.call("agent.usage", agent="w")
    assert (await a.call("agent.export", agent="w"))["agent"] == (
        await b.call("agent.export", agent="w")
    )["agent"]

    # changes: made through a, seen by b
    await a.call("agent.set_system", agent="w", text="be brief")
    await a.call("agent.set_priority", agent="w", priority="background")
    assert (await a.call("agent.set_policy", agent="w", policy="default"))["policy"] == ["default"]
    await a.call("agent.set_model", agent="w", model="claude-sonnet-4-5/high")
    budget = await a.call("agent.set_budget", agent="w", budget={"max_turns": 50})
    assert budget["budgets"][0]["max_turns"] == 50
    shown = await b.call("agent.show", agent="w")
    assert shown["system_prompt"] == "be brief" and shown["priority"] == "background"
    assert shown["policy"] == ["default"]  # not the configured yolo
    assert shown["thinking_level"] == "high"
    mark = await a.call("agent.mark", agent="w", label="m1")
    assert mark["message_id"] > 0
    started = await a.call("agent.prompt", agent="w", text="second")
    waited = await a.call("agent.wait", agent="w", turn=started["turn"])
    assert waited["status"] == "completed"
    assert (await a.call("agent.rewind", agent="w", label="m1"))["message_id"] > 0
    assert (await a.call("agent.cancel", agent="w")) == {"cancelled": False}
    sent = await a.call("mail.send", to="w", text="a letter")

    async def read_and_idle() -> bool:
        # the mail is taken as a prompt: a turn of its own, then idle again
        shown = await b.call("agent.show", agent="w")
        unread = await b.call("mail.inbox", agent="w", unread=True)
        return not unread and shown["state"] == "idle" and not shown["queued"]

    await until(read_and_idle, 30)
    inbox = await b.call("mail.inbox", agent="w")
    assert sent["id"] in [m["id"] for m in inbox]
    assert await a.call("mail.inbox", agent="w") == inbox
    compacted = await a.call("agent.compact", agent="w")
    assert "compacted" in compacted
    assert (await a.call("agent.clear", agent="w"))["message_id"] > 0
    renamed = await a.call("agent.rename", agent="w", name="w2")
    assert renamed["name"] == "w2" and renamed["daemon"] == b.id

    # a fork through a: the child runs on its parent's daemon
    child = await a.call("agent.fork", agent="w2", name="kid")
    assert child["agent"]["daemon"] == b.id
    assert (await c.call("agent.show", agent="kid"))["parent"] == renamed["uuid"]

    killed = await a.call("agent.kill", agent="w2")
    assert set(killed["killed"]) == {renamed["uuid"], child["agent"]["uuid"]}
    removed = await c.call("agent.remove", agent="w2")
    assert removed["removed"] == [renamed["uuid"]]
    assert "w2" not in {x["name"] for x in await b.call("agent.list", include_dead=True)}
