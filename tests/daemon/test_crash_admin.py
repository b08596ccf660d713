"""What agent.import, agent.rename and agent.remove acknowledge survives
``kill -9`` of the real daemon, and an import cut short by it leaves nothing
half-made: the imported agent is there whole, live after the restart, or not
at all. (Prompts and mail: test_crash_durability.py.)"""

from __future__ import annotations

import functools
import random
import signal

import trio

from store import Store
from tests.daemon.rpc import connect
from tests.daemon.test_crash_durability import _try
from tests.fakes.demo import demo_responder

ROUNDS = 6


def _shape(rows) -> list[tuple]:
    # an imported agent holds its source's rows as its own: kind, text and message
    return [(r.kind, r.content, r.message) for r in rows if r.kind != "fork"]


async def _kill(daemon) -> None:
    daemon.signal(signal.SIGKILL)
    assert await trio.to_thread.run_sync(daemon.wait) == -signal.SIGKILL


async def test_acknowledged_admin_survives_kill_9_and_imports_are_whole(
    daemon, fake_provider, nursery
) -> None:
    fake_provider.responder = demo_responder
    rng = random.Random(int.from_bytes(b"ikigai-19"))
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="src")
    await c.call("agent.prompt", agent="src", text="run a tool please", wait=True)
    await c.call("agent.prompt", agent="src", text="hello", wait=True)
    doc = await c.call("agent.export", agent="src")
    acknowledged: dict[str, str] = {}  # name -> uuid
    cut: list[str] = []  # imports the daemon died under
    renamed: dict[str, str] = {}  # uuid -> its acknowledged new name
    removed: list[str] = []

    for i in range(ROUNDS):
        with trio.fail_after(60):
            created = await _try(c, "agent.import", document=doc, name=f"imp{i}")
            acknowledged[f"imp{i}"] = created["agent"]["uuid"]
            if i % 2:  # acknowledged, then the daemon dies at once
                await c.call("agent.rename", agent=f"imp{i}", name=f"imp{i}-renamed")
                renamed[created["agent"]["uuid"]] = f"imp{i}-renamed"
                await _kill(daemon)
            else:  # the daemon dies while an import is in flight
                async with trio.open_nursery() as inner:
                    cut_short = functools.partial(_try, c, "agent.import", document=doc, name=f"cut{i}")
                    inner.start_soon(cut_short)
                    cut.append(f"cut{i}")
                    await trio.sleep(rng.uniform(0, 0.05))
                    await _kill(daemon)
            await daemon.restart()
            c = await connect(nursery, str(daemon.socket))
            if i == 2:  # remove (with purge) an ended import, then die
                await c.call("agent.kill", agent="imp0")
                assert await c.call("agent.remove", agent="imp0", purge=True)
                removed.append(acknowledged["imp0"])
                await _kill(daemon)
                await daemon.restart()
                c = await connect(nursery, str(daemon.socket))

    listed = {a["uuid"]: a for a in await c.call("agent.list", include_dead=True)}
    with Store(f"sqlite:///{daemon.home / 'ikigai.db'}", upgrade=False) as store:
        src = _shape(store.history(store.resolve("src").uuid))
        for name, uuid in acknowledged.items():
            if uuid in removed:
                # purged whole: nothing referred to it, so its agent row went too
                assert uuid not in listed
                assert uuid not in {r.uuid for r in store.list_agents(include_dead=True)}
                continue
            agent = listed[uuid]
            assert agent["status"] == "running" and agent["state"] == "idle"  # live again
            assert agent["name"] == renamed.get(uuid, name)
            assert _shape(store.history(uuid)) == src
        for name in cut:  # whole or absent: never a part of it
            found = [r for r in store.list_agents(include_dead=True) if r.name.startswith(name)]
            assert all(_shape(store.history(r.uuid)) == src for r in found), name
    # an import the daemon survived goes on from where it was exported
    done = await c.call("agent.prompt", agent="imp1-renamed", text="hi again", wait=True)
    assert done["status"] == "completed"
