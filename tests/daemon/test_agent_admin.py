"""Managing agents from scripts (issue 19), on the real ikigaid over its
socket with the fake provider: agent.wait, agent.rename, agent.remove,
agent.prune, agent.export and agent.import, last_active_at and the
protocol version in daemon.status."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import trio

import protocol as p
from store import Store
from tests.daemon.conftest import write_home
from tests.daemon.rpc import RpcFailure, connect, turn_ended
from tests.daemon.test_results import check
from tests.fakes.demo import demo_responder

MED = "claude-sonnet-4-5/med"


async def _failure(call, code: int) -> dict:
    with pytest.raises(RpcFailure) as e:
        await call
    assert e.value.code == code, e.value.error
    return e.value.error


def _db(daemon) -> Store:
    return Store(f"sqlite:///{daemon.home / 'ikigai.db'}", upgrade=False)


async def _streaming(c, agent: str, text: str) -> str:
    """Prompt and return the turn once its answer is streaming."""
    sub = await c.call("agent.subscribe", agent=agent)
    turn = (await c.call("agent.prompt", agent=agent, text=text))["turn"]
    await c.events_until(lambda e: e["turn"] == turn and e["event"]["type"] == "text_delta")
    await c.call("agent.unsubscribe", subscription=sub["subscription"])
    return turn


async def test_status_has_the_protocol_version(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    status = check("daemon.status", await c.call("daemon.status"))
    assert status["protocol_version"] == p.PROTOCOL_VERSION == 2


# ---------------------------------------------------------------- agent.wait


async def test_wait_for_a_running_a_finished_and_an_unknown_turn(
    daemon, fake_provider, nursery
) -> None:
    fake_provider.responder = demo_responder
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="w")
    done = await c.call("agent.prompt", agent="w", text="hi", wait=True)
    again = check("agent.wait", await c.call("agent.wait", agent="w", turn=done["turn"]))
    assert again == done  # a finished turn: its kept outcome, at once

    turn = await _streaming(c, "w", "tell me a long story")
    got: list[dict] = []

    async def waiter() -> None:
        got.append(await c.call("agent.wait", agent="w", turn=turn))

    async with trio.open_nursery() as inner:
        inner.start_soon(waiter)
        await trio.sleep(0.3)
        assert not got  # it waits for the end of the turn...
        status = await c.call("daemon.status")  # ...and the connection is served meanwhile
        assert status["agents"]["running"] == 1
        assert (await c.call("agent.cancel", agent="w"))["cancelled"] is True
    assert got[0]["turn"] == turn and got[0]["status"] == "interrupted"

    error = await _failure(c.call("agent.wait", agent="w", turn="nope-123"), p.REFUSED)
    assert "no turn 'nope-123' on agent w" in error["message"]
    assert "the last 64 turns" in error["message"] and "agent.history" in error["message"]
    await c.call("agent.kill", agent="w")
    error = await _failure(c.call("agent.wait", agent="w", turn=turn), p.REFUSED)
    assert "is dead" in error["message"]


# ---------------------------------------------------------------- agent.rename


async def test_rename(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    a = (await c.call("agent.create", name="old"))["agent"]
    await c.call("agent.create", name="other")
    info = check("agent.rename", await c.call("agent.rename", agent="old", name="new"))
    assert info["name"] == "new" and info["uuid"] == a["uuid"] and info["status"] == "running"
    assert (await c.call("agent.show", agent="new"))["uuid"] == a["uuid"]
    await _failure(c.call("agent.show", agent="old"), p.AGENT_NOT_FOUND)
    error = await _failure(c.call("agent.rename", agent="new", name="other"), p.REFUSED)
    assert "'other' is taken" in error["message"]
    error = await _failure(c.call("agent.rename", agent="new", name="two words"), p.REFUSED)
    assert "no spaces" in error["message"]
    await _failure(c.call("agent.rename", agent="new", name="x\x00y"), p.INVALID_PARAMS)
    # a dead agent may be renamed, even to a live agent's name (dead ones share names)
    await c.call("agent.kill", agent="new")
    dead = await c.call("agent.rename", agent=a["uuid"], name="other")
    assert dead["name"] == "other" and dead["status"] == "dead"
    assert (await c.call("agent.show", agent="other"))["status"] == "running"  # the live one first


# ---------------------------------------------------------------- remove, prune


async def test_remove_refuses_a_live_agent_unless_forced(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    parent = (await c.call("agent.create", name="par"))["agent"]["uuid"]
    child = (await c.call("agent.fork", agent="par", name="chi"))["agent"]["uuid"]
    error = await _failure(c.call("agent.remove", agent="par"), p.REFUSED)
    assert error["message"] == f"agent par ({parent}) is running: kill it first, or remove it with force: true (ikictl rm --force)"
    assert {a["name"] for a in await c.call("agent.list")} == {"par", "chi"}

    removed = check("agent.remove", await c.call("agent.remove", agent="par", force=True))
    assert removed == {"removed": [parent, child], "purged_rows": 0}
    assert await c.call("agent.list", include_dead=True) == []
    assert (await c.call("daemon.status"))["agents"]["running"] == 0
    await _failure(c.call("agent.show", agent="par"), p.AGENT_NOT_FOUND)  # not by name...
    shown = await c.call("agent.show", agent=parent[:13])  # ...by its id or a prefix, yes
    assert shown["status"] == "dead" and shown["name"] == "par"
    assert [r["kind"] for r in (await c.call("agent.history", agent=parent))["messages"]] == [
        "agent_killed"
    ]
    # a new agent may take the name; the removed one's usage stays in the all-agents report
    await c.call("agent.create", name="par")
    assert (await c.call("agent.usage"))["agents"] == 3


async def test_prune_dry_run_then_for_real_with_purge(daemon, fake_provider, nursery) -> None:
    fake_provider.responder = demo_responder
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuids = {}
    for name in ("d1", "d2", "live"):
        uuids[name] = (await c.call("agent.create", name=name))["agent"]["uuid"]
        await c.call("agent.prompt", agent=name, text="hi", wait=True)
    await c.call("agent.kill", agent="d1")
    await c.call("agent.kill", agent="d2")
    dry = check("agent.prune", await c.call("agent.prune", dry_run=True))
    assert dry == {"removed": [uuids["d1"], uuids["d2"]], "purged_rows": 0}
    assert len(await c.call("agent.list", include_dead=True)) == 3
    real = check("agent.prune", await c.call("agent.prune", purge=True))
    assert real["removed"] == dry["removed"]
    assert real["purged_rows"] == 2 * 3  # user, assistant, agent_killed each; nothing reads them
    assert [a["name"] for a in await c.call("agent.list", include_dead=True)] == ["live"]
    await _failure(c.call("agent.show", agent=uuids["d1"]), p.AGENT_NOT_FOUND)  # wholly gone
    assert await c.call("agent.prune") == {"removed": [], "purged_rows": 0}
    with _db(daemon) as store:
        assert [r.kind for r in store.history(uuids["live"])] == ["user", "assistant"]


async def test_purging_a_parent_keeps_what_a_live_fork_reads(
    daemon, fake_provider, nursery
) -> None:
    fake_provider.responder = demo_responder
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    parent = (await c.call("agent.create", name="p", model=MED))["agent"]["uuid"]
    await c.call("agent.prompt", agent="p", text="run a tool please", wait=True)
    await c.call("agent.kill", agent="p")
    rows = (await c.call("agent.history", agent=parent))["messages"]
    answer = [r["id"] for r in rows if r["kind"] == "assistant"][-1]
    child = (await c.call("agent.fork", agent=parent, name="kid", at=answer))["agent"]["uuid"]
    await c.call("agent.prompt", agent="kid", text="hi", wait=True)
    with _db(daemon) as store:
        before = (store.history(child), store.replay(child))
    removed = await c.call("agent.remove", agent=parent, purge=True)
    assert removed == {"removed": [parent], "purged_rows": 1}  # its agent_killed row alone
    with _db(daemon) as store:
        assert (store.history(child), store.replay(child)) == before
    done = await c.call("agent.prompt", agent="kid", text="hi again", wait=True)
    assert done["status"] == "completed"


# ---------------------------------------------------------------- last_active_at


async def test_last_active_at(daemon, fake_provider, nursery) -> None:
    fake_provider.responder = demo_responder
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="first")
    await c.call("agent.create", name="second")
    await c.call("agent.prompt", agent="first", text="hi", wait=True)
    rows = {a["name"]: a for a in check("agent.list", await c.call("agent.list"))}
    assert rows["first"]["last_active_at"] > rows["second"]["last_active_at"]
    assert rows["second"]["last_active_at"] == rows["second"]["created_at"]  # no rows yet
    shown = check("agent.show", await c.call("agent.show", agent="first"))
    assert shown["last_active_at"] == rows["first"]["last_active_at"]
    history = (await c.call("agent.history", agent="first"))["messages"]
    assert shown["last_active_at"] == history[-1]["created_at"]


# ---------------------------------------------------------------- export, import


async def _rich_agent(c) -> str:
    """A fork whose lineage holds thinking with signatures, a tool call, an
    interrupted turn, a mark and a rewind, and a compaction."""
    await c.call("agent.create", name="orig", model=MED)
    await c.call("agent.prompt", agent="orig", text="run a tool please", wait=True)
    long = await _streaming(c, "orig", "tell me a long story")
    sub = await c.call("agent.subscribe", agent="orig", from_seq=1)
    await c.call("agent.cancel", agent="orig")
    await c.events_until(turn_ended(long))
    await c.call("agent.unsubscribe", subscription=sub["subscription"])
    await c.call("agent.prompt", agent="orig", text="hi", wait=True)
    await c.call("agent.mark", agent="orig", label="m1")
    await c.call("agent.prompt", agent="orig", text="hello there", wait=True)
    await c.call("agent.rewind", agent="orig", label="m1")
    await c.call("agent.prompt", agent="orig", text="what is ikigai", wait=True)
    assert (await c.call("agent.compact", agent="orig", keep=1))["compacted"] is True
    await c.call("agent.prompt", agent="orig", text="hi again", wait=True)
    kid = await c.call("agent.fork", agent="orig", name="kid")
    await c.call("agent.prompt", agent="kid", text="hi kid", wait=True)
    return kid["agent"]["uuid"]


async def _round_trip(c, store: Store) -> None:
    kid = await _rich_agent(c)
    doc = check("agent.export", await c.call("agent.export", agent="kid"))
    assert doc["format"] == "ikigai-agent" and doc["version"] == 1
    assert doc["agent"]["uuid"] == kid and doc["agent"]["thinking_level"] == "med"
    kinds = [m["kind"] for m in doc["messages"]]
    for kind in ("interrupted", "mark", "rewind", "compaction", "tool_call", "fork"):
        assert kind in kinds
    assert {m["agent"] for m in doc["messages"]} == {
        kid,
        doc["agent"]["parent"],
    }  # inherited rows too
    created = check("agent.import", await c.call("agent.import", document=doc))
    new = created["agent"]
    assert created["turn"] is None and new["status"] == "running"
    assert new["name"].startswith("kid-") and new["parent"] is None  # "kid" is taken: a suffix
    assert (new["model"], new["thinking_level"]) == ("claude-sonnet-4-5", "med")
    assert created["model"]["warnings"] == []
    assert store.replay(new["uuid"]) == store.replay(kid)
    mine = store.history(new["uuid"])
    assert {r.agent_uuid for r in mine} == {new["uuid"]}
    assert [r.kind for r in mine] == [k for k in kinds if k != "fork"]
    assert [r.content for r in mine] == [
        m["content"] for m in doc["messages"] if m["kind"] != "fork"
    ]
    # the new agent runs on from there
    done = await c.call("agent.prompt", agent=new["uuid"], text="hi imported", wait=True)
    assert done["status"] == "completed"
    # without signatures: no signature anywhere in the document
    bare = await c.call("agent.export", agent="kid", signatures=False)
    signed = [
        b
        for m in doc["messages"]
        if m["message"]
        for b in m["message"]["content"]
        if "signature" in b
    ]
    assert signed and all(
        "signature" not in b
        for m in bare["messages"]
        if m["message"]
        for b in m["message"]["content"]
    )
    again = await c.call("agent.import", document=bare, name="unsigned")
    assert again["agent"]["name"] == "unsigned"


async def test_export_import_round_trip_sqlite(daemon, fake_provider, nursery) -> None:
    fake_provider.responder = demo_responder
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    with _db(daemon) as store:
        await _round_trip(c, store)


@pytest.mark.postgres
async def test_export_import_round_trip_postgres(daemon_home: Path, fake_provider, nursery) -> None:
    from tests.daemon.conftest import DaemonProcess
    from tests.store.conftest import _pg_admin_url, create_pg_database, drop_pg_database

    admin = _pg_admin_url()
    name = f"ikigai_export_{random.randrange(1 << 30):x}"
    url = create_pg_database(admin, name)
    fake_provider.responder = demo_responder
    write_home(daemon_home, fake_provider, database_url=url)
    d = DaemonProcess(daemon_home)
    try:
        await d.start()
        c = await connect(nursery, str(d.socket))
        with Store(url, upgrade=False) as store:
            await _round_trip(c, store)
    finally:
        d.stop()
        drop_pg_database(admin, name)


async def test_import_errors_name_the_field(daemon, fake_provider, nursery, tmp_path: Path) -> None:
    fake_provider.responder = demo_responder
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="src")
    await c.call("agent.prompt", agent="src", text="hi", wait=True)
    doc = await c.call("agent.export", agent="src")

    async def refused(document: dict, says: str, code: int = p.INVALID_PARAMS, **extra) -> None:
        error = await _failure(c.call("agent.import", document=document, **extra), code)
        assert says in error["message"], error["message"]

    await refused({**doc, "format": "other"}, "document.format: must be 'ikigai-agent'")
    await refused(
        {**doc, "version": 2}, "document.version: 2 is not a version this daemon reads (1)"
    )
    rows = [dict(m) for m in doc["messages"]]
    rows[1]["kind"] = "bogus"
    await refused({**doc, "messages": rows}, "document.messages[1].kind: unknown kind 'bogus'")
    rows = [dict(m) for m in doc["messages"]]
    rows[1]["message"] = {"role": "assistant", "content": [{"type": "nope"}]}
    await refused({**doc, "messages": rows}, "document.messages[1].message.content[0]")
    rows = [dict(m) for m in doc["messages"]]
    rows[0]["message"] = None
    await refused(
        {**doc, "messages": rows},
        "document.messages[0].message: a user row needs a 'user'-role message",
    )
    rows = [dict(m) for m in doc["messages"]]
    rows[1]["id"] = rows[0]["id"]
    await refused({**doc, "messages": rows}, "document.messages[1].id")
    interrupted = {
        **rows[0],
        "id": 10**9,
        "kind": "interrupted",
        "message": None,
        "data": {"turn_start": 5},
    }
    await refused(
        {**doc, "messages": [*doc["messages"], interrupted]},
        "document.messages[2].data.turn_start: 5 is not the id",
    )
    await refused(
        {**doc, "agent": {**doc["agent"], "extra": 1}},
        "document.agent: Object contains unknown field `extra`",
    )
    await refused(
        {**doc, "agent": {**doc["agent"], "provider": "nowhere"}},
        "document.agent.provider: unknown provider",
    )
    await refused(doc, "the name 'src' is taken", p.REFUSED, name="src")
    assert [a["name"] for a in await c.call("agent.list")] == ["src"]  # nothing was made
    # a folder that is not there: the daemon's, with a warning
    moved = await c.call(
        "agent.import",
        document={**doc, "agent": {**doc["agent"], "cwd": str(tmp_path / "gone")}},
        name="moved",
    )
    assert any("is not an existing folder" in w for w in moved["model"]["warnings"])
    assert moved["agent"]["cwd"] != str(tmp_path / "gone")


# ---------------------------------------------------------------- hostile documents


def _paths(value, at=()):
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*at, i))


def _replaced(doc, path, new):
    if not path:
        return new
    head, *rest = path
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[head] = _replaced(doc[head], tuple(rest), new)
    return copy


def _dropped(doc, path):
    head, *rest = path
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    if rest:
        copy[head] = _dropped(doc[head], tuple(rest))
    elif isinstance(copy, dict):
        del copy[head]
    else:
        copy.pop(head)
    return copy


def test_hostile_documents_get_a_clear_error_and_the_daemon_goes_on() -> None:
    import tempfile
    import time

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.daemon.test_fuzz_protocol import Conn, _start
    from tests.fakes.script import Reply
    from tests.fakes.server import ThreadedFakeProvider

    json_values = st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=12,
    )
    home = Path(tempfile.mkdtemp(prefix="ikh-", dir="/tmp"))
    with ThreadedFakeProvider(default=Reply(text="ok")) as fake:
        write_home(home, fake)
        d = _start(home)
        try:
            conn = Conn(d.socket)
            assert "result" in conn.call("agent.create", {"name": "src"})
            assert "result" in conn.call(
                "agent.prompt", {"agent": "src", "text": "hi", "wait": True}
            )
            conn.call("agent.mark", {"agent": "src", "label": "m"})
            conn.call("agent.rewind", {"agent": "src", "label": "m"})
            doc = conn.call("agent.export", {"agent": "src"})["result"]
            paths = list(_paths(doc))[1:]
            seen = {"ok": 0, "refused": 0}
            messages: set[str] = set()
            started = time.monotonic()

            @st.composite
            def documents(draw):
                how = draw(st.sampled_from(["replace", "drop", "random"]))
                if how == "random":
                    return draw(st.dictionaries(st.text(max_size=10), json_values, max_size=6))
                path = draw(st.sampled_from(paths))
                if how == "drop":
                    return _dropped(doc, path)
                return _replaced(doc, path, draw(json_values))

            @settings(
                max_examples=300,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(documents(), st.sampled_from([None, "imp"]))
            def one(document, name) -> None:
                if time.monotonic() - started > 60:
                    return
                params = (
                    {"document": document}
                    if name is None
                    else {"document": document, "name": f"{name}-{seen['ok']}"}
                )
                answer = conn.call("agent.import", params)
                assert d.proc.poll() is None, "the daemon died"
                if "result" in answer:
                    seen["ok"] += 1
                    check("agent.import", answer["result"])
                    return
                seen["refused"] += 1
                error = answer["error"]
                assert error["code"] == p.INVALID_PARAMS, error
                assert error["message"].startswith("invalid params for agent.import: "), error
                assert len(error["message"]) < 1000
                messages.add(error["message"][:150])

            one()
            print(f"\nhostile imports: {seen}", *sorted(messages)[:40], sep="\n")
            assert seen["refused"] > 50, seen
            assert conn.call("daemon.status")["result"]["pid"] == d.proc.pid
        finally:
            d.stop()
