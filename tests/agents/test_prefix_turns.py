"""The replay an agent keeps between model calls (agents/_prefix.py) starts
over when its context changes other than by appending: a compaction, a rewind,
a clear, a switch to a model with another window or on another provider. Each
through the real turn loop over loopback: after every turn, the messages the
fake provider received are what the whole walk of the stored history gives."""

from __future__ import annotations

from agents import AgentConfig, RetryPolicy
from agents.context import bound_results, for_provider
from agents.events import TurnEnded
from agents.tools import ToolOutput, ToolRegistry, ToolSpec
from providers.catalog import load_catalog
from providers.types import Request, TextBlock, ThinkingConfig
from store import SUMMARY_PREFIX
from tests.agents.conftest import of
from tests.fakes.script import Reply, ToolCall

SUMMARY_MARK = "You compact the history"
CUT_NOTE = "characters cut from this tool result"
# ~40,000 characters: under the tool layer's 64 KiB, over the 24,000 a 24k window keeps
BIG = "".join(f"line {i}: {'x' * 40}\n" for i in range(800))


def _config() -> AgentConfig:
    return AgentConfig(retry=RetryPolicy(base_delay=0.01, jitter=0.0))


def _tools() -> ToolRegistry:
    reg = ToolRegistry()

    async def dump(args, ctx):
        return ToolOutput(BIG)

    reg.register(ToolSpec("dump", "Print a big file", {"type": "object", "properties": {}}, dump))
    return reg


def _respond(req):
    if SUMMARY_MARK in req.body.decode():
        return Reply(text="The user asked for several things; each was answered.")
    messages = req.json.get("messages") or [{}]
    last = repr(messages[-1])
    if "dump it" in last and "tool_result" not in last:  # the prompt, not the tool's result
        return Reply(tool_calls=[ToolCall("dump", {}, id="call_dump")])
    return Reply(text="answered", thinking="pondering the ask")


async def _turn(harness, uuid: str, text: str) -> None:
    events = await harness.turn(uuid, text, limit=30)
    assert of(events, TurnEnded)[-1].status == "completed"


def _sent_as_replayed(harness, uuid: str) -> list:
    """The last request's messages, checked against the whole walk (for_provider,
    bound_results) of the stored history the turn sent: all but its answer."""
    actor = harness.sup.actors[uuid]
    history = harness.store.replay(uuid)
    assert history[-1].role == "assistant"
    provider, model = actor.provider, actor.model
    pool = actor.deps.pool
    limits = pool.catalog.limits(provider, model)
    share = actor.deps.config.tool_result_share
    messages = bound_results(
        for_provider(history[:-1], provider), int(limits.context_window * share)
    )
    request = Request(
        model=model,
        messages=messages,
        system=[TextBlock(text=actor.system_prompt)] if actor.system_prompt else [],
        thinking=ThinkingConfig(level=actor.thinking_level),
    )
    expected = pool.get(provider, model).codec.body(request, stream=True)["messages"]
    sent = harness.fake.requests[-1].json["messages"]
    assert sent == expected
    return sent


def _texts(messages: list) -> str:
    return repr(messages)


async def test_a_clear_sends_only_what_follows_it(harness):
    harness.fake.responder = _respond
    sup = await harness.start(config=_config())
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="c")
    for n in range(3):
        await _turn(harness, rec.uuid, f"prompt {n} before the clear")
        _sent_as_replayed(harness, rec.uuid)
    await sup.history_op(rec.uuid, "clear")
    await _turn(harness, rec.uuid, "prompt after the clear")
    sent = _sent_as_replayed(harness, rec.uuid)
    assert len(sent) == 1 and "before the clear" not in _texts(sent)
    await _turn(harness, rec.uuid, "prompt once more")
    assert len(_sent_as_replayed(harness, rec.uuid)) == 3


