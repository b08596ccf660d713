"""Every acknowledged prompt and mail survives ``kill -9`` of the real daemon.

The real ikigaid process, on a real SQLite file and on the real PostgreSQL
server, is killed with SIGKILL at random points (while prompts are being
acknowledged and queued behind running turns, mid-stream, mid-tool, between
steps, during mail delivery) and started again, at least 20 times per engine.
At the end, with every queue drained:

- every acknowledged prompt and mail is in history exactly once, and an
  unacknowledged one at most once;
- each agent's acknowledged prompts ran in the order they were acknowledged;
- every turn is closed: it completed, or it is marked interrupted;
- no provider request carries the prompt of an interrupted turn, except that
  turn's own requests, and none carries a prompt twice.

The seed is printed; IKIGAI_CRASH_SEED=N replays a run.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import trio

from store import Store
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import Client, connect
from tests.fakes.recorded import RecordedRequest
from tests.fakes.script import Reply, ToolCall
from tests.fakes.server import FakeProvider

KILLS = 20
AGENTS = ("a0", "a1", "a2")


def _user_texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content or [] if b.get("type") == "text"]


def _responder(request: RecordedRequest) -> Reply | None:
    """Anthropic wire: a prompt with TOOL asks for a slow bash call; a tool
    result gets a short answer; anything else a slow streamed answer."""
    messages = (request.json or {}).get("messages") or []
    if not messages:
        return None
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
        return Reply(text="the tool ran", pieces=4, delay=0.02)
    text = " ".join(_user_texts(last))
    if "TOOL" in text:
        return Reply(tool_calls=[ToolCall("bash", {"command": "sleep 0.3; echo ok"})], delay=0.02)
    return Reply(text=f"answer to {text[:40]}", pieces=8, delay=0.04)


async def _try(client: Client, method: str, **params: Any) -> Any | None:
    """The call's result, or None when the daemon died before answering."""
    outcome: list[Any] = []
    async with trio.open_nursery() as nursery:

        async def call() -> None:
            # BrokenResourceError: the daemon died while the request was being sent
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                outcome.append(await client.call(method, **params))
            nursery.cancel_scope.cancel()

        async def closed() -> None:
            await client.closed.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(call)
        nursery.start_soon(closed)
    return outcome[0] if outcome else None


class Ledger:
    """What the daemon acknowledged, and what it was asked and never answered."""

    def __init__(self) -> None:
        self.prompts: dict[str, list[str]] = {a: [] for a in AGENTS}  # acknowledged, in order
        self.mail: list[str] = []
        self.unacknowledged: list[str] = []
        self.n = 0

    def text(self, kind: str, rng: random.Random) -> str:
        self.n += 1
        tool = " TOOL" if kind == "p" and rng.random() < 0.3 else ""
        return f"{kind}{self.n}{tool}"


async def _traffic(client: Client, ledger: Ledger, rng: random.Random) -> None:
    """Prompts and mail until the daemon dies under it."""
    while True:
        agent = rng.choice(AGENTS)
        if rng.random() < 0.2:
            body = ledger.text("m", rng)
            ledger.unacknowledged.append(body)
            if await _try(client, "mail.send", to=agent, text=body) is None:
                return
            ledger.unacknowledged.remove(body)
            ledger.mail.append(body)
        else:
            text = ledger.text("p", rng)
            ledger.unacknowledged.append(text)
            if await _try(client, "agent.prompt", agent=agent, text=text) is None:
                return
            ledger.unacknowledged.remove(text)
            ledger.prompts[agent].append(text)
        await trio.sleep(rng.uniform(0, 0.08))


async def _drained(client: Client) -> None:
    """Until every agent is idle with nothing queued and no unread mail (mail
    left unread by idle agents for 3 s counts as drained: the check names it)."""
    idle_since = None
    while True:
        agents = await client.call("agent.list")
        busy = [a for a in agents if a["state"] != "idle" or a["queued"] or a["current_turn"]]
        unread = 0
        for a in agents:
            unread += len(await client.call("mail.inbox", agent=a["uuid"], unread=True))
        if not busy and not unread:
            return
        if busy:
            idle_since = None
        elif idle_since is None:
            idle_since = trio.current_time()
        elif trio.current_time() - idle_since > 3:
            return
        await trio.sleep(0.2)


async def _kill_and_restart_many(home: Path, fake: FakeProvider, nursery: trio.Nursery, seed: int) -> Ledger:
    rng = random.Random(seed)
    daemon = DaemonProcess(home)
    ledger = Ledger()
    try:
        await daemon.start()
        client = await connect(nursery, str(daemon.socket))
        for name in AGENTS:
            await client.call("agent.create", name=name)
        for _ in range(KILLS):
            with trio.fail_after(60):
                async with trio.open_nursery() as inner:
                    inner.start_soon(_traffic, client, ledger, rng)
                    await trio.sleep(rng.uniform(0.05, 1.2))
                    daemon.signal(signal.SIGKILL)
                    assert await trio.to_thread.run_sync(daemon.wait) == -signal.SIGKILL
                await daemon.restart()
                client = await connect(nursery, str(daemon.socket))
        with trio.fail_after(120):
            await _drained(client)
    finally:
        daemon.stop()
    return ledger


