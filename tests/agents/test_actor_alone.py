"""An actor runs with what ActorDeps passes it, no supervisor: a real store
file, the fake provider over loopback, and Neighbours of the test's own."""

from __future__ import annotations

import trio

from agents import Actor, ActorDeps, AgentConfig, AsyncStore, ProviderPool, RetryPolicy
from agents.events import TurnEnded
from agents.tools import ToolRegistry
from providers.modelspec import resolve_model
from store import Store
from tests.agents.conftest import fake_settings
from tests.fakes.script import Reply


class Around:
    """The agents around the actor, as a test wants them."""

    def __init__(self, pool: ProviderPool) -> None:
        self.pool = pool
        self.finished: list[str] = []
        self.held: set[str] = set()

    def label_of(self, uuid: str) -> str:
        return f"peer {uuid[-4:]}"

    def awaited_by(self, uuid: str) -> set[str]:
        return self.held

    def turn_finished(self, uuid: str) -> None:
        self.finished.append(uuid)

    def resolve_model(self, text, *, current_thinking="none"):
        return resolve_model(text, catalog=self.pool.catalog, current_thinking=current_thinking)


async def test_a_turn_with_no_supervisor(nursery, fake_provider, tmp_path) -> None:
    with Store(f"sqlite:///{tmp_path / 'ikigai.db'}") as store:
        record = store.create_agent("solo", provider="anthropic", model="claude-sonnet-4-5")
        pool = ProviderPool(settings=fake_settings(fake_provider))
        around = Around(pool)
        deps = ActorDeps(
            db=AsyncStore(store),
            pool=pool,
            tools=ToolRegistry(),
            config=AgentConfig(retry=RetryPolicy(base_delay=0.01, jitter=0.0)),
            neighbours=around,
        )
        actor = Actor(record, deps)
        await nursery.start(actor.run)
        sub = actor.log.subscribe(from_seq=1)
        fake_provider.push(Reply(text="alone and fine"))
        turn, position = await actor.submit("hello")
        assert position == 0
        with trio.fail_after(10):
            result = await actor.wait_turn(turn)
        assert result is not None and result.status == "completed" and result.reply == "alone and fine"
        assert around.finished == [record.uuid]
        ended = []
        with trio.fail_after(5):
            async for entry in sub:
                if isinstance(entry.event, TurnEnded):
                    ended.append(entry.event)
                    break
        assert ended[0].status == "completed"
        kinds = [r.kind for r in store.history(record.uuid)]
        assert kinds == ["user", "assistant"]
        assert store.open_turns() == [] and store.queued_prompts() == []
        # mail from a sender the test says is held for a wait is left for it
        peer = store.create_agent("peer", provider="anthropic", model="claude-sonnet-4-5")
        store.send_mail(record.uuid, "for the wait", from_uuid=peer.uuid)
        around.held = {peer.uuid}
        actor.notify_mail()
        await trio.sleep(0.2)
        assert [m.body for m in store.inbox(record.uuid)] == ["for the wait"]
        await pool.aclose()
