"""The client library against the real daemon (a real ikigaid process, the
fake provider process, a real Unix socket): the sync Client, and the
AsyncClient under trio and under asyncio. Results are checked against the
protocol's TypedDicts with msgspec in strict mode."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import msgspec
import pytest
import trio

import ikigai
import protocol as p
from protocol import results as R

from .conftest import Daemon


def typed(value, kind):
    """``value`` as the TypedDict ``kind`` says (raises on any mismatch)."""
    return msgspec.convert(value, type=kind, strict=True)


def connect(daemon: Daemon) -> ikigai.Client:
    return ikigai.connect(str(daemon.socket), autostart=False)


def test_prompt_streams_the_turn_and_wait_gives_its_outcome(daemon):
    with connect(daemon) as c:
        status = typed(c.status(), R.Status)
        assert status["protocol_version"] == p.PROTOCOL_VERSION
        created = typed(c.create(name="lib-sync", model="claude-sonnet-4-5/med"), R.Created)
        agent = created["agent"]["uuid"]
        turn = c.prompt(agent, "hello from the library")
        assert isinstance(turn, ikigai.Turn) and turn.agent == agent and turn.position == 0
        events = list(turn)
        kinds = [e["event"]["type"] for e in events]
        assert kinds[0] == "turn_started" and kinds[-1] == "turn_ended"
        assert "thinking_delta" in kinds and "text_delta" in kinds
        assert all(e["turn"] == turn.id and e["agent"] == agent for e in events)
        seqs = [e["seq"] for e in events]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        outcome = typed(turn.wait(), R.TurnOutcome)
        assert outcome["status"] == "completed" and outcome["turn"] == turn.id
        assert outcome["reply"] == turn.text and turn.text.startswith("Hello!")
        assert outcome["usage"]["output_tokens"] > 0
        # the same outcome again, later, by id
        assert c.wait_turn(agent, turn.id) == outcome
        hist = typed(c.history(agent), R.History)
        assert hist["messages"][-1]["kind"] == "assistant"
        assert hist["messages"][-1]["content"] == turn.text
        tool_turn = c.prompt(agent, "run a tool please")
        events = [e["event"]["type"] for e in tool_turn]
        assert events.count("start") == 2 and "tool_finished" in events  # two model calls
        assert tool_turn.text == tool_turn.wait()["reply"]  # the answer: the last call's text
        assert tool_turn.text.startswith("The tool ran")


def test_ask_waits_without_streaming_and_check_raises(daemon):
    with connect(daemon) as c:
        agent = c.create(name="lib-ask")["agent"]["uuid"]
        out = typed(c.ask(agent, "say something"), R.TurnOutcome)
        assert out["status"] == "completed" and "You said: say something" in out["reply"]
        long_turn = c.prompt(agent, "tell me a long story, slowly")
        next(iter(long_turn))  # it started
        c.cancel(agent)
        with pytest.raises(ikigai.TurnFailed) as e:
            long_turn.wait(check=True)
        assert e.value.outcome["status"] in ("cancelled", "interrupted")
        assert e.value.outcome["turn"] == long_turn.id


def test_a_long_request_first_asks_the_line_limit_then_gets_its_own_answer(daemon):
    """The first line over 1 KiB makes the client ask daemon.status for the
    limit: the long request's answer must still be the one returned (it was
    the status answer, and the caller waited forever)."""
    with connect(daemon) as c:
        agent = c.create(name="lib-long")["agent"]["uuid"]
        text = "big prompt " + "y" * 5000
        out = c.ask(agent, text)
        assert out["status"] == "completed" and out["reply"].startswith("You said: big prompt")
        assert c.line_limit is not None and c.line_limit > 5000


def test_errors_are_typed(daemon, tmp_path: Path):
    with connect(daemon) as c:
        with pytest.raises(ikigai.RpcError) as e:
            c.show("no-such-agent")
        assert e.value.code == p.AGENT_NOT_FOUND
        agent = c.create(name="lib-big")["agent"]["uuid"]
        with pytest.raises(ikigai.RequestTooLarge, match="the prompt is too large"):
            c.prompt(agent, "x" * (2 << 20))
        assert c.status()["agents"]["running"] >= 1  # the connection is still good
    with pytest.raises(ikigai.DaemonUnreachable, match="no daemon answers"):
        ikigai.connect(str(tmp_path / "none.sock"), autostart=False)


def test_the_result_of_every_listing_method_has_its_type(daemon):
    with connect(daemon) as c:
        agent = c.create(name="lib-types")["agent"]["uuid"]
        child = typed(c.fork(agent, name="lib-types-child"), R.Created)
        typed(c.agents(), list[R.ListedAgent])
        typed(c.show(child["agent"]["uuid"]), R.ShownAgent)
        typed(c.models(), list[R.ModelRow])
        typed(c.providers(), list[R.ProviderRow])
        typed(c.usage(agent), R.UsageReport)
        typed(c.usage_all(), R.AllUsage)
        typed(c.set_model(agent, "gpt-4o/none"), R.ModelInfo)
        typed(c.mark(agent, "here"), R.MessageId)
        typed(c.send_mail(agent, "hi", sender=child["agent"]["uuid"]), R.MailId)
        typed(c.inbox(agent), list[R.Mail])
        typed(c.approvals(), list[R.Approval])
        typed(c.mcp_servers(), R.McpServers)
        typed(c.kill(child["agent"]["uuid"]), R.Killed)


def test_enqueue_queues_a_turn_and_returns_at_once(daemon):
    """The prompt without a subscription (``ikictl send --no-wait``): the
    turn's id and the turns ahead of it, nothing streamed to the connection."""
    with connect(daemon) as c:
        agent = c.create(name="lib-enqueue")["agent"]["uuid"]
        long_turn = typed(c.enqueue(agent, "tell me a long story, slowly"), R.Queued)
        queued = typed(c.enqueue(agent, "and then this"), R.Queued)
        assert long_turn["position"] == 0 and queued["position"] == 1
        assert queued["turn"] != long_turn["turn"]
        c.cancel(agent)
        out = typed(c.wait_turn(agent, queued["turn"], timeout=30), R.TurnOutcome)
        assert out["status"] == "completed" and "You said: and then this" in out["reply"]
        assert c.wait_turn(agent, long_turn["turn"])["status"] in ("cancelled", "interrupted")
        assert not c.notifications  # no event came: nothing was subscribed


