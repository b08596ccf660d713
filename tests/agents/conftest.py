from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from agents import AgentConfig, AsyncStore, ProviderPool, RetryPolicy, Supervisor
from agents.events import LogEntry, TurnEnded
from agents.permissions import Permissions
from agents.tools import ToolRegistry
from providers.catalog import Catalog
from providers.settings import settings_for
from store import Store
from tests.fakes.server import FakeProvider

KEYS = {"ANTHROPIC_API_KEY": "test-anthropic-key", "OPENAI_API_KEY": "test-openai-key", "GEMINI_API_KEY": "test-gemini-key"}


def fake_settings(fake: FakeProvider, env: dict[str, str] | None = None, read_timeout: float = 5.0):
    bases = {"anthropic": fake.base_url, "openai": f"{fake.base_url}/v1", "google": f"{fake.base_url}/v1beta"}

    def settings(name: str):
        return settings_for(
            name,
            env=KEYS if env is None else env,
            base_url=bases.get(name, f"{fake.base_url}/v1"),
            read_timeout=read_timeout,
            connect_timeout=2.0,
        )

    return settings


class Harness:
    """A supervisor on a real SQLite file, talking to the fake provider over loopback."""

    def __init__(self, nursery: trio.Nursery, fake: FakeProvider, db_path: Path) -> None:
        self.nursery = nursery
        self.fake = fake
        self.db_path = db_path
        self.store: Store | None = None
        self.sup: Supervisor | None = None
        self._scope: trio.CancelScope | None = None

    async def start(
        self,
        *,
        tools: ToolRegistry | None = None,
        config: AgentConfig | None = None,
        env: dict[str, str] | None = None,
        read_timeout: float = 5.0,
        permissions: Permissions | None = None,
        catalog: Catalog | None = None,
        mcp: object | None = None,
    ) -> Supervisor:
        self.store = Store(f"sqlite:///{self.db_path}")
        pool = ProviderPool(catalog=catalog, settings=fake_settings(self.fake, env, read_timeout))
        config = config or AgentConfig(retry=RetryPolicy(base_delay=0.01, jitter=0.0))
        # the turn-loop tests run their tools unasked; tests/agents/test_gate.py
        # and the policy tests bring their own permissions
        permissions = permissions or Permissions(default="yolo")
        sup = Supervisor(
            AsyncStore(self.store), pool, tools or ToolRegistry(), config, permissions, mcp=mcp
        )

        async def run(task_status=trio.TASK_STATUS_IGNORED):
            with trio.CancelScope() as scope:
                self._scope = scope
                await sup.run(task_status=task_status)
            await pool.aclose()

        self.sup = await self.nursery.start(run)
        return self.sup

    async def stop(self, grace: float = 2.0) -> None:
        assert self.sup is not None and self._scope is not None
        await self.sup.shutdown(grace)
        self._scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        self.store.close()

    async def turn(self, agent: str, text: str, *, limit: float = 10) -> list[LogEntry]:
        """Prompt and collect the agent's events until that turn ends."""
        actor = await self.sup.live(agent)
        sub = actor.log.subscribe(from_seq=actor.log.next_seq)
        turn, _ = await self.sup.prompt(actor, text)
        return await collect_turn(sub, turn, limit)


async def collect_turn(sub, turn: str, limit: float = 10) -> list[LogEntry]:
    events: list[LogEntry] = []
    with trio.fail_after(limit):
        async for e in sub:
            events.append(e)
            if isinstance(e.event, TurnEnded) and e.turn == turn:
                break
    sub.close()
    return events


def of(events: list[LogEntry], kind: type | tuple[type, ...]) -> list:
    return [e.event for e in events if isinstance(e.event, kind)]


@pytest.fixture
async def harness(nursery, fake_provider, tmp_path) -> Callable[..., Harness]:
    h = Harness(nursery, fake_provider, tmp_path / "ikigai.db")
    yield h
    if h.sup is not None and h._scope is not None and not h._scope.cancel_called:
        await h.stop()