async def test_a_rewind_sends_the_history_up_to_its_mark(harness):
    harness.fake.responder = _respond
    sup = await harness.start(config=_config())
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="r")
    await _turn(harness, rec.uuid, "prompt kept")
    await sup.history_op(rec.uuid, "mark", "here")
    for n in range(3):
        await _turn(harness, rec.uuid, f"prompt {n} rewound")
        _sent_as_replayed(harness, rec.uuid)
    await sup.history_op(rec.uuid, "rewind", "here")
    await _turn(harness, rec.uuid, "prompt after the rewind")
    sent = _sent_as_replayed(harness, rec.uuid)
    assert len(sent) == 3 and "rewound" not in _texts(sent) and "prompt kept" in _texts(sent)


async def test_a_compaction_sends_its_summary_and_what_it_kept(harness):
    harness.fake.responder = _respond
    sup = await harness.start(config=_config())
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="k")
    for n in range(4):
        await _turn(harness, rec.uuid, f"prompt {n} early")
        _sent_as_replayed(harness, rec.uuid)
    outcome = await sup.compact(rec.uuid, keep_turns=1)
    assert outcome.compacted
    await _turn(harness, rec.uuid, "prompt after the compaction")
    sent = _sent_as_replayed(harness, rec.uuid)
    # the summary, merged with the turn it kept (two user messages in a row), then that turn's answer
    assert SUMMARY_PREFIX.strip() in _texts(sent[0])
    assert "prompt 3 early" in _texts(sent[0]) and "prompt 0 early" not in _texts(sent)
    assert len(sent) == 3


async def test_a_switch_to_a_smaller_window_cuts_a_big_result_it_sent_whole(harness):
    catalog = load_catalog()
    catalog.set_limits(
        "anthropic", "claude-haiku-4-5", context_window=24_000, max_output_tokens=1000
    )
    harness.fake.responder = _respond
    sup = await harness.start(config=_config(), tools=_tools(), catalog=catalog)
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="w")
    await _turn(harness, rec.uuid, "prompt: dump it")
    sent = _sent_as_replayed(harness, rec.uuid)
    assert len(_texts(sent)) > len(BIG) and CUT_NOTE not in _texts(sent)
    await sup.switch_model(rec.uuid, "anthropic/claude-haiku-4-5")
    await _turn(harness, rec.uuid, "prompt after the switch")
    assert CUT_NOTE in _texts(_sent_as_replayed(harness, rec.uuid))
    await sup.switch_model(rec.uuid, "anthropic/claude-sonnet-4-5")
    await _turn(harness, rec.uuid, "prompt back on the big window")
    assert CUT_NOTE not in _texts(_sent_as_replayed(harness, rec.uuid))


async def test_a_switch_to_another_provider_and_back(harness):
    """Anthropic's signed thinking goes to Anthropic only: not to OpenAI after a
    switch, and again to Anthropic after the switch back."""
    catalog = load_catalog()
    for provider, model in (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-4o")):
        # the same window, so the same cut: only the provider differs
        catalog.set_limits(provider, model, context_window=200_000)
    harness.fake.responder = _respond
    sup = await harness.start(config=_config(), catalog=catalog)
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="p", thinking="low")
    await _turn(harness, rec.uuid, "prompt on anthropic")
    await _turn(harness, rec.uuid, "prompt two on anthropic")
    sent = _sent_as_replayed(harness, rec.uuid)
    assert "pondering the ask" in _texts(sent)
    await sup.switch_model(rec.uuid, "openai/gpt-4o")
    await _turn(harness, rec.uuid, "prompt on openai")
    sent = _sent_as_replayed(harness, rec.uuid)
    assert "pondering the ask" not in _texts(sent) and "signature" not in _texts(sent)
    await sup.switch_model(rec.uuid, "anthropic/claude-sonnet-4-5/low")
    await _turn(harness, rec.uuid, "prompt back on anthropic")
    sent = _sent_as_replayed(harness, rec.uuid)
    assert "pondering the ask" in _texts(sent[:2])  # the first answer's thinking, signed
