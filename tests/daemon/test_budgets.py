"""Budgets over agent trees, through the real daemon and the fake provider
(issue 29, "Budgets"): a tree stops at its boundary with ``budget_exceeded``,
the model's fork tool is refused beyond what is left, the spend shown is the
sum of the stored per-call costs, and a budget survives a restart and a
``kill -9`` mid-turn (both engines)."""

from __future__ import annotations

import random
import signal
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import INVALID_PARAMS, REFUSED
from protocol.params import decode_params
from store import Store
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Reply, ToolCall, Usage

# claude-sonnet-4-5 at the catalog's $3 / $15 per million: this call is $0.315
BIG = Usage(input=100_000, output=1_000)
BIG_USD = 0.315


def _stored_costs(url: str) -> float:
    """Every stored call priced by itself, straight from the message_usage view."""
    with Store(url, upgrade=False) as store:
        prices = store.catalog.lookup("anthropic", "claude-sonnet-4-5").prices
        with store.engine.connect() as conn:
            import sqlalchemy as sa

            rows = conn.execute(
                sa.text(
                    "SELECT input_tokens, output_tokens, cached_tokens, cache_write_tokens "
                    "FROM message_usage"
                )
            ).all()
    return sum(
        prices.cost(input_tokens=i, output_tokens=o, cached_tokens=c, cache_write_tokens=w)
        for i, o, c, w in rows
    )


async def _tree_stops_at_its_boundary(c: Any, fake: Any, url: str) -> None:
    created = await c.call("agent.create", name="r", budget={"max_cost_usd": 1.0, "max_turns": 20})
    assert created["agent"]["name"] == "r"
    fake.push(Reply(text="one", usage=BIG))
    assert (await c.call("agent.prompt", agent="r", text="a", wait=True))["status"] == "completed"
    fake.push(Reply(text="two", usage=BIG))
    forked = await c.call("agent.fork", agent="r", name="kid", prompt="b", wait=True)
    assert forked["outcome"]["status"] == "completed"
    fake.push(Reply(text="three", usage=BIG))
    done = await c.call("agent.prompt", agent="kid", text="c", wait=True)
    assert done["status"] == "completed"
    # $0.945 spent by the tree: the next call's worst case (4096 output tokens
    # alone are $0.06) could cross $1.00, so it is not made
    before = len(fake.requests)
    stopped = await c.call("agent.prompt", agent="kid", text="d", wait=True)
    assert stopped["status"] == "budget_exceeded"
    assert "tree budget of agent r" in stopped["message"]
    assert "$0.94" in stopped["message"] or "$0.95" in stopped["message"]
    assert "ikictl budget r" in stopped["message"]
    assert len(fake.requests) == before  # no request reached the provider
    # the spend shown is the sum of the stored per-call costs
    shown = await c.call("agent.show", agent="kid")
    (line,) = shown["budget"]["budgets"]
    assert line["name"] == "r" and line["tree"] and line["spent_turns"] == 3
    assert line["spent_usd"] == pytest.approx(_stored_costs(url))
    assert line["spent_usd"] == pytest.approx(3 * BIG_USD)
    usage = await c.call("agent.usage", agent="r", descendants=True)
    assert usage["total"]["cost_usd"] == pytest.approx(line["spent_usd"])
    assert usage["budget"]["budgets"][0]["spent_usd"] == line["spent_usd"]
    # raised live, the tree goes on
    await c.call("agent.set_budget", agent="r", budget={"max_cost_usd": 5.0})
    fake.push(Reply(text="four", usage=BIG))
    again = await c.call("agent.prompt", agent="kid", text="e", wait=True)
    assert again["status"] == "completed" and again["reply"] == "four"


