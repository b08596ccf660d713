"""The supervisor: tree operations, model switches across providers, mail,
sub-agents run by the model itself, restart, and many agents at once."""

from __future__ import annotations

import json

import msgspec
import trio

from agents.events import LogEntry, TurnEnded
from agents.tools import ToolRegistry, agent_tools
from providers.types import TextBlock, TextDelta
from tests.agents.conftest import collect_turn, of
from tests.fakes.script import Reply, ToolCall

MODEL = "claude-sonnet-4-5/med"


async def test_kill_cascades_to_grandchildren_and_dead_stay_readable(harness):
    sup = await harness.start()
    harness.fake.default = Reply(text="ok")
    a, _, _ = await sup.create(model=MODEL, name="a")
    await harness.turn("a", "hello")
    b, _, _ = await sup.fork("a", name="b")
    c, _, _ = await sup.fork("b", name="c")
    other, _, _ = await sup.create(model=MODEL, name="other")
    ended = await sup.kill("a")
    assert set(ended) == {a.uuid, b.uuid, c.uuid}
    assert set(sup.actors) == {other.uuid}
    for uuid in (a.uuid, b.uuid, c.uuid):
        rec = harness.store.get_agent(uuid)
        assert rec.status == "dead" and rec.ended_at is not None
    # dead agents stay readable: c still replays a's conversation
    assert [m.text for m in harness.store.replay(c.uuid)] == ["hello", "ok"]
    assert harness.store.history(a.uuid)[-1].kind == "agent_killed"