async def _async_round(path: str, prefix: str) -> list[R.TurnOutcome]:
    """Five agents prompted at once over one AsyncClient connection."""
    async with ikigai.connect_async(path, autostart=False) as c:
        status = await c.status()
        assert status["protocol_version"] == p.PROTOCOL_VERSION
        agents = [(await c.create(name=f"{prefix}-{i}"))["agent"]["uuid"] for i in range(5)]
        turns = [await c.prompt(a, f"question {i}") for i, a in enumerate(agents)]
        texts: dict[str, str] = {}

        async def read(turn) -> None:
            kinds = [ev["event"]["type"] async for ev in turn]
            assert kinds[0] == "turn_started" and kinds[-1] == "turn_ended"
            texts[turn.id] = turn.text

        # anyio's task group: the same code under trio and asyncio
        import anyio

        async with anyio.create_task_group() as tg:
            for t in turns:
                tg.start_soon(read, t)
        outcomes = [await t.wait() for t in turns]
        for t, out in zip(turns, outcomes, strict=True):
            assert out["reply"] == texts[t.id]
        with pytest.raises(ikigai.RpcError):
            await c.show("no-such-agent")
        return [typed(o, R.TurnOutcome) for o in outcomes]


async def test_async_client_under_trio(daemon):
    with trio.fail_after(30):
        outcomes = await _async_round(str(daemon.socket), "lib-trio")
    assert [o["status"] for o in outcomes] == ["completed"] * 5
    assert all(f"question {i}" in o["reply"] for i, o in enumerate(outcomes))


def test_async_client_under_asyncio(daemon):
    outcomes = asyncio.run(asyncio.wait_for(_async_round(str(daemon.socket), "lib-asyncio"), 30))
    assert [o["status"] for o in outcomes] == ["completed"] * 5


async def test_async_client_unreachable(tmp_path: Path):
    with pytest.raises(ikigai.DaemonUnreachable, match="no daemon answers"):
        async with ikigai.connect_async(str(tmp_path / "none.sock"), autostart=False):
            pass


def test_connect_starts_a_daemon_when_none_answers(home: Path, monkeypatch):
    for k in list(os.environ):
        if k.startswith("IKIGAI_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("IKIGAI_HOME", str(home))
    assert not (home / "run" / "ikigai.sock").exists()
    with ikigai.connect() as c:
        assert c.status()["pid"] != os.getpid()
    assert (home / "run" / "ikigai.sock").exists()
