"""Budgets over agent trees: stored, checked at set time, spend summed from
the stored usage (both engines)."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.types import Usage
from store import Budget, BudgetRefused, InvalidBudget, Store, check_budget

from .test_usage import reply

# claude-test: $3 / $15 per million input / output tokens
CALL = Usage(input_tokens=100_000, output_tokens=10_000)  # $0.30 + $0.15
CALL_USD = 0.45


def test_a_fork_spends_against_every_ancestor(store: Store) -> None:
    root = store.create_agent("root", provider="anthropic", model="claude-test").uuid
    assert store.set_budget(root, Budget(max_cost_usd=2.0, max_turns=20))[0].spent.cost_usd == 0
    reply(store, root, CALL)
    child = store.fork(root, budget=Budget(max_cost_usd=1.0)).uuid
    grandchild = store.fork(child).uuid
    reply(store, grandchild, CALL)
    reply(store, grandchild, CALL)

    states = store.budgets_of(grandchild)
    # nearest first: the child's own, then the root's (a tree budget)
    assert [(s.agent_uuid, s.root) for s in states] == [(child, False), (root, True)]
    assert states[0].spent.cost_usd == pytest.approx(2 * CALL_USD)
    assert states[1].spent.cost_usd == pytest.approx(3 * CALL_USD)
    assert states[1].spent.tokens == 3 * (100_000 + 10_000)
    assert states[1].spent.agents == 3
    # the spend of a tree budget is what usage() of the tree says
    tree = store.usage(root, descendants=True).total
    assert states[1].spent.cost_usd == pytest.approx(tree.cost_usd)
    assert states[1].spent.turns == tree.turns
    # the grandchild has no budget of its own: nothing is listed for it
    assert store.budgets_of(root)[0].agent_uuid == root


def test_spend_equals_the_sum_of_the_stored_per_call_costs(store: Store) -> None:
    root = store.create_agent("r", provider="anthropic", model="claude-test").uuid
    store.set_budget(root, Budget(max_cost_usd=100.0))
    kids = [store.fork(root).uuid for _ in range(3)]
    calls = [
        Usage(input_tokens=1000 * i, output_tokens=37 * i, cached_tokens=100 * i)
        for i in range(1, 8)
    ]
    for i, usage in enumerate(calls):
        reply(store, kids[i % 3], usage)
    store.record_usage(kids[0], Usage(input_tokens=5, output_tokens=5), model="claude-test")
    # each stored row priced by itself, read straight from the message_usage view
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT input_tokens, output_tokens, cached_tokens FROM message_usage")
        ).all()
    prices = store.catalog.lookup("anthropic", "claude-test").prices
    want = sum(
        prices.cost(input_tokens=i, output_tokens=o, cached_tokens=c, cache_write_tokens=0)
        for i, o, c in rows
    )
    assert len(rows) == len(calls) + 1
    assert store.budgets_of(kids[1])[0].spent.cost_usd == pytest.approx(want)


def test_a_child_is_never_given_more_than_its_parent_has_left(store: Store) -> None:
    root = store.create_agent("root", provider="anthropic", model="claude-test").uuid
    store.set_budget(root, Budget(max_cost_usd=1.0, max_tokens=500_000, max_turns=5))
    reply(store, root, CALL)  # $0.45 and 110,000 tokens and one turn spent
    with pytest.raises(BudgetRefused, match=r"\$0\.55 of its \$1\.00") as e:
        store.fork(root, name="greedy", budget=Budget(max_cost_usd=0.60))
    assert "root" in str(e.value)
    with pytest.raises(BudgetRefused, match=r"max_tokens: .* 390000 tokens"):
        store.fork(root, budget=Budget(max_tokens=400_000))
    with pytest.raises(BudgetRefused, match="max_turns"):
        store.fork(root, budget=Budget(max_turns=5))
    # nothing was written by a refused fork
    assert [a.name for a in store.list_agents()] == ["root"]
    ok = store.fork(root, budget=Budget(max_cost_usd=0.55, max_turns=4))
    # a child's own spend is inside its parent's: raising its limit by what it spent is fine
    reply(store, ok.uuid, CALL)
    store.set_budget(ok.uuid, Budget(max_cost_usd=0.55))
    with pytest.raises(BudgetRefused, match="at most"):
        store.set_budget(ok.uuid, Budget(max_cost_usd=0.56))
    # a grandchild is checked against the nearest budget and every one above
    with pytest.raises(BudgetRefused):
        store.fork(ok.uuid, budget=Budget(max_cost_usd=0.2))


def test_a_cost_budget_on_an_unpriced_model_is_refused_unless_allowed(store: Store) -> None:
    a = store.create_agent("local", provider="openai", model="no-such-model").uuid
    with pytest.raises(BudgetRefused, match="openai/no-such-model has no price"):
        store.set_budget(a, Budget(max_cost_usd=1.0))
    assert store.budgets_of(a) == []
    # token and turn limits need no price
    store.set_budget(a, Budget(max_tokens=1000))
    state = store.set_budget(a, Budget(max_cost_usd=1.0, allow_unpriced=True))[0]
    assert state.budget.allow_unpriced
    reply(store, a, Usage(input_tokens=10, output_tokens=5), provider="openai", model="x")
    spent = store.budgets_of(a)[0].spent
    # counted as unknown, never as $0
    assert spent.unpriced == ["openai/no-such-model"] and spent.tokens == 15
    with pytest.raises(BudgetRefused, match="no price"):
        store.create_agent("b", provider="openai", model="nope", budget=Budget(max_cost_usd=1.0))
    assert [x.name for x in store.list_agents()] == ["local"]


def test_budgets_survive_reopening(store: Store, db_url: str, catalog: object) -> None:
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    store.set_budget(a, Budget(max_cost_usd=2.5, max_turns=20))
    reply(store, a, CALL)
    again = Store(db_url, upgrade=False, catalog=store.catalog)
    try:
        (state,) = again.budgets_of(a)
        assert state.budget == Budget(max_cost_usd=2.5, max_turns=20)
        assert state.spent.cost_usd == pytest.approx(CALL_USD) and state.spent.turns == 1
        assert again.set_budget(a, None) == []
        assert store.budgets_of(a) == []
    finally:
        if again is not store:
            again.close()


def test_a_days_spend(store: Store) -> None:
    from datetime import UTC, datetime, timedelta

    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    b = store.create_agent("b", provider="openai", model="gpt-test").uuid
    reply(store, a, CALL)
    reply(store, b, Usage(input_tokens=1_000_000), provider="openai", model="gpt-test")
    since = datetime.now(UTC) - timedelta(hours=1)
    assert store.spend_since(since).cost_usd == pytest.approx(CALL_USD + 1.25)
    assert store.spend_since(since, provider="openai").cost_usd == pytest.approx(1.25)
    assert store.spend_since(datetime.now(UTC) + timedelta(seconds=5)).calls == 0


@pytest.mark.parametrize(
    ("budget", "field"),
    [
        (Budget(max_cost_usd=-1.0), "max_cost_usd"),
        (Budget(max_cost_usd=0.0), "max_cost_usd"),
        (Budget(max_cost_usd=math.nan), "max_cost_usd"),
        (Budget(max_cost_usd=math.inf), "max_cost_usd"),
        (Budget(max_tokens=0), "max_tokens"),
        (Budget(max_turns=-3), "max_turns"),
    ],
)
def test_bad_limits_are_refused_naming_the_field(store: Store, budget: Budget, field: str) -> None:
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    store.set_budget(a, Budget(max_turns=3))
    with pytest.raises(InvalidBudget, match=f"^{field}: "):
        store.set_budget(a, budget)
    # the budget in force is untouched
    assert store.budgets_of(a)[0].budget == Budget(max_turns=3)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cost=st.none() | st.floats(allow_nan=True, allow_infinity=True),
    tokens=st.none() | st.integers(min_value=-(2**70), max_value=2**70),
    turns=st.none() | st.integers(min_value=-(2**70), max_value=2**70),
)
def test_any_budget_is_either_valid_or_refused_naming_a_field(
    cost: float | None, tokens: int | None, turns: int | None
) -> None:
    b = Budget(max_cost_usd=cost, max_tokens=tokens, max_turns=turns)
    try:
        check_budget(b)
    except InvalidBudget as e:
        assert str(e).split(":")[0] in ("max_cost_usd", "max_tokens", "max_turns")
        return
    assert cost is None or (math.isfinite(cost) and cost > 0)
    assert tokens is None or tokens >= 1
    assert turns is None or turns >= 1