async def test_fork_inherits_or_overrides_model_and_history(harness):
    sup = await harness.start()
    harness.fake.default = Reply(text="answer")
    await sup.create(model=MODEL, name="a")
    await harness.turn("a", "question one")
    b, _, _ = await sup.fork("a", name="b")
    assert (b.provider, b.model, b.thinking_level) == ("anthropic", "claude-sonnet-4-5", "med")
    g, rg, _ = await sup.fork("a", name="g", model="gemini-2.5-flash/low")
    assert (g.provider, g.model, g.thinking_level) == ("google", "gemini-2.5-flash", "low")
    assert rg.thinking.budget == 8_192
    await harness.turn("g", "question two")
    sent = harness.fake.requests[-1]
    assert sent.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    texts = [p.get("text") for c in sent.json["contents"] for p in c["parts"]]
    assert texts == ["question one", "answer", "question two"]
    assert sent.json["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 8_192


async def test_fork_at_an_earlier_message(harness):
    sup = await harness.start()
    harness.fake.push(Reply(text="first answer"), Reply(text="second answer"))
    a, _, _ = await sup.create(model=MODEL, name="a")
    await harness.turn("a", "one")
    await harness.turn("a", "two")
    first_answer = next(r.id for r in harness.store.history(a.uuid) if r.content == "first answer")
    b, _, _ = await sup.fork("a", at_message=first_answer, name="b")
    assert [m.text for m in harness.store.replay(b.uuid)] == ["one", "first answer"]


async def test_forking_a_busy_agent_forks_its_last_completed_message(harness):
    sup = await harness.start()
    harness.fake.push(Reply(text="done"), Reply(text="slow " * 40, pieces=40, delay=0.02))
    a, _, _ = await sup.create(model=MODEL, name="a")
    await harness.turn("a", "quick")
    actor = await sup.live("a")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await sup.prompt(actor, "slow one")
    async for e in sub:
        if isinstance(e.event, TextDelta):
            break
    b, _, _ = await sup.fork("a", name="b")
    assert [m.text for m in harness.store.replay(b.uuid)] == ["quick", "done"]
    await collect_turn(sub, turn)
    assert [m.text for m in harness.store.replay(a.uuid)][-1].startswith("slow")


async def test_model_switch_across_three_providers_keeps_requests_valid(harness):
    sup = await harness.start(tools=_echo_tools())
    harness.fake.push(
        Reply(thinking="thinking hard", thinking_signature="anthropic-sig", tool_calls=[ToolCall("echo", {"text": "x"}, id="toolu_9")]),
        Reply(text="claude says hi"),
    )
    a, _, _ = await sup.create(model=MODEL, name="a")
    await harness.turn("a", "use the tool")

    resolved = await sup.switch_model("a", "gpt-4o")
    assert resolved.description == "OpenAI gpt-4o / Thinking: not supported by this model"
    assert resolved.warnings == ["Thinking not supported by this model (ignored)"]
    harness.fake.push(Reply(text="gpt says hi"))
    await harness.turn("a", "now you, gpt")
    body = harness.fake.requests[-1]
    assert body.path == "/v1/chat/completions"
    assert b"anthropic-sig" not in body.body and b"thinking hard" not in body.body
    roles = [m["role"] for m in body.json["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert body.json["messages"][1]["tool_calls"][0]["id"] == "toolu_9"

    resolved = await sup.switch_model("a", "gemini-2.5-pro/high")
    assert resolved.thinking.budget == 32_768
    harness.fake.push(Reply(text="gemini says hi", thinking="hmm", thinking_signature="gemini-sig"))
    await harness.turn("a", "and gemini")
    body = harness.fake.requests[-1]
    assert body.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert b"anthropic-sig" not in body.body
    parts = [p for c in body.json["contents"] for p in c["parts"]]
    call = next(p for p in parts if "functionCall" in p)
    response = next(p for p in parts if "functionResponse" in p)
    assert call["functionCall"]["name"] == response["functionResponse"]["name"] == "echo"

    harness.fake.push(Reply(text="claude again"))
    await sup.switch_model("a", "claude-sonnet-4-5")
    await harness.turn("a", "back to claude")
    body = harness.fake.requests[-1]
    assert b"gemini-sig" not in body.body and b"anthropic-sig" in body.body
    kinds = [r.kind for r in harness.store.history(a.uuid)]
    assert kinds.count("model_switch") == 3


async def test_switch_refused_while_busy_unless_queued(harness):
    sup = await harness.start()
    harness.fake.push(Reply(text="slow " * 20, pieces=20, delay=0.02), Reply(text="from gpt"))
    await sup.create(model=MODEL, name="a")
    actor = await sup.live("a")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await sup.prompt(actor, "go")
    from agents import AgentError

    try:
        await sup.switch_model("a", "gpt-4o")
        raise AssertionError("switch while busy was accepted")
    except AgentError as e:
        assert "running a turn" in str(e)
    await sup.switch_model("a", "gpt-4o", queue=True)
    turn2, _ = await sup.prompt(actor, "next")
    await collect_turn(sub, turn)
    sub2 = actor.log.subscribe(from_seq=actor.log.next_seq)
    await collect_turn(sub2, turn2)
    assert harness.fake.requests[-1].path == "/v1/chat/completions"


async def test_send_and_wait_between_agents(harness):
    sup = await harness.start()

    def respond(req):
        text = json.dumps(req.json)
        if "[mail from" in text:
            return Reply(text="pong from b")
        return Reply(text="plain")

    harness.fake.responder = respond
    a, _, _ = await sup.create(model=MODEL, name="a")
    b, _, _ = await sup.create(model=MODEL, name="b")
    await sup.send_mail(a.uuid, "b", "ping")
    with trio.fail_after(10):
        [result] = await sup.wait_for(a.uuid, ["b"], timeout=10)
    assert result["status"] == "completed" and result["reply"] == "pong from b"
    mail_turn = harness.store.replay(b.uuid)
    assert mail_turn[0].text.startswith("[mail from a (") and mail_turn[0].text.endswith("ping")
    # while b is still busy, a reply it mails to a waiting a is what the wait returns
    harness.fake.responder = lambda req: Reply(text="slow " * 50, pieces=50, delay=0.02)
    await sup.prompt(await sup.live("b"), "long job")
    got = []

    async def waiter():
        got.extend(await sup.wait_for(a.uuid, [b.uuid], timeout=10))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        while a.uuid not in sup.waiting:  # noqa: ASYNC110 - polling the observable state under test
            await trio.sleep(0.001)
        await sup.send_mail(b.uuid, a.uuid, "direct answer")
    assert [(r["status"], r["reply"]) for r in got] == [("answered", "direct answer")]
    # the wait consumed it: a did not take it as a prompt
    assert [m.text for m in harness.store.replay(a.uuid)] == []


async def test_wait_times_out_with_running_status(harness, virtual_clock):
    sup = await harness.start()
    harness.fake.default = Reply(text="slow", delay=100)
    a, _, _ = await sup.create(model=MODEL, name="a")
    await sup.create(model=MODEL, name="b")
    await sup.prompt(await sup.live("b"), "take your time")
    [r] = await sup.wait_for(a.uuid, ["b"], timeout=5)
    assert r["status"] == "running"


def _echo_tools() -> ToolRegistry:
    from agents.tools import ToolOutput, ToolSpec

    reg = ToolRegistry()

    async def echo(args, ctx):
        return ToolOutput(args["text"])

    reg.register(ToolSpec("echo", "echo", {"type": "object", "properties": {"text": {"type": "string"}}}, echo))
    return reg


async def test_the_model_forks_a_child_and_waits_for_its_answer(harness):
    reg = ToolRegistry()
    for spec in agent_tools():
        reg.register(spec)
    sup = await harness.start(tools=reg)

    def respond(req):
        msgs = req.json["messages"]
        first = msgs[0]["content"]
        first = first if isinstance(first, str) else first[0]["text"]
        if first == "compute 6*7":  # the child
            return Reply(text="forty-two")
        last = json.dumps(msgs[-1]["content"])
        if len(msgs) == 1:
            return Reply(tool_calls=[ToolCall("fork", {"prompt": "compute 6*7", "name": "kid"}, id="f1")])
        if '"f1"' in last:
            child = harness.store.resolve("kid").uuid
            return Reply(tool_calls=[ToolCall("wait", {"agents": [child], "timeout": 30}, id="w1")])
        if '"w1"' in last:
            return Reply(text="the child says " + ("forty-two" if "forty-two" in last else "nothing"))
        return Reply(text="unexpected request")

    harness.fake.responder = respond
    parent, _, _ = await sup.create(model=MODEL, name="boss")
    events = await harness.turn("boss", "orchestrate", limit=20)
    assert of(events, TurnEnded)[0].status == "completed"
    assert harness.store.replay(parent.uuid)[-1].content == [TextBlock(text="the child says forty-two")]
    kid = harness.store.resolve("kid")
    assert kid.parent_uuid == parent.uuid
    assert harness.store.replay(kid.uuid)[-1].text == "forty-two"


async def test_restart_restores_agents_and_exact_histories(harness):
    sup = await harness.start(tools=_echo_tools())
    harness.fake.push(
        Reply(thinking="t", thinking_signature="sig-restart", tool_calls=[ToolCall("echo", {"text": "e"}, id="x1")]),
        Reply(text="before restart"),
    )
    a, _, _ = await sup.create(model=MODEL, name="a", system="be brief")
    await harness.turn("a", "hi")
    b, _, _ = await sup.fork("a", name="b", model="gpt-4o")
    before = {u: await (await sup.live(u)).context() for u in (a.uuid, b.uuid)}
    await harness.stop()

    sup2 = await harness.start(tools=_echo_tools())
    assert set(sup2.actors) == {a.uuid, b.uuid}
    for uuid, messages in before.items():
        actor = sup2.actors[uuid]
        assert msgspec.json.encode(await actor.context()) == msgspec.json.encode(messages)
    assert sup2.actors[b.uuid].model == "gpt-4o" and sup2.actors[a.uuid].system_prompt == "be brief"
    harness.fake.push(Reply(text="after restart"))
    await harness.turn("a", "still there?")
    sent = harness.fake.requests[-1].json
    assert sent["system"][0]["text"] == "be brief"
    assert json.dumps(sent).count("sig-restart") == 1


async def test_a_thousand_agents_stream_at_once_without_loss(harness):
    # two cores serve 1,000 streams here: give reads time so nothing is retried
    sup = await harness.start(read_timeout=120)
    pieces = 10
    harness.fake.default = Reply(text="".join(f"<{i}>" for i in range(pieces)), pieces=pieces)
    n = 1000
    uuids = []
    for i in range(n):
        rec, _, _ = await sup.create(model=MODEL, name=f"n{i}")
        uuids.append(rec.uuid)
    received: dict[str, list[LogEntry]] = {}

    async def watch(uuid, sub, turn):
        received[uuid] = await collect_turn(sub, turn, limit=120)

    with trio.fail_after(180):
        async with trio.open_nursery() as nursery:
            for uuid in uuids:
                actor = sup.actors[uuid]
                sub = actor.log.subscribe(from_seq=actor.log.next_seq)
                turn, _ = await sup.prompt(actor, "count")
                nursery.start_soon(watch, uuid, sub, turn)
    expected = "".join(f"<{i}>" for i in range(pieces))
    for uuid in uuids:
        events = received[uuid]
        seqs = [e.seq for e in events]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), uuid  # nothing lost, nothing reordered
        assert "".join(e.text for e in of(events, TextDelta)) == expected, of(events, TurnEnded)
        assert of(events, TurnEnded)[0].status == "completed"
    assert len(harness.fake.requests) == n  # no retries were needed


async def test_cancelling_a_waiter_never_kills_the_agent_it_waits_on(harness):
    reg = ToolRegistry()
    for spec in agent_tools():
        reg.register(spec)
    sup = await harness.start(tools=reg)
    b, _, _ = await sup.create(model=MODEL, name="worker")

    def respond(req):
        msgs = req.json["messages"]
        first = msgs[0]["content"]
        first = first if isinstance(first, str) else first[0]["text"]
        if first == "work slowly":
            return Reply(text="done " * 30, pieces=30, delay=0.02)
        return Reply(tool_calls=[ToolCall("wait", {"agents": [b.uuid], "timeout": 60}, id="w1")])

    harness.fake.responder = respond
    worker = await sup.live("worker")
    wsub = worker.log.subscribe(from_seq=worker.log.next_seq)
    wturn, _ = await sup.prompt(worker, "work slowly")
    await sup.create(model=MODEL, name="boss")
    boss = await sup.live("boss")
    sub = boss.log.subscribe(from_seq=boss.log.next_seq)
    await sup.prompt(boss, "wait for the worker")
    from agents.events import ToolStarted

    events = []
    with trio.fail_after(10):
        async for e in sub:
            events.append(e)
            if isinstance(e.event, ToolStarted):
                boss.cancel()
            if isinstance(e.event, TurnEnded):
                break
    assert of(events, TurnEnded)[0].status == "interrupted"
    worker_events = await collect_turn(wsub, wturn)
    assert of(worker_events, TurnEnded)[0].status == "completed"
    assert worker.alive and b.uuid in sup.actors
