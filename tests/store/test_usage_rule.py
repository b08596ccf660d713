"""One pricing rule (docs/configuration.md, "Usage and cost"): usage is the
requested model's, priced as the reported model if the catalog knows it, else
as the requested one, else unknown (None, never 0); a turn is one prompt.

The store side here; the daemon side (the turn's cost, ``agent.usage`` and
``agent.list`` agree) at the end, against the real daemon and fake server."""

from __future__ import annotations

import json

import pytest

from providers.catalog import Catalog, default_catalog
from providers.types import Message, TextBlock, Usage
from store import Store
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import connect
from tests.fakes.script import Reply
from tests.fakes.script import Usage as WireUsage

from .helpers import assistant


def _price(catalog: Catalog, provider: str, model: str, usage: Usage) -> float:
    entry = catalog.lookup(provider, model)
    assert entry is not None and entry.prices is not None
    return entry.prices.cost(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)


def _prompt(store: Store, uuid: str, text: str = "q") -> None:
    store.append_user(uuid, Message(role="user", content=[TextBlock(text=text)]))


def _reply(store: Store, uuid: str, provider: str, model: str, usage: Usage) -> None:
    store.append_assistant(uuid, assistant("a", provider=provider, model=model), usage=usage)


# the store tests' catalog (tests/store/catalog.json): openai/gpt-test, anthropic/claude-test


def test_a_raw_server_name_is_the_requested_models_and_priced_as_it(store: Store) -> None:
    a = store.create_agent("a", provider="openai", model="gpt-test").uuid
    u = Usage(input_tokens=1000, output_tokens=100)
    gpt = _price(store.catalog, "openai", "gpt-test", u)
    claude = _price(store.catalog, "anthropic", "claude-test", u)
    _prompt(store, a)
    _reply(store, a, "openai", "/models/served.gguf", u)  # unknown: the requested price
    _reply(store, a, "openai", "gpt-test-2025-08-07", u)  # a snapshot of the same model
    _prompt(store, a)
    _reply(store, a, "anthropic", "claude-test", u)  # a fallback on another provider
    rep = store.usage(a)
    by = {(t.provider, t.model): t for t in rep.by_model}
    assert set(by) == {("openai", "gpt-test"), ("anthropic", "claude-test")}
    assert (by["openai", "gpt-test"].turns, by["openai", "gpt-test"].calls) == (1, 2)
    assert by["openai", "gpt-test"].cost_usd == pytest.approx(2 * gpt)
    assert by["anthropic", "claude-test"].cost_usd == pytest.approx(claude)
    assert (rep.total.turns, rep.total.calls) == (2, 3)
    assert rep.total.cost_usd == pytest.approx(2 * gpt + claude)
    assert rep.unpriced == []
    assert store.usage_totals()[a] == rep.total


def test_a_switch_keeps_earlier_usage_on_the_model_requested_then(store: Store) -> None:
    a = store.create_agent("a", provider="openai", model="gpt-test").uuid
    u = Usage(input_tokens=500, output_tokens=50)
    _prompt(store, a)
    _reply(store, a, "openai", "raw-name", u)
    store.switch_model(a, provider="anthropic", model="claude-test")
    _prompt(store, a)
    _reply(store, a, "anthropic", "raw-name", u)
    by = {(t.provider, t.model): t.cost_usd for t in store.usage(a).by_model}
    assert by == {
        ("openai", "gpt-test"): pytest.approx(_price(store.catalog, "openai", "gpt-test", u)),
        ("anthropic", "claude-test"): pytest.approx(
            _price(store.catalog, "anthropic", "claude-test", u)
        ),
    }


def test_a_model_with_no_price_costs_unknown_not_zero(store: Store) -> None:
    a = store.create_agent("a", provider="lchat", model="served").uuid
    _prompt(store, a)
    _reply(store, a, "lchat", "/path/model.gguf", Usage(input_tokens=10, output_tokens=5))
    rep = store.usage(a)
    assert [(t.provider, t.model, t.cost_usd) for t in rep.by_model] == [("lchat", "served", None)]
    assert rep.total.cost_usd is None and rep.unpriced == ["lchat/served"]
    assert store.usage_totals()[a].cost_usd is None


def test_a_turn_is_one_prompt_whatever_its_model_calls(store: Store) -> None:
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    _prompt(store, a)
    for _ in range(3):  # a turn with two rounds of tool calls
        _reply(store, a, "anthropic", "claude-test", Usage(input_tokens=1, output_tokens=1))
    total = store.usage(a).total
    assert (total.turns, total.calls) == (1, 3)
    assert store.usage_totals()[a] == total


# ------------------------------------------------------------------ the daemon


@pytest.fixture
def home():
    import shutil
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="ikd-", dir="/tmp"))  # short: socket path limit
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_the_turns_cost_usage_and_list_agree(home, fake_provider, nursery):
    write_home(home, fake_provider)
    cfg = json.loads((home / "config.json").read_text())
    cfg["providers"]["lchat"] = {
        "base_url": f"{fake_provider.base_url}/v1",
        "api": "chat",
        "key_env": None,
    }
    (home / "config.json").write_text(json.dumps(cfg))
    d = DaemonProcess(home)
    try:
        await d.start()
        c = await connect(nursery, str(d.socket))
        await c.call("agent.create", name="priced", model="openai/gpt-4o")
        await c.call("agent.create", name="free", model="lchat/served")
        wire = WireUsage(input=2000, output=300)
        u = Usage(input_tokens=2000, output_tokens=300)
        answers = {}
        for name in ("priced", "free"):
            fake_provider.push(Reply(text="ok", model="/srv/models/raw.gguf", usage=wire))
            answers[name] = await c.call("agent.prompt", agent=name, text="hi", wait=True)
            assert answers[name]["status"] == "completed"
        listed = {a["name"]: a["usage"] for a in await c.call("agent.list")}

        expected = _price(default_catalog(), "openai", "gpt-4o", u)
        usage = await c.call("agent.usage", agent="priced")
        assert [(m["provider"], m["model"]) for m in usage["by_model"]] == [("openai", "gpt-4o")]
        assert (usage["total"]["turns"], usage["total"]["calls"]) == (1, 1)
        for cost in (
            answers["priced"]["cost_usd"],
            usage["by_model"][0]["cost_usd"],
            usage["total"]["cost_usd"],
            listed["priced"]["cost_usd"],
        ):
            assert cost == pytest.approx(expected)

        usage = await c.call("agent.usage", agent="free")
        assert [(m["provider"], m["model"]) for m in usage["by_model"]] == [("lchat", "served")]
        assert answers["free"]["cost_usd"] is None
        assert usage["by_model"][0]["cost_usd"] is None and usage["total"]["cost_usd"] is None
        assert listed["free"]["cost_usd"] is None
    finally:
        d.stop()
