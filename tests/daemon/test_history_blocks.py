"""agent.history with ``blocks`` (issue 19): each row's message as blocks,
identical to what the store holds; signatures only when asked; turns and how
they ended; inherited and compacted rows. The pure pass over the lineage is
tested on its own first, then the real ikigaid over its socket."""

from __future__ import annotations

import json

import msgspec
import pytest
import trio

import protocol as p
from daemon.methods.blocks import block, image_info, lineage_facts
from providers.types import ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock
from store import Store
from tests.daemon.rpc import RpcFailure, connect, turn_ended
from tests.daemon.test_results import check
from tests.fakes.demo import demo_responder, last_turn
from tests.fakes.script import HttpError, Reply

# ---------------------------------------------------------------- the pass, pure


def _user(rid: int, turn: str, agent: str = "a") -> tuple:
    return (rid, agent, "user", {"turn": turn})


def test_turns_and_how_they_ended() -> None:
    rows = [
        (1, "a", "system", None),  # before the first turn: none
        _user(2, "t1"),
        (3, "a", "assistant", None),
        (4, "a", "tool_call", None),
        (5, "a", "tool_result", None),
        (6, "a", "assistant", None),  # last message row: no tool calls -> completed
        _user(7, "t2"),
        (8, "a", "assistant", None),
        (9, "a", "interrupted", {"turn_start": 7}),
        _user(10, "t3"),
        (11, "a", "assistant", None),
        (12, "a", "tool_call", None),  # ended on calls (tool limit, daemon death): incomplete
        (13, "a", "model_switch", {"from": {}, "to": {}}),
        _user(14, "t4"),  # ended in an error before any answer: incomplete
        _user(15, "t5"),
        (16, "a", "assistant", None),
    ]
    facts = lineage_facts(rows, running="t5")
    assert facts[1].turn is None and facts[1].turn_status is None
    assert {facts[i].turn_status for i in range(2, 7)} == {"completed"}
    assert [facts[i].turn_status for i in (7, 8, 9)] == ["interrupted"] * 3
    assert [facts[i].turn for i in (10, 11, 12, 13)] == ["t3"] * 4
    assert facts[13].turn_status == "incomplete" and facts[14].turn_status == "incomplete"
    assert facts[16].turn_status == "running"
    # the same turn not running any more: its last row is an answer
    assert lineage_facts(rows)[16].turn_status == "completed"


def test_a_user_row_without_a_turn_id_does_not_start_one() -> None:
    rows = [
        _user(1, "t1"),
        (2, "a", "assistant", None),
        (3, "a", "user", {}),
        (4, "a", "tool_result", None),
    ]
    facts = lineage_facts(rows)
    assert facts[3].turn == "t1" and facts[1].turn_status == "incomplete"


def test_compacted_rows_and_the_model_asked() -> None:
    rows = [
        _user(1, "t1", "p"),
        (2, "p", "assistant", None),
        (3, "c", "fork", None),
        _user(4, "t2", "c"),
        (5, "c", "assistant", None),
        (6, "c", "compaction", {"upto": 4}),
        (
            7,
            "c",
            "model_switch",
            {"from": {"provider": "x", "model": "m1"}, "to": {"provider": "y", "model": "m2"}},
        ),
        (8, "c", "assistant", None),
    ]
    facts = lineage_facts(rows, models_now={"c": ("y", "m2"), "p": ("z", "now")})
    assert [facts[i].compacted for i in range(1, 9)] == [True] * 4 + [False] * 4
    assert facts[5].requested == ("x", "m1")  # before its first switch: the switch's "from"
    assert facts[8].requested == ("y", "m2")
    assert facts[2].requested == ("z", "now")  # no switch seen: its model now


def test_blocks_never_carry_image_data_or_unasked_signatures() -> None:
    data = "aGVsbG8gd29ybGQ="  # "hello world": 11 bytes
    assert image_info(ImageBlock(media_type="image/png", data=data)) == {
        "media_type": "image/png",
        "bytes": 11,
        "url": None,
    }
    assert image_info(ImageBlock(media_type="image/png", url="https://x/y.png"))["bytes"] is None
    result = block(
        ToolResultBlock(
            tool_call_id="c1", content="ok", images=[ImageBlock(media_type="image/png", data=data)]
        ),
        False,
    )
    assert data not in json.dumps(result) and result["images"][0]["bytes"] == 11
    for b in (
        TextBlock(text="t", signature="SIG"),
        ThinkingBlock(text="th", signature="SIG"),
        ToolCallBlock(id="1", name="bash", arguments={}, signature="SIG"),
    ):
        hidden, shown = block(b, False), block(b, True)
        assert (
            "signature" not in hidden
            and hidden["signed"] is True
            and "SIG" not in json.dumps(hidden)
        )
        assert shown["signature"] == "SIG" and shown["signed"] is True
    redacted = block(ThinkingBlock(redacted=True, signature="OPAQUE"), False)
    assert redacted == {"type": "thinking", "text": "", "redacted": True, "signed": True}


