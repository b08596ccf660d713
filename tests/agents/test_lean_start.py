"""A turn's start in one write, and many forks in one transaction.

A prompt to an idle agent is acknowledged by the transaction that starts its
turn (no queue row); a busy agent's prompt still queues. Store.fork_many
writes N children and their first turns' user rows in one commit, and the
children share one replay of what they inherit."""

from __future__ import annotations

import sqlalchemy as sa
import trio
from sqlalchemy import event

from agents.events import TurnEnded, TurnStarted
from agents.tools import ToolRegistry, agent_tools
from providers.types import Message, TextBlock, TextDelta
from store import ForkChild
from store._schema import prompt_queue
from tests.agents.conftest import collect_turn, of
from tests.fakes.script import Reply, ToolCall

MODEL = "claude-sonnet-4-5/med"


class Commits:
    """Write transactions on the store's engine while counting (the real
    engine, no stub): on SQLite every write, and only writes, BEGIN IMMEDIATE."""

    def __init__(self, engine: sa.Engine) -> None:
        self.n = 0
        event.listen(engine, "begin", self._seen)

    def _seen(self, conn: sa.Connection) -> None:
        if conn.get_execution_options().get("ikigai_begin") == "IMMEDIATE":
            self.n += 1


def queue_rows(harness) -> int:
    with harness.store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(prompt_queue)).scalar()


async def test_an_idle_agents_prompt_is_acknowledged_by_its_turns_one_write(harness):
    sup = await harness.start()
    harness.fake.default = Reply(text="hi")
    rec, _, _ = await sup.create(model=MODEL, name="a")
    actor = await sup.live("a")
    await harness.turn("a", "warm up")  # the context is loaded from here on
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    commits = Commits(harness.store.engine)
    turn, position = await sup.prompt(actor, "hello")
    # acknowledged: the user row is committed, the turn open, no queue row written
    assert position == 0
    assert commits.n == 1
    assert queue_rows(harness) == 0
    rows = harness.store.history(rec.uuid)
    assert rows[-1].kind == "user" and rows[-1].content == "hello"
    assert rows[-1].data["turn"] == turn
    events = await collect_turn(sub, turn)
    assert [e.prompt for e in of(events, TurnStarted)] == ["hello"]
    assert of(events, TurnEnded)[0].status == "completed"
    assert [m.text for m in harness.store.replay(rec.uuid)] == ["warm up", "hi", "hello", "hi"]


async def test_a_busy_agents_prompts_queue_in_order(harness):
    sup = await harness.start()
    harness.fake.push(Reply(text="slow " * 30, pieces=30, delay=0.02))
    harness.fake.default = Reply(text="ok")
    rec, _, _ = await sup.create(model=MODEL, name="a")
    actor = await sup.live("a")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    _, p0 = await sup.prompt(actor, "one")
    _, p1 = await sup.prompt(actor, "two")
    third, p2 = await sup.prompt(actor, "three")
    assert (p0, p1, p2) == (0, 1, 2)
    assert queue_rows(harness) == 2  # the second and third wait as rows
    await collect_turn(sub, third, limit=20)
    assert [m.text for m in harness.store.replay(rec.uuid)] == [
        "one", "slow " * 30, "two", "ok", "three", "ok",
    ]
    assert queue_rows(harness) == 0


async def test_a_prompt_to_an_agent_killed_before_its_start_is_refused(harness):
    sup = await harness.start()
    rec, _, _ = await sup.create(model=MODEL, name="a")
    actor = await sup.live("a")
    await trio.testing.wait_all_tasks_blocked()
    # an idle agent has no task: one is started when work comes. Starting none
    # holds the prompt, so its start cannot come before the kill
    assert actor.uuid not in sup._scopes
    actor._spawn = lambda _actor: None
    outcome: list[object] = []
    async with trio.open_nursery() as nursery:

        async def send() -> None:
            try:
                outcome.append(await sup.prompt(actor, "never"))
            except Exception as exc:
                outcome.append(exc)

        nursery.start_soon(send)
        await trio.testing.wait_all_tasks_blocked()
        assert outcome == []  # not answered: nothing is stored yet
        await sup.kill("a")
    [refusal] = outcome
    assert isinstance(refusal, Exception) and "killed" in str(refusal)
    assert "never" not in [r.content for r in harness.store.history(rec.uuid)]


async def test_fork_many_is_one_commit_and_every_child_answers_with_its_context(harness):
    sup = await harness.start()
    harness.fake.default = Reply(text="answer")
    await sup.create(model=MODEL, name="p")
    await harness.turn("p", "the task")
    prompts = [f"try idea {i}" for i in range(12)]
    forked = await sup.fork_many("p", prompts, names=[f"c{i}" for i in range(12)])
    assert [child.name for child, _, _ in forked] == [f"c{i}" for i in range(12)]
    for (child, _, turn), text in zip(forked, prompts, strict=True):
        actor = sup.actor_of(child.uuid)
        result = await actor.wait_turn(turn)
        assert result is not None and result.status == "completed", child.name
        # the shared context is exactly what a replay gives
        assert actor.loaded_context() == harness.store.replay(child.uuid)
        assert [m.text for m in harness.store.replay(child.uuid)] == [
            "the task", "answer", text, "answer",
        ]
    sent = sorted(
        [b["text"] for m in r.json["messages"] for b in m["content"] if b["type"] == "text"]
        for r in harness.fake.requests[1:]
    )
    assert sent == sorted([["the task", "answer", t] for t in prompts])


