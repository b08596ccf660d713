"""The gate through the real turn loop: a real supervisor on a SQLite file, the
fake provider scripting tool calls over loopback, P's real Permissions."""

from __future__ import annotations

import json

import pytest
import trio

from agents import AgentConfig, RetryPolicy
from agents.events import ApprovalDecided, ApprovalRequested, StateChanged, TurnEnded
from agents.permissions import Permissions, Policy, Rule
from agents.tools import ToolOutput, ToolRegistry, ToolSpec
from store import ApprovalClosed, NoSuchApproval
from tests.agents.conftest import Harness, collect_turn, of
from tests.fakes.script import Reply, ToolCall

MODEL = "claude-sonnet-4-5/med"
GATED = Policy(
    name="gated",
    rules=(Rule("add", "allow"), Rule("boom", "deny"), Rule("echo", "ask")),
    sandbox="none",
)


def _tools(ran: list) -> ToolRegistry:
    reg = ToolRegistry()

    async def add(args, ctx):
        ran.append("add")
        return ToolOutput(str(args["a"] + args["b"]))

    async def echo(args, ctx):
        ran.append("echo")
        return ToolOutput(args["text"].upper())

    async def boom(args, ctx):
        ran.append("boom")
        return ToolOutput("exploded")

    num = {"type": "number"}
    obj = {"type": "object", "properties": {"a": num, "b": num}}
    reg.register(ToolSpec("add", "Add", obj, add))
    reg.register(ToolSpec("echo", "Shout", {"type": "object", "properties": {"text": {"type": "string"}}}, echo))
    reg.register(ToolSpec("boom", "Explode", {"type": "object", "properties": {}}, boom))
    return reg


async def _start(harness: Harness, ran: list, **config) -> object:
    cfg = AgentConfig(retry=RetryPolicy(base_delay=0.01, jitter=0.0))
    for k, v in config.items():
        setattr(cfg, k, v)
    sup = await harness.start(tools=_tools(ran), config=cfg)
    sup.deps.permissions = Permissions([GATED], default="gated")
    return sup


def _results(request) -> list[dict]:
    """tool_result blocks of the last user message of an Anthropic request."""
    return [b for b in request.json["messages"][-1]["content"] if b.get("type") == "tool_result"]


def _text(block: dict) -> str:
    c = block["content"]
    return c if isinstance(c, str) else "".join(p.get("text", "") for p in c)


def _permissions(harness: Harness, uuid: str) -> list[dict]:
    return [r.data for r in harness.store.history(uuid) if r.kind == "permission"]


async def test_allowed_by_rule_runs_and_denied_returns_its_reason(harness):
    ran: list = []
    sup = await _start(harness, ran)
    rec, _, _ = await sup.create(model=MODEL, name="a")
    harness.fake.push(
        Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3}, id="t1"), ToolCall("boom", {}, id="t2")]),
        Reply(text="done"),
    )
    events = await harness.turn("a", "go")
    assert of(events, TurnEnded)[-1].status == "completed"
    assert ran == ["add"]  # boom never ran
    results = _results(harness.fake.requests[-1])
    assert _text(results[0]) == "5"
    assert results[1]["is_error"] is True
    assert "denied by policy (deny boom)" in _text(results[1])
    rows = _permissions(harness, rec.uuid)
    assert [(r["tool"], r["decision"], r["by"]) for r in rows] == [("add", "allow", "policy"), ("boom", "deny", "policy")]
    assert rows[0]["rule"] == "allow add" and rows[0]["policy"] == "gated"
    # replay ignores permission rows: the next request is well formed
    assert [m.role for m in harness.store.replay(rec.uuid)] == ["user", "assistant", "tool", "assistant"]


async def _until_asked(sub) -> tuple[list, ApprovalRequested]:
    seen = []
    with trio.fail_after(10):
        async for e in sub:
            seen.append(e)
            if isinstance(e.event, ApprovalRequested):
                return seen, e.event
    raise AssertionError("no approval asked")