# ---------------------------------------------------------------- the real daemon


def _responder(request):
    prompt, tool_text, _size = last_turn(request.json)
    if tool_text is None and prompt.rstrip().endswith("please fail now"):
        return Reply(fault=HttpError(400, "scripted refusal"))
    return demo_responder(request)


def _stored(daemon, uuid: str) -> list:
    with Store(f"sqlite:///{daemon.home / 'ikigai.db'}", upgrade=False) as store:
        return store.history(uuid)


def _same_blocks(shown: list[dict], stored, signatures: bool) -> None:
    """The history blocks say what the stored message holds, key for key."""
    want = msgspec.to_builtins(stored.content) if stored is not None else []
    assert len(shown) == len(want)
    for h, d in zip(shown, want, strict=True):
        assert h["type"] == d["type"]
        for key, value in d.items():
            if key in ("type", "provider", "provider_data", "raw_arguments"):
                continue
            if key == "signature":
                assert h["signed"] is True
                assert (h["signature"] == value) if signatures else ("signature" not in h)
            elif key == "images":
                assert [i["media_type"] for i in h["images"]] == [i["media_type"] for i in value]
            else:
                assert h[key] == value, (key, h, d)
        if h["type"] in ("text", "thinking", "tool_call") and "signature" not in d:
            assert h["signed"] is False


async def _tool_turn(c) -> str:
    created = await c.call("agent.create", name="tools", model="claude-sonnet-4-5/med")
    done = await c.call("agent.prompt", agent="tools", text="run a tool please", wait=True)
    assert done["status"] == "completed", done
    return created["agent"]["uuid"]


async def test_blocks_of_a_tool_turn_with_thinking_are_what_is_stored(
    daemon, fake_provider, nursery
) -> None:
    fake_provider.responder = _responder
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = await _tool_turn(c)
    stored = {r.id: r for r in _stored(daemon, uuid)}
    for signatures in (False, True):
        res = check(
            "agent.history",
            await c.call("agent.history", agent="tools", blocks=True, signatures=signatures),
        )
        rows = res["messages"]
        assert [r["id"] for r in rows] == list(stored)
        for row in rows:
            _same_blocks(row["blocks"], stored[row["id"]].message, signatures)
            assert row["inherited"] is False and row["compacted"] is False
        kinds = [r["kind"] for r in rows]
        assert kinds == ["user", "assistant", "tool_call", "permission", "tool_result", "assistant"]
        first, final = rows[1], rows[5]
        assert [b["type"] for b in first["blocks"]] == ["thinking", "text", "tool_call"]
        assert first["blocks"][0]["signed"] is True and first["blocks"][0]["text"]
        assert first["blocks"][2]["arguments"] == {"command": "echo hello from a tool"}
        assert rows[4]["blocks"][0]["content"].strip() == "hello from a tool"
        assert rows[3]["blocks"] == [] and rows[3]["role"] is None
        assert rows[4]["role"] == "tool" and rows[0]["role"] == "user" and rows[2]["role"] is None
        for a in (first, final):
            assert (a["provider"], a["model"], a["thinking_level"]) == (
                "anthropic",
                "claude-sonnet-4-5",
                "med",
            )
            assert a["usage"]["output_tokens"] > 0 and a["cost_usd"] > 0
        assert first["finish_reason"] == "tool_use" and final["finish_reason"] == "stop"
        assert (
            rows[0]["usage"] is None and rows[0]["provider"] is None and rows[0]["cost_usd"] is None
        )
        turn = rows[0]["data"]["turn"]
        assert {(r["turn"], r["turn_status"]) for r in rows} == {(turn, "completed")}
        text = json.dumps(res)
        signature = stored[first["id"]].message.content[0].signature
        assert signature and (signature in text) is signatures
    plain = (await c.call("agent.history", agent="tools"))["messages"]
    assert all(set(r) == {"id", "agent", "kind", "content", "data", "created_at"} for r in plain)