async def test_a_tree_stops_at_its_boundary(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await _tree_stops_at_its_boundary(c, fake_provider, f"sqlite:///{daemon.home / 'ikigai.db'}")


@pytest.mark.postgres
async def test_a_tree_stops_at_its_boundary_postgres(
    daemon_home: Path, fake_provider, nursery
) -> None:
    from tests.store.conftest import _pg_admin_url, create_pg_database, drop_pg_database

    admin = _pg_admin_url()
    name = f"ikigai_budget_{random.randrange(1 << 30):x}"
    url = create_pg_database(admin, name)
    write_home(daemon_home, fake_provider, database_url=url)
    d = DaemonProcess(daemon_home)
    try:
        await d.start()
        c = await connect(nursery, str(d.socket))
        await _tree_stops_at_its_boundary(c, fake_provider, url)
    finally:
        d.stop()
        drop_pg_database(admin, name)


async def test_the_fork_tool_is_refused_beyond_what_is_left(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="p", budget={"max_cost_usd": 2.0})
    fake_provider.push(
        Reply(tool_calls=[ToolCall("fork", {"prompt": "go", "max_cost_usd": 3.0})], usage=BIG),
        Reply(text="understood"),
    )
    out = await c.call("agent.prompt", agent="p", text="split the work", wait=True)
    assert out["status"] == "completed"
    # the tool result the model read: a refusal naming what is left
    second = fake_provider.requests[-1].json
    results = [
        b
        for m in second["messages"]
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert results and results[-1].get("is_error") is True
    text = str(results[-1]["content"])
    assert "$1.68 of its $2.00" in text or "$1.69 of its $2.00" in text, text
    listed = await c.call("agent.list")
    assert [a["name"] for a in listed] == ["p"]  # no child was made


async def test_bad_input_and_unpriced_models(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="a", budget={"max_turns": 3})
    for bad, field in [
        ({"max_cost_usd": -1}, "budget.max_cost_usd"),
        ({"max_cost_usd": "ten"}, "budget.max_cost_usd"),
        ({"max_tokens": 0}, "budget.max_tokens"),
        ({"max_turns": 2.5}, "budget.max_turns"),
    ]:
        with pytest.raises(RpcFailure) as e:
            await c.call("agent.set_budget", agent="a", budget=bad)
        assert e.value.code == INVALID_PARAMS and field in e.value.error["message"]
    # nothing running is disturbed: the budget in force is the one set at creation
    (line,) = (await c.call("agent.show", agent="a"))["budget"]["budgets"]
    assert line["max_turns"] == 3 and line["max_cost_usd"] is None
    # a model with no price: refused at set time, naming it, unless allowed
    with pytest.raises(RpcFailure) as e:
        await c.call(
            "agent.create", name="u", model="openai/no-price-model", budget={"max_cost_usd": 1}
        )
    assert e.value.code == REFUSED and "openai/no-price-model has no price" in str(e.value.error)
    ok = await c.call(
        "agent.create",
        name="u",
        model="openai/no-price-model",
        budget={"max_cost_usd": 1, "allow_unpriced": True},
    )
    assert ok["agent"]["name"] == "u"
    # a child is never given more than its parent has left
    await c.call("agent.set_budget", agent="a", budget={"max_cost_usd": 1.0})
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.fork", agent="a", budget={"max_cost_usd": 1.5})
    assert e.value.code == REFUSED and "$1.00 of its $1.00" in e.value.error["message"]


async def test_a_budget_survives_a_restart_and_a_kill_mid_turn(
    daemon, fake_provider, nursery
) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="k", budget={"max_cost_usd": 1.0})
    # the first call is stored; then a slow tool holds the turn open and the
    # daemon is killed: the stored call is counted once, after the restart too
    fake_provider.push(
        Reply(tool_calls=[ToolCall("bash", {"command": "sleep 30"})], usage=BIG),
    )
    await c.call("agent.prompt", agent="k", text="work")
    with trio.fail_after(20):
        while True:  # the daemon has no event for this: ask until the tool runs
            shown = await c.call("agent.show", agent="k")
            if shown["state"] == "executing_tool":
                break
            await trio.sleep(0.05)
    daemon.signal(signal.SIGKILL)
    assert await trio.to_thread.run_sync(daemon.wait) == -signal.SIGKILL
    daemon.socket.unlink(missing_ok=True)
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    (line,) = (await c.call("agent.show", agent="k"))["budget"]["budgets"]
    assert line["max_cost_usd"] == 1.0
    assert line["spent_usd"] == pytest.approx(BIG_USD) and line["spent_turns"] == 1
    # two more calls fit; the fourth could cross $1.00
    for _ in range(2):
        fake_provider.push(Reply(text="ok", usage=BIG))
        assert (await c.call("agent.prompt", agent="k", text="x", wait=True))["status"] == (
            "completed"
        )
    out = await c.call("agent.prompt", agent="k", text="y", wait=True)
    assert out["status"] == "budget_exceeded"
    # and a clean restart keeps it all too
    daemon.stop()
    daemon.socket.unlink(missing_ok=True)
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    (line,) = (await c.call("agent.show", agent="k"))["budget"]["budgets"]
    assert line["spent_usd"] == pytest.approx(3 * BIG_USD)
    out = await c.call("agent.prompt", agent="k", text="z", wait=True)
    assert out["status"] == "budget_exceeded"


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.dictionaries(
        st.sampled_from(["max_cost_usd", "max_tokens", "max_turns", "allow_unpriced", "other"]),
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**70), max_value=2**70)
        | st.floats()
        | st.text(max_size=5),
    )
)
def test_any_budget_param_is_taken_or_refused_naming_a_field(budget: dict[str, Any]) -> None:
    from daemon.methods.budgets import to_budget
    from protocol import RpcError

    try:
        params = decode_params("agent.set_budget", {"agent": "a", "budget": budget})
        to_budget(params.budget)  # type: ignore[attr-defined]
    except RpcError as e:
        assert e.code == INVALID_PARAMS
        assert "budget" in e.message
        return
    for key in ("max_cost_usd", "max_tokens", "max_turns"):
        v = budget.get(key)
        assert v is None or (v > 0 and v == v)