@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_ask_blocks_the_turn_until_answered(harness, decision):
    ran: list = []
    sup = await _start(harness, ran)
    rec, _, _ = await sup.create(model=MODEL, name="a")
    harness.fake.push(Reply(tool_calls=[ToolCall("echo", {"text": "hi"}, id="e1")]), Reply(text="after"))
    actor = await sup.live("a")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await sup.prompt(actor, "go")
    seen, asked = await _until_asked(sub)
    assert (asked.tool, asked.arguments, asked.tool_call_id, asked.rule) == ("echo", {"text": "hi"}, "e1", "ask echo")
    assert "waiting_for_approval" in [e.event.state for e in seen if isinstance(e.event, StateChanged)]
    await trio.sleep(0.2)
    assert actor.state == "waiting_for_approval" and ran == [] and len(harness.fake.requests) == 1
    [pending] = harness.store.pending_approvals(rec.uuid)
    assert pending.id == asked.approval
    await sup.approve(asked.approval, decision, reason="not now" if decision == "deny" else None, by="tester")
    events = seen + await collect_turn(sub, turn)
    assert of(events, TurnEnded)[-1].status == "completed"
    [decided] = of(events, ApprovalDecided)
    assert (decided.decision, decided.by) == (decision, "tester")
    result = _results(harness.fake.requests[-1])[0]
    if decision == "allow":
        assert ran == ["echo"] and _text(result) == "HI"
    else:
        assert ran == [] and result["is_error"] and _text(result) == "denied by tester: not now"
    [row] = _permissions(harness, rec.uuid)
    assert (row["decision"], row["by"], row["approval"]) == (decision, "tester", asked.approval)
    assert harness.store.pending_approvals() == []
    # a second answer is refused, naming who decided; an unknown id too
    with pytest.raises(ApprovalClosed, match="tester"):
        await sup.approve(asked.approval, "allow", by="late")
    with pytest.raises(NoSuchApproval, match="ap-nope"):
        await sup.approve("ap-nope", "allow", by="x")


async def test_remember_agent_stops_later_asks_and_survives_restart(harness, tmp_path):
    ran: list = []
    sup = await _start(harness, ran)
    rec, _, _ = await sup.create(model=MODEL, name="a")
    harness.fake.push(
        Reply(tool_calls=[ToolCall("echo", {"text": "one"}, id="e1")]),
        Reply(text="first"),
        Reply(tool_calls=[ToolCall("echo", {"text": "two"}, id="e2")]),
        Reply(text="second"),
    )
    actor = await sup.live("a")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await sup.prompt(actor, "go")
    _, asked = await _until_asked(sub)
    await sup.approve(asked.approval, "allow", remember="agent", by="tester")
    await collect_turn(sub, turn)
    events = await harness.turn("a", "again")
    assert of(events, ApprovalRequested) == [] and ran == ["echo", "echo"]
    assert _permissions(harness, rec.uuid)[-1]["by"] == "remembered for this agent"
    # another agent is still asked: the answer was for this agent only
    await sup.create(model=MODEL, name="b")
    harness.fake.push(Reply(tool_calls=[ToolCall("echo", {"text": "b"}, id="b1")]), Reply(text="b done"))
    other = await sup.live("b")
    sub = other.log.subscribe(from_seq=other.log.next_seq)
    await sup.prompt(other, "go")
    await _until_asked(sub)
    await harness.stop()
    # after a restart the remembered answer still holds (kept in history)
    h2 = Harness(harness.nursery, harness.fake, harness.db_path)
    sup2 = await _start(h2, ran)
    harness.fake.push(Reply(tool_calls=[ToolCall("echo", {"text": "3"}, id="e3")]), Reply(text="third"))
    events = await h2.turn("a", "once more")
    assert of(events, TurnEnded)[-1].status == "completed" and of(events, ApprovalRequested) == []
    await h2.stop()
    del sup2


async def test_remember_session_holds_for_every_agent(harness):
    ran: list = []
    sup = await _start(harness, ran)
    await sup.create(model=MODEL, name="a")
    await sup.create(model=MODEL, name="b")
    harness.fake.push(Reply(tool_calls=[ToolCall("echo", {"text": "1"}, id="e1")]), Reply(text="ok"))
    actor = await sup.live("a")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await sup.prompt(actor, "go")
    _, asked = await _until_asked(sub)
    await sup.approve(asked.approval, "allow", remember="session", by="tester")
    await collect_turn(sub, turn)
    harness.fake.push(Reply(tool_calls=[ToolCall("echo", {"text": "2"}, id="e2")]), Reply(text="ok"))
    events = await harness.turn("b", "go")
    assert of(events, ApprovalRequested) == [] and ran == ["echo", "echo"]