async def test_turn_status_interrupted_incomplete_running_and_pages(
    daemon, fake_provider, nursery
) -> None:
    fake_provider.responder = _responder
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="st")
    failed = await c.call("agent.prompt", agent="st", text="please fail now")
    sub = await c.call("agent.subscribe", agent="st", from_seq=1)
    await c.events_until(turn_ended(failed["turn"]))
    long = await c.call("agent.prompt", agent="st", text="tell me a long story")
    rows: list[dict] = []
    with trio.fail_after(10):
        while not any(r["turn"] == long["turn"] for r in rows):  # its user row is stored
            await trio.sleep(0.05)
            rows = (await c.call("agent.history", agent="st", blocks=True))["messages"]
    running = [r for r in rows if r["turn"] == long["turn"]]
    assert running and {r["turn_status"] for r in running} == {"running"}
    await c.call("agent.cancel", agent="st")
    await c.events_until(turn_ended(long["turn"]))
    await c.call("agent.prompt", agent="st", text="hi", wait=True)
    await c.call("agent.unsubscribe", subscription=sub["subscription"])
    rows = (await c.call("agent.history", agent="st", blocks=True))["messages"]
    status = {r["turn"]: r["turn_status"] for r in rows if r["turn"]}
    assert list(status.values()) == ["incomplete", "interrupted", "completed"]
    assert status[failed["turn"]] == "incomplete" and status[long["turn"]] == "interrupted"
    # a page without its turn's user row still knows the turn and how it ended
    last = check("agent.history", await c.call("agent.history", agent="st", blocks=True, limit=1))
    assert last["more"] is True and last["messages"][0]["kind"] == "assistant"
    assert (
        last["messages"][0]["turn_status"] == "completed"
        and last["messages"][0]["turn"] == rows[-1]["turn"]
    )
    older = await c.call(
        "agent.history", agent="st", blocks=True, limit=2, before=last["messages"][0]["id"]
    )
    assert [r["id"] for r in older["messages"]] == [r["id"] for r in rows[-3:-1]]
    assert [r["turn_status"] for r in older["messages"]] == [r["turn_status"] for r in rows[-3:-1]]


async def test_a_forks_inherited_rows_are_flagged(daemon, fake_provider, nursery) -> None:
    fake_provider.responder = _responder
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    parent = await _tool_turn(c)
    child = await c.call("agent.fork", agent="tools", name="kid")
    await c.call("agent.prompt", agent="kid", text="hi", wait=True)
    rows = (await c.call("agent.history", agent="kid", blocks=True))["messages"]
    mine = child["agent"]["uuid"]
    assert {r["inherited"] for r in rows if r["agent"] == parent} == {True}
    assert {r["inherited"] for r in rows if r["agent"] == mine} == {False}
    assert [r["kind"] for r in rows if not r["inherited"]] == ["fork", "user", "assistant"]
    # the inherited turn keeps its status
    assert {r["turn_status"] for r in rows if r["inherited"]} == {"completed"}


async def test_compacted_rows_are_flagged(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="cmp")
    for n in range(3):
        fake_provider.push(Reply(text=f"answer {n}"))
        await c.call("agent.prompt", agent="cmp", text=f"question {n}", wait=True)
    fake_provider.push(Reply(text="the summary"))
    assert (await c.call("agent.compact", agent="cmp", keep=1))["compacted"] is True
    rows = (await c.call("agent.history", agent="cmp", blocks=True))["messages"]
    upto = next(r["data"]["upto"] for r in rows if r["kind"] == "compaction")
    assert [r["compacted"] for r in rows] == [r["id"] <= upto for r in rows]
    assert sum(r["compacted"] for r in rows) == 4
    summary = next(r for r in rows if r["kind"] == "compaction")
    assert summary["role"] == "user" and "the summary" in summary["blocks"][0]["text"]


@pytest.mark.parametrize("bad", [{"blocks": "yes"}, {"signatures": 1}])
async def test_blocks_flags_are_booleans(daemon, fake_provider, nursery, bad) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="b")
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.history", agent="b", **bad)
    assert e.value.code == p.INVALID_PARAMS and next(iter(bad)) in e.value.error["message"]
