"""agent.compact and the context of agent.show (issue 16), on the real
ikigaid over its real socket, with the fake provider on loopback."""

from __future__ import annotations

import pytest
import trio

import protocol as p
from store import SUMMARY_PREFIX
from tests.daemon.conftest import write_home
from tests.daemon.rpc import RpcFailure, connect
from tests.daemon.test_results import check
from tests.fakes.script import HttpError, Reply

SUMMARY_MARK = "You compact the history"
SUMMARY = "The user greeted the agent three times and asked about apples."


def is_summary(request) -> bool:
    return SUMMARY_MARK in request.body.decode()


def summaries(fake) -> list:
    return [r for r in fake.requests if is_summary(r)]


def answer_summaries(fake, reply: Reply | None = None) -> None:
    reply = reply or Reply(text=SUMMARY)
    fake.responder = lambda request: reply if is_summary(request) else None


async def talk(c, fake, agent: str, turns: int) -> None:
    for n in range(turns):
        fake.push(Reply(text=f"answer {n}"))
        done = await c.call("agent.prompt", agent=agent, text=f"question {n} about apples", wait=True)
        assert done["status"] == "completed"


async def test_compact_stores_a_summary_the_next_request_starts_with(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="long")
    await talk(c, fake_provider, "long", 3)
    before = await c.call("agent.show", agent="long")
    assert before["context"]["messages"] == 6 and before["context"]["summarized"] is False
    sub = await c.call("agent.subscribe", agent="long")
    answer_summaries(fake_provider)

    res = check("agent.compact", await c.call("agent.compact", agent="long", keep=1))
    assert res["compacted"] is True and res["reason"] == "manual"
    assert res["messages"] == 4  # the two older turns; the newest is kept as it is
    assert res["model"] == "anthropic/claude-sonnet-4-5"
    assert res["usage"]["output_tokens"] > 0 and res["summary_tokens"] > 0
    assert 0 < res["tokens_after"] < res["tokens_before"]
    assert "message" not in res and "error" not in res
    (asked,) = summaries(fake_provider)
    assert "question 0 about apples" in asked.body.decode()
    assert "question 2 about apples" not in asked.body.decode()

    events = await c.events_until(lambda e: e["event"]["type"] == "compaction_done")
    kinds = [e["event"]["type"] for e in events if e["subscription"] == sub["subscription"]]
    assert kinds.index("compaction_started") < kinds.index("compaction_done")
    started = next(e["event"] for e in events if e["event"]["type"] == "compaction_started")
    assert (started["reason"], started["messages"]) == ("manual", 4)

    fake_provider.push(Reply(text="after"))
    await c.call("agent.prompt", agent="long", text="go on", wait=True)
    body = fake_provider.requests[-1].json
    # the summary stands first, as a user message (Anthropic merges the next prompt into it)
    assert body["messages"][0]["role"] == "user"
    assert body["messages"][0]["content"][0]["text"] == SUMMARY_PREFIX + SUMMARY
    sent = str(body["messages"])
    assert "question 2 about apples" in sent and "question 0 about apples" not in sent

    shown = check("agent.show", await c.call("agent.show", agent="long"))
    assert shown["context"]["summarized"] is True and shown["context"]["messages"] == 5
    rows = (await c.call("agent.history", agent="long"))["messages"]
    kinds = [r["kind"] for r in rows]
    assert kinds.count("user") == 4 and "compaction" in kinds  # history keeps everything
    row = rows[kinds.index("compaction")]
    assert row["content"] == SUMMARY
    assert row["data"]["messages"] == 4 and row["data"]["reason"] == "manual"
    assert row["data"]["keep_turns"] == 1 and row["data"]["upto"] < row["id"]


async def test_nothing_to_compact_is_an_answer_not_an_error(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="fresh")
    res = check("agent.compact", await c.call("agent.compact", agent="fresh"))
    assert res["compacted"] is False and res["reason"].startswith("nothing to compact")
    assert "message" not in res and res["messages"] == 0 and res["model"] == ""
    await talk(c, fake_provider, "fresh", 2)
    res = await c.call("agent.compact", agent="fresh", keep=5)
    assert res["compacted"] is False and "the 5 turns to keep" in res["reason"]
    assert fake_provider.requests and not summaries(fake_provider)


@pytest.mark.parametrize(
    ("keep", "says"),
    [
        (-1, "keep: must be an integer from 0 to"),
        ("2", "keep: Expected `int | null`, got `str`"),
        (1.5, "keep: Expected `int | null`, got `float`"),
        (True, "keep: Expected `int | null`, got `bool`"),
        (1 << 60, "keep: must be an integer from 0 to"),
    ],
)
async def test_keep_must_be_a_count(daemon, fake_provider, nursery, keep, says):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="k")
    await talk(c, fake_provider, "k", 2)
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.compact", agent="k", keep=keep)
    assert e.value.code == p.INVALID_PARAMS and says in e.value.error["message"]
    assert not summaries(fake_provider)
    assert "compaction" not in [r["kind"] for r in (await c.call("agent.history", agent="k"))["messages"]]