async def test_store_fork_many_writes_children_and_first_turns_in_one_commit(harness):
    sup = await harness.start()
    parent, _, _ = await sup.create(model=MODEL, name="p")
    store = harness.store
    commits = Commits(store.engine)
    children = [
        ForkChild(name=f"k{i}", prompt=Message(role="user", content=[TextBlock(text=f"do {i}")]))
        for i in range(50)
    ] + [ForkChild(name="quiet")]
    made = store.fork_many(parent.uuid, children)
    assert commits.n == 1  # 51 agents, 51 fork rows, 50 user rows and open turns
    assert [r.name for r, _ in made] == [c.name for c in children]
    for (record, first), child in zip(made, children, strict=True):
        if child.prompt is None:
            assert first is None
            continue
        assert first is not None and first.kind == "user"
        assert first.data["turn"].startswith(record.uuid[-8:])
        # the open-turn mark: a daemon killed now would mark this turn interrupted
        assert (record.uuid, first.id) in store.open_turns()
        assert [m.text for m in store.replay(record.uuid)] == [child.prompt.text]


async def test_fork_many_is_all_or_none(harness):
    sup = await harness.start()
    await sup.create(model=MODEL, name="p")
    await sup.create(model=MODEL, name="taken")
    before = len(harness.store.list_agents())
    try:
        await sup.fork_many("p", ["a", "b", "c"], names=["x", "taken", "y"])
    except Exception as exc:
        assert "taken" in str(exc)
    else:
        raise AssertionError("a taken name must refuse the whole fan-out")
    assert len(harness.store.list_agents()) == before


async def test_the_fork_tool_fans_out_in_one_call(harness):
    tools = ToolRegistry(agent_tools())
    sup = await harness.start(tools=tools)

    def respond(req):
        texts = [b.get("text") for m in req.json["messages"] for b in m["content"]
                 if isinstance(b, dict) and b.get("type") == "text"]
        if texts and texts[-1] in ("alpha", "beta", "gamma"):
            return Reply(text=f"did {texts[-1]}")
        if any(isinstance(b, dict) and b.get("type") == "tool_result"
               for m in req.json["messages"] for b in m["content"]):
            return Reply(text="fanned out")
        return Reply(tool_calls=[ToolCall("fork", {"prompts": ["alpha", "beta", "gamma"],
                                                   "name": "w"}, id="f1")])

    harness.fake.responder = respond
    await sup.create(model=MODEL, name="boss")
    events = await harness.turn("boss", "split the work")
    assert of(events, TurnEnded)[0].status == "completed"
    names = {r.name: r for r in harness.store.list_agents()}
    assert {"w-1", "w-2", "w-3"} <= set(names)
    with trio.fail_after(20):
        for n, text in (("w-1", "alpha"), ("w-2", "beta"), ("w-3", "gamma")):
            actor = sup.actor_of(names[n].uuid)
            while actor.busy:
                await actor.wait_turn_end()
            assert harness.store.replay(names[n].uuid)[-1].text == f"did {text}"


async def test_the_fork_tool_wants_prompt_or_prompts(harness):
    tools = ToolRegistry(agent_tools())
    sup = await harness.start(tools=tools)
    harness.fake.push(
        Reply(tool_calls=[ToolCall("fork", {"prompt": "a", "prompts": ["b"]}, id="f1")]),
        Reply(text="ok"),
    )
    await sup.create(model=MODEL, name="boss")
    await harness.turn("boss", "go")
    result = harness.fake.requests[-1].json["messages"][-1]["content"][0]
    assert result["is_error"] and "either 'prompt'" in str(result["content"])
    assert len(harness.store.list_agents()) == 1


async def test_a_streaming_turn_is_not_disturbed_by_a_fan_out(harness):
    sup = await harness.start()
    harness.fake.push(Reply(text="x " * 20, pieces=20, delay=0.01))
    harness.fake.default = Reply(text="ok")
    await sup.create(model=MODEL, name="p")
    actor = await sup.live("p")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await sup.prompt(actor, "stream")
    forked = await sup.fork_many("p", ["a", "b"])  # a busy parent's first turn: fresh children
    events = await collect_turn(sub, turn)
    assert len(of(events, TextDelta)) == 20
    assert len(forked) == 2


async def test_default_names_of_a_fan_out_never_collide(harness):
    from store._agents import _names

    sup = await harness.start()
    parent, _, _ = await sup.create(model=MODEL, name="p")
    # a live agent already holds the 6-character name of the first id
    await sup.create(model=MODEL, name="p-abcdef")
    same_tail = ["0000-aaaa-bbbb-0000abcdef", "1111-cccc-dddd-1111abcdef", "2222-eeee-ffff-22abcdef"]
    with harness.store.engine.connect() as conn:
        names = _names(conn, parent, same_tail, [None, None, None])
    assert len(set(names)) == 3 and "p-abcdef" not in names
    assert all(n.startswith("p-") for n in names)


async def test_a_name_given_twice_in_one_fan_out_is_refused(harness):
    sup = await harness.start()
    await sup.create(model=MODEL, name="p")
    try:
        await sup.fork_many("p", ["a", "b"], names=["twin", "twin"])
    except Exception as exc:
        assert "twin" in str(exc) and "sibling" in str(exc)
    else:
        raise AssertionError("two children cannot share a name")
    assert len(harness.store.list_agents()) == 1