async def test_timeout_is_a_deny_with_its_reason(harness):
    ran: list = []
    sup = await _start(harness, ran, approval_timeout=0.3)
    rec, _, _ = await sup.create(model=MODEL, name="a")
    harness.fake.push(Reply(tool_calls=[ToolCall("echo", {"text": "x"}, id="e1")]), Reply(text="gave up"))
    events = await harness.turn("a", "go")
    assert of(events, TurnEnded)[-1].status == "completed" and ran == []
    assert _text(_results(harness.fake.requests[-1])[0]) == "denied by timeout: no answer within 0.3 s"
    [row] = _permissions(harness, rec.uuid)
    assert (row["decision"], row["by"]) == ("deny", "timeout")


async def test_cancel_while_waiting_closes_the_approval(harness):
    ran: list = []
    sup = await _start(harness, ran)
    _rec, _, _ = await sup.create(model=MODEL, name="a")
    harness.fake.push(Reply(tool_calls=[ToolCall("echo", {"text": "x"}, id="e1")]), Reply(text="never"))
    actor = await sup.live("a")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await sup.prompt(actor, "go")
    _, asked = await _until_asked(sub)
    assert actor.cancel()
    events = await collect_turn(sub, turn)
    assert of(events, TurnEnded)[-1].status == "interrupted" and ran == []
    [decided] = of(events, ApprovalDecided)
    assert (decided.decision, decided.reason) == ("deny", "turn cancelled")
    approval = harness.store.get_approval(asked.approval)
    assert (approval.decision, approval.reason) == ("deny", "turn cancelled")
    with pytest.raises(ApprovalClosed):
        await sup.approve(asked.approval, "allow", by="late")
    assert ran == [] and len(harness.fake.requests) == 1


async def test_pending_approval_survives_a_restart(harness):
    ran: list = []
    sup = await _start(harness, ran)
    rec, _, _ = await sup.create(model=MODEL, name="a")
    harness.fake.push(Reply(tool_calls=[ToolCall("echo", {"text": "hi"}, id="e1")]))
    actor = await sup.live("a")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await sup.prompt(actor, "go")
    _, asked = await _until_asked(sub)
    await harness.stop()
    assert harness.store is not None
    h2 = Harness(harness.nursery, harness.fake, harness.db_path)
    harness.fake.push(Reply(text="after the restart"))
    sup2 = await _start(h2, ran)
    actor2 = await sup2.live("a")
    sub2 = actor2.log.subscribe(from_seq=1)
    _, again = await _until_asked(sub2)
    # asked again with the same id, for the same call
    assert (again.approval, again.tool_call_id) == (asked.approval, "e1")
    await sup2.approve(again.approval, "allow", by="tester")
    events = await collect_turn(sub2, turn)
    assert of(events, TurnEnded)[-1].status == "completed" and ran == ["echo"]
    assert actor2.last_result.reply == "after the restart"
    kinds = [r.kind for r in h2.store.history(rec.uuid)]
    assert "interrupted" not in kinds
    assert [m.role for m in h2.store.replay(rec.uuid)] == ["user", "assistant", "tool", "assistant"]
    assert json.dumps(_results(harness.fake.requests[-1])[0]["content"]).count("HI") == 1
    await h2.stop()


async def test_always_answers_the_twin_ask_of_the_same_step(harness):
    """Two calls of one tool in one step ask twice; "always" on the first also
    answers the second, which is not left waiting; a different tool still is."""
    ran: list = []
    sup = await _start(harness, ran)
    rec, _, _ = await sup.create(model=MODEL, name="twins")
    harness.fake.push(
        Reply(tool_calls=[ToolCall("echo", {"text": "1"}, id="t1"), ToolCall("echo", {"text": "2"}, id="t2")]),
        Reply(text="both"),
    )
    actor = await sup.live("twins")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await sup.prompt(actor, "go")
    _, first = await _until_asked(sub)
    _, second = await _until_asked(sub)
    assert {a.id for a in await sup.pending_approvals(rec.uuid)} == {first.approval, second.approval}
    await sup.approve(first.approval, "allow", remember="agent", by="tester")
    events = await collect_turn(sub, turn)
    assert of(events, TurnEnded)[0].status == "completed"
    assert ran == ["echo", "echo"]
    assert await sup.pending_approvals(rec.uuid) == []
    bys = [p["by"] for p in _permissions(harness, rec.uuid)]
    assert "tester" in bys and any(b.startswith("tester, remembered from ") for b in bys)