async def test_busy_unknown_and_dead_agents_are_refused(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="busy")
    await talk(c, fake_provider, "busy", 2)
    await c.call("agent.subscribe", agent="busy")
    fake_provider.push(Reply(text="word " * 40, pieces=40, delay=0.05))
    turn = (await c.call("agent.prompt", agent="busy", text="write a lot"))["turn"]
    await c.events_until(lambda e: e["event"]["type"] == "text_delta")
    with pytest.raises(RpcFailure) as compacting:
        await c.call("agent.compact", agent="busy")
    with pytest.raises(RpcFailure) as clearing:
        await c.call("agent.clear", agent="busy")
    # the same refusal as agent.clear on a busy agent, saying what to do
    assert compacting.value.code == clearing.value.code == p.REFUSED
    assert "running a turn" in compacting.value.error["message"]
    await c.events_until(lambda e: e["turn"] == turn and e["event"]["type"] == "turn_ended")
    assert not summaries(fake_provider)

    with pytest.raises(RpcFailure) as e:
        await c.call("agent.compact", agent="nobody-of-that-name")
    assert e.value.code == p.AGENT_NOT_FOUND
    await c.call("agent.kill", agent="busy")
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.compact", agent="busy")
    assert e.value.code == p.REFUSED and "dead" in e.value.error["message"]
    dead = check("agent.show", await c.call("agent.show", agent="busy"))
    assert dead["context"] is None


async def test_a_failed_summary_answers_why_and_changes_nothing(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="f")
    await talk(c, fake_provider, "f", 3)
    answer_summaries(fake_provider, Reply(fault=HttpError(400, "the summary was refused", "invalid_request_error")))
    res = check("agent.compact", await c.call("agent.compact", agent="f", keep=1))
    assert res["compacted"] is False and "the summary was refused" in res["message"]
    assert res["error"]["http_status"] == 400 and res["error"]["category"] == "invalid_request"
    assert len(summaries(fake_provider)) == 1  # a 400 is not retried
    assert "compaction" not in [r["kind"] for r in (await c.call("agent.history", agent="f"))["messages"]]
    shown = await c.call("agent.show", agent="f")
    assert shown["state"] == "idle" and shown["context"]["summarized"] is False
    fake_provider.push(Reply(text="still here"))
    done = await c.call("agent.prompt", agent="f", text="hello?", wait=True)
    assert done["reply"] == "still here"
    assert "question 0 about apples" in str(fake_provider.requests[-1].json["messages"])


async def test_the_connection_serves_other_requests_while_it_compacts(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="slow")
    await talk(c, fake_provider, "slow", 3)
    answer_summaries(fake_provider, Reply(text=SUMMARY, pieces=20, delay=0.1))  # 2 s
    got: dict = {}

    async def compact() -> None:
        got["res"] = await c.call("agent.compact", agent="slow", keep=1)

    with trio.fail_after(15):
        nursery.start_soon(compact)
        while not summaries(fake_provider):  # noqa: ASYNC110 - waits on the fake's record
            await trio.sleep(0.02)
        status = await c.call("daemon.status")  # the same connection answers meanwhile
        assert status["agents"]["running"] == 1 and "res" not in got
        shown = await c.call("agent.show", agent="slow")
        assert shown["state"] == "compacting" and "res" not in got
        # a prompt sent meanwhile waits behind the compaction
        fake_provider.push(Reply(text="after the summary"))
        done = await c.call("agent.prompt", agent="slow", text="next", wait=True)
        assert got["res"]["compacted"] is True and done["reply"] == "after the summary"
    first = fake_provider.requests[-1].json["messages"][0]["content"]
    assert SUMMARY in str(first)


async def test_show_names_where_the_window_comes_from(daemon, daemon_home, fake_provider, nursery):
    url = fake_provider.base_url
    write_home(
        daemon_home,
        fake_provider,
        providers={
            "anthropic": {
                "base_url": url,
                "models": {"claude-haiku-4-5": {"context_window": 4000, "max_output_tokens": 1000}},
            },
            "openai": {"base_url": f"{url}/v1"},
            "google": {"base_url": f"{url}/v1beta"},
        },
    )
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="cat", model="claude-sonnet-4-5")
    await c.call("agent.create", name="conf", model="claude-haiku-4-5")
    await c.call("agent.create", name="unknown", model="anthropic/claude-private-9")
    cat = (await c.call("agent.show", agent="cat"))["context"]
    conf = (await c.call("agent.show", agent="conf"))["context"]
    unknown = (await c.call("agent.show", agent="unknown"))["context"]
    assert (cat["window_source"], cat["window"]) == ("catalog", 200_000)
    assert (conf["window_source"], conf["window"], conf["max_output"]) == ("config", 4000, 1000)
    assert conf["limit"] == 3000 and conf["compact_at"] == 0.8  # min(0.8 x 4000, 4000 - 1000)
    assert unknown["window_source"] == "default"
    assert cat["tokens"] > 0 and cat["calibrated"] is False and cat["messages"] == 0
    fake_provider.push(Reply(text="hello"))
    await c.call("agent.prompt", agent="cat", text="hi", wait=True)
    cat = (await c.call("agent.show", agent="cat"))["context"]
    assert cat["calibrated"] is True and cat["messages"] == 2