def _check(store: Store, ledger: Ledger, fake: FakeProvider) -> dict[str, int]:
    user_rows: list[tuple[str, Any]] = []
    interrupted_prompts: set[str] = set()
    figures = Counter()
    for record in store.list_agents():
        rows = store.history(record.uuid)
        cut = {r.data["turn_start"] for r in rows if r.kind == "interrupted"}
        users = [r for r in rows if r.kind == "user"]
        user_rows += [(record.name, r) for r in users]
        for i, row in enumerate(rows):
            if row.kind != "user":
                continue
            figures["turns"] += 1
            if row.id in cut:
                figures["interrupted"] += 1
                interrupted_prompts.add(row.content)
                continue
            # closed: an assistant row that stops the turn before the next prompt
            rest = [r for r in rows[i + 1 :] if r.kind in ("user", "assistant")]
            stop = next((r for r in rest if r.kind == "user"), None)
            answers = [r for r in rest[: rest.index(stop) if stop else None] if r.kind == "assistant"]
            assert answers and answers[-1].data["finish_reason"] == "stop", (
                f"the turn of {row.content!r} ({record.name}) is neither completed nor marked interrupted"
            )
        # acknowledged prompts ran in the order they were acknowledged
        ran = [r.content for r in users if not r.content.startswith("[mail")]
        acked = ledger.prompts.get(record.name, [])
        assert [t for t in ran if t in set(acked)] == acked, record.name
    texts = Counter(r.content for _, r in user_rows)
    for agent_prompts in ledger.prompts.values():
        for text in agent_prompts:
            assert texts[text] == 1, f"acknowledged prompt {text!r} is in history {texts[text]} times"
    for body in ledger.mail:
        found = sum(1 for _, r in user_rows if r.content.endswith(f"\n{body}") or f"\n{body}\n" in r.content)
        assert found == 1, f"acknowledged mail {body!r} was delivered {found} times"
    for text in ledger.unacknowledged:
        assert texts[text] <= 1
    for request in fake.requests:
        messages = (request.json or {}).get("messages") or []
        prompts = [
            " ".join(_user_texts(m))
            for m in messages
            if m.get("role") == "user" and _user_texts(m)
        ]
        assert len(prompts) == len(set(prompts)), f"a prompt sent twice in one request: {prompts}"
        # the last prompt is this turn's; every earlier one must be of a turn that was not cut
        earlier = set(prompts[:-1])
        assert not earlier & interrupted_prompts, f"interrupted turns replayed: {earlier & interrupted_prompts}"
    with store.engine.connect() as conn:
        open_turns = conn.exec_driver_sql("SELECT count(*) FROM agents WHERE turn_start IS NOT NULL").scalar()
    assert open_turns == 0
    figures["acknowledged"] = sum(len(v) for v in ledger.prompts.values()) + len(ledger.mail)
    figures["unacknowledged"] = len(ledger.unacknowledged)
    return dict(figures)


async def _run(home: Path, nursery: trio.Nursery, engine: str, **config: Any) -> None:
    seed = int(os.environ.get("IKIGAI_CRASH_SEED", random.randrange(1 << 30)))
    fake = FakeProvider(responder=_responder)
    await nursery.start(fake.serve)
    write_home(home, fake, **config)
    ledger = await _kill_and_restart_many(home, fake, nursery, seed)
    url = config.get("database_url") or f"sqlite:///{home / 'ikigai.db'}"
    with Store(url) as store:
        figures = _check(store, ledger, fake)
    print(f"\ncrash durability ({engine}, seed {seed}): {KILLS} kills, {figures}; lost 0, duplicated 0")
    # the run must have hit the interesting places, or it proves little
    assert figures["interrupted"] >= 1 and figures["acknowledged"] >= KILLS


@pytest.mark.slow
async def test_kill_9_at_random_points_sqlite(daemon_home: Path, nursery: trio.Nursery) -> None:
    await _run(daemon_home, nursery, "sqlite")


@pytest.mark.slow
@pytest.mark.postgres
async def test_kill_9_at_random_points_postgres(daemon_home: Path, nursery: trio.Nursery) -> None:
    from tests.store.conftest import _pg_admin_url, create_pg_database, drop_pg_database

    admin = _pg_admin_url()
    name = f"ikigai_crash_{random.randrange(1 << 30):x}"
    url = create_pg_database(admin, name)
    try:
        await _run(daemon_home, nursery, "postgres", database_url=url)
    finally:
        drop_pg_database(admin, name)
