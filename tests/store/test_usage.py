"""Usage totals and cost from the catalog's prices."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from providers.types import Message, TextBlock, Usage
from store import Store, UsageTotals

from .helpers import assistant


def reply(
    store: Store,
    uuid: str,
    usage: Usage,
    *,
    provider: str = "anthropic",
    model: str = "claude-test",
) -> None:
    store.append_assistant(
        uuid, assistant("x", provider=provider, model=model), usage=usage, finish_reason="stop"
    )


def test_totals_per_model_and_cost(store: Store) -> None:
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    # 1000 input of which 600 cached reads and 100 cache writes; 200 output (50 thinking)
    reply(
        store,
        a,
        Usage(
            input_tokens=1000,
            output_tokens=200,
            thinking_tokens=50,
            cached_tokens=600,
            cache_write_tokens=100,
        ),
    )
    reply(store, a, Usage(input_tokens=500, output_tokens=100))
    store.switch_model(a, provider="openai", model="gpt-test")
    # a dated snapshot of a catalog model is priced as that model
    reply(
        store,
        a,
        Usage(input_tokens=2000, output_tokens=1000, cached_tokens=1000),
        provider="openai",
        model="gpt-test-2025-08-07",
    )
    reply(store, a, Usage(input_tokens=7, output_tokens=3), provider="local", model="llama-x")
    store.record_usage(
        a, Usage(input_tokens=100, output_tokens=10), provider="openai", model="gpt-test-2025-08-07"
    )

    rep = store.usage(a)
    assert rep.agents == 1 and not rep.descendants
    by = {(t.provider, t.model): t for t in rep.by_model}
    claude = by["anthropic", "claude-test"]
    assert (claude.calls, claude.input_tokens, claude.output_tokens, claude.thinking_tokens) == (
        2,
        1500,
        300,
        50,
    )
    assert (claude.cached_tokens, claude.cache_write_tokens) == (600, 100)
    # fresh 800 * 3.0 + cached 600 * 0.3 + written 100 * 3.75 + output 300 * 15.0, per million
    assert claude.cost_usd == pytest.approx((800 * 3.0 + 600 * 0.3 + 100 * 3.75 + 300 * 15.0) / 1e6)
    # keyed by the model requested (the agent's after the switch), priced as the reported one
    gpt = by["openai", "gpt-test"]
    assert (gpt.calls, gpt.input_tokens, gpt.output_tokens, gpt.cached_tokens) == (
        1,
        2100,
        1010,
        1000,
    )
    # no cache_write price: written tokens would be billed as input
    assert gpt.cost_usd == pytest.approx((1100 * 1.25 + 1000 * 0.125 + 1010 * 10.0) / 1e6)
    local = by["local", "llama-x"]
    assert local.cost_usd is None
    assert rep.unpriced == ["local/llama-x"]
    assert rep.total == UsageTotals(
        provider=None,
        model=None,
        turns=1,  # no prompt rows: one turn (turns count prompts, calls count model calls)
        calls=4,
        input_tokens=1500 + 2100 + 7,
        output_tokens=300 + 1010 + 3,
        thinking_tokens=50,
        cached_tokens=1600,
        cache_write_tokens=100,
        cost_usd=None,  # llama-x has no price: the total is unknown, not a partial sum
    )
    # most expensive first
    assert [t.model for t in rep.by_model] == ["gpt-test", "claude-test", "llama-x"]


def test_descendants_and_no_double_counting_of_inherited_turns(store: Store) -> None:
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    reply(store, a, Usage(input_tokens=100, output_tokens=10))
    b = store.fork(a, name="b").uuid
    reply(store, b, Usage(input_tokens=200, output_tokens=20))
    c = store.fork(b, name="c").uuid
    reply(store, c, Usage(input_tokens=400, output_tokens=40))
    spawned = store.create_agent("s", provider="anthropic", model="claude-test", parent_uuid=a).uuid
    reply(store, spawned, Usage(input_tokens=800, output_tokens=80))
    other = store.create_agent("o", provider="anthropic", model="claude-test").uuid
    reply(store, other, Usage(input_tokens=10_000, output_tokens=1))

    assert store.usage(b).total.input_tokens == 200  # its own turns only
    assert store.usage(c).total.input_tokens == 400
    tree = store.usage(a, descendants=True)
    assert tree.agents == 4 and tree.descendants
    assert (tree.total.turns, tree.total.input_tokens, tree.total.output_tokens) == (4, 1500, 150)
    sub = store.usage(b, descendants=True)
    assert (sub.agents, sub.total.input_tokens) == (2, 600)


def test_empty_usage(store: Store) -> None:
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    store.append_user(a, Message(role="user", content=[TextBlock(text="hi")]))
    rep = store.usage(a, descendants=True)
    assert rep.by_model == [] and rep.unpriced == []
    assert rep.total == UsageTotals(provider=None, model=None, cost_usd=0.0)


def test_the_usage_view_is_plain_sql(store: Store) -> None:
    """message_usage is for people at a SQL prompt too: tokens as integer columns."""
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    reply(store, a, Usage(input_tokens=12, output_tokens=3, cached_tokens=5))
    with store.engine.connect() as conn:
        row = conn.execute(
            sa.text(
                "SELECT provider, model, thinking_level, input_tokens, output_tokens, "
                "thinking_tokens, cached_tokens, cache_write_tokens FROM message_usage"
            )
        ).one()
    assert tuple(row) == ("anthropic", "claude-test", "high", 12, 3, 0, 5, 0)


def test_usage_totals_of_every_agent_in_one_call_match_usage(store):
    from providers.types import Message, TextBlock, Usage

    a = store.create_agent("ua", provider="anthropic", model="claude-sonnet-4-5")
    b = store.create_agent("ub", provider="openai", model="gpt-4o")
    idle = store.create_agent("uc", provider="openai", model="gpt-4o")
    for uuid, provider, model, n in ((a.uuid, "anthropic", "claude-sonnet-4-5", 2), (b.uuid, "openai", "gpt-4o", 1)):
        for i in range(n):
            store.append_user(uuid, Message(role="user", content=[TextBlock(text=f"q{i}")]))
            store.append_assistant(
                uuid,
                Message(role="assistant", content=[TextBlock(text="a")], provider=provider, model=model),
                usage=Usage(input_tokens=100 * (i + 1), output_tokens=10, cached_tokens=5),
            )
    totals = store.usage_totals()
    assert set(totals) >= {a.uuid, b.uuid} and idle.uuid not in totals
    for uuid in (a.uuid, b.uuid):
        assert totals[uuid] == store.usage(uuid).total
    assert (totals[a.uuid].input_tokens, totals[a.uuid].turns) == (300, 2)
