"""Agents that outlive their context window (issue 16), through the real turn
loop, over loopback HTTP to a fake provider that counts tokens with its own
tokenizer and refuses, as the real APIs do, a request that does not fit."""

from __future__ import annotations

import json
import re

import trio

from agents import AgentConfig, RetryPolicy
from agents.events import (
    CompactionDone,
    CompactionFailed,
    CompactionStarted,
    TurnEnded,
)
from agents.tools import ToolOutput, ToolRegistry, ToolSpec
from providers.catalog import load_catalog
from store import SUMMARY_PREFIX
from tests.agents.conftest import of
from tests.fakes.script import Reply, ToolCall
from tests.fakes.window import requested_output

SUMMARY_MARK = "You compact the history"
PROMPT = re.compile(r"prompt #(\d+)")
FILLER = "lorem ipsum dolor sit amet " * 6


def _catalog(**windows: tuple[str, int, int]):
    catalog = load_catalog()
    for provider, model, window, output in windows.values():
        catalog.set_limits(provider, model, context_window=window, max_output_tokens=output)
    return catalog


def _config(**kw) -> AgentConfig:
    return AgentConfig(retry=RetryPolicy(base_delay=0.01, jitter=0.0), **kw)


def _is_summary(req) -> bool:
    return SUMMARY_MARK in req.body.decode()


def _number(req) -> int:
    found = PROMPT.findall(req.body.decode())
    return int(found[-1]) if found else -1


def _last_is_tool_result(req) -> bool:
    body = req.json
    if "messages" in body:  # Anthropic, OpenAI Chat
        last = body["messages"][-1]
        content = last.get("content")
        if last.get("role") == "tool":
            return True
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )
    return False


def _under_window(fake, window: int) -> None:
    """Every request the provider received fitted: input + output room <= window."""
    assert fake.requests
    for req in fake.requests:
        if req.tokens is None:
            continue
        assert req.tokens + requested_output(req) <= window, (req.index, req.tokens)


async def _talk(harness, agent: str, first: int, count: int) -> list:
    ends = []
    for n in range(first, first + count):
        events = await harness.turn(agent, f"prompt #{n}: {FILLER}", limit=30)
        ends.append(events)
    return ends


def _statuses(ends) -> list[str]:
    return [of(events, TurnEnded)[-1].status for events in ends]


async def test_two_hundred_prompts_in_a_4000_token_window(harness):
    fake = harness.fake
    fake.windows["claude-sonnet-4-5"] = 4000
    summaries = []

    def respond(req):
        if _is_summary(req):
            summaries.append(req)
            return Reply(text="The user sent numbered prompts with filler text; each was answered. " * 2)
        return Reply(text=f"answer #{_number(req)}: noted.")

    fake.responder = respond
    sup = await harness.start(
        config=_config(), catalog=_catalog(a=("anthropic", "claude-sonnet-4-5", 4000, 300))
    )
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="long")
    ends = await _talk(harness, rec.uuid, 0, 200)
    assert _statuses(ends) == ["completed"] * 200
    _under_window(fake, 4000)
    assert len(summaries) >= 5
    done = [e for events in ends for e in of(events, CompactionDone)]
    assert len(done) == len(summaries)
    assert all(d.tokens_after < d.tokens_before for d in done)
    assert all(d.reason == "auto" for d in done)
    assert not [e for events in ends for e in of(events, CompactionFailed)]
    # the stored history is whole: every prompt and every answer
    rows = harness.store.history(rec.uuid)
    users = [r.content for r in rows if r.kind == "user"]
    answers = [r.content for r in rows if r.kind == "assistant"]
    assert [int(PROMPT.search(u).group(1)) for u in users] == list(range(200))
    assert answers == [f"answer #{n}: noted." for n in range(200)]
    assert sum(r.kind == "compaction" for r in rows) == len(summaries)
    # the summary calls are counted in usage
    report = harness.store.usage(rec.uuid)
    counts = [r for r in fake.requests if r.path.endswith("/count_tokens")]
    assert counts  # near the limit the agent asked the provider's count
    calls = [r for r in fake.requests if r not in counts]
    assert report.total.input_tokens == sum(r.tokens for r in calls)
    assert report.total.calls == 200
    # the last request began with the newest summary, then the kept turns
    last = fake.requests[-1].json["messages"]
    assert last[0]["role"] == "user"
    first_text = last[0]["content"][0]["text"] if isinstance(last[0]["content"], list) else last[0]["content"]
    assert first_text.startswith(SUMMARY_PREFIX)
    assert "prompt #199" in json.dumps(last[-1])


def _tools(store: dict) -> ToolRegistry:
    reg = ToolRegistry()

    async def echo(args, ctx):
        return ToolOutput(store.get("output", args["text"].upper()))

    reg.register(
        ToolSpec(
            "echo",
            "Shout",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            echo,
        )
    )
    return reg


async def test_tool_calls_and_thinking_signatures_survive_compaction(harness):
    """Each turn calls a tool and thinks (Anthropic, signed thinking): the
    compacted range holds tool calls and results, none is sent orphaned (the
    fake refuses that as the API does), and every thinking block sent back
    carries its own signature intact."""
    fake = harness.fake
    window = 8000
    fake.windows["claude-sonnet-4-5"] = window

    def respond(req):
        if _is_summary(req):
            assert "thinking" not in req.json or req.json["thinking"].get("type") != "enabled"
            return Reply(text="Earlier: numbered prompts, each echoed through the tool. " * 2)
        n = _number(req)
        if _last_is_tool_result(req):
            return Reply(thinking=f"think-done {n}", thinking_signature=f"sig-done-{n}", text=f"done #{n}")
        return Reply(
            thinking=f"think-call {n}",
            thinking_signature=f"sig-call-{n}",
            tool_calls=[ToolCall("echo", {"text": f"t{n}"}, id=f"call_{n}")],
        )

    fake.responder = respond
    sup = await harness.start(
        tools=_tools({}),
        config=_config(),
        catalog=_catalog(a=("anthropic", "claude-sonnet-4-5", window, 2500)),
    )
    rec, _, _ = await sup.create(model="claude-sonnet-4-5/low", name="tools")
    ends = await _talk(harness, rec.uuid, 0, 80)
    assert _statuses(ends) == ["completed"] * 80
    _under_window(fake, window)
    assert sum(_is_summary(r) for r in fake.requests) >= 2
    signed = 0
    for req in fake.requests:
        if _is_summary(req):
            continue
        for msg in req.json["messages"]:
            if msg["role"] != "assistant" or not isinstance(msg["content"], list):
                continue
            for block in msg["content"]:
                if block["type"] == "thinking":
                    kind, n = block["thinking"].removeprefix("think-").split()
                    assert block["signature"] == f"sig-{kind}-{n}"
                    signed += 1
    assert signed > 100


async def test_compaction_across_model_switches_on_every_api(harness):
    """Anthropic Messages, then OpenAI Chat, Gemini and OpenAI Responses, each
    with its own small window: every request of every API fits, and each
    API's summary calls are made on it."""
    fake = harness.fake
    plan = [
        ("anthropic", "claude-sonnet-4-5", 4000, "/v1/messages"),
        ("openai", "gpt-4o", 3000, "/chat/completions"),
        ("google", "gemini-2.5-flash", 3500, ":streamGenerateContent"),
        ("openai", "gpt-5", 5000, "/responses"),
    ]
    fake.windows.update({model: window for _, model, window, _ in plan})

    def respond(req):
        if _is_summary(req):
            return Reply(text="Numbered prompts so far, all answered. " * 3)
        return Reply(text=f"answer #{_number(req)}")

    fake.responder = respond
    sup = await harness.start(
        config=_config(),
        catalog=_catalog(**{m: (p, m, w, 300) for p, m, w, _ in plan}),
    )
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="switch")
    ends = []
    for n, (provider, model, window, path) in enumerate(plan):
        if n:
            await sup.switch_model(rec.uuid, f"{provider}/{model}")
        ends += await _talk(harness, rec.uuid, n * 40, 40)
        sent = [r for r in fake.requests if path in r.path]
        assert sent and all(r.tokens + requested_output(r) <= window for r in sent), model
        assert any(_is_summary(r) for r in sent), f"no summary made on {model}"
    assert _statuses(ends) == ["completed"] * 160
    rows = harness.store.history(rec.uuid)
    assert sum(r.kind == "user" for r in rows) == 160


async def test_context_length_answer_compacts_once_and_retries(harness):
    """The catalog thinks the window is 200k; the provider's real one is 3,000:
    its context_length answer triggers one compaction and a retry that works."""
    fake = harness.fake
    fake.windows["claude-sonnet-4-5"] = 3000

    def respond(req):
        if _is_summary(req):
            return Reply(text="Numbered prompts, all answered.")
        return Reply(text=f"answer #{_number(req)}")

    fake.responder = respond
    sup = await harness.start(config=_config(max_output_tokens=300))
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="misjudged")
    ends = await _talk(harness, rec.uuid, 0, 40)
    assert _statuses(ends) == ["completed"] * 40
    started = [e for events in ends for e in of(events, CompactionStarted)]
    assert started and {s.reason for s in started} == {"context_length"}
    refused = [r for r in fake.requests if r.tokens and r.tokens + requested_output(r) > 3000]
    # one refusal per compaction, each followed by a successful retry
    assert len(refused) == len(started)


async def test_a_prompt_larger_than_the_window_fails_with_what_to_do(harness):
    fake = harness.fake
    fake.windows["claude-sonnet-4-5"] = 2000
    fake.responder = lambda req: Reply(text="short summary") if _is_summary(req) else Reply(text="ok")
    sup = await harness.start(
        config=_config(), catalog=_catalog(a=("anthropic", "claude-sonnet-4-5", 2000, 200))
    )
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="huge")
    await _talk(harness, rec.uuid, 0, 3)
    events = await harness.turn(rec.uuid, "prompt #9 " + "x " * 6000, limit=30)
    end = of(events, TurnEnded)[-1]
    assert end.status == "error"
    assert end.error.category == "context_length"
    assert "context_window in config.json" in end.error.message
    assert "ikictl compact" in end.error.message
    # the earlier turns were compacted before giving up, the prompt is kept
    assert of(events, CompactionDone)
    assert any("prompt #9" in (r.content or "") for r in harness.store.history(rec.uuid))


async def test_a_huge_tool_result_is_cut_in_the_replay_not_in_history(harness):
    fake = harness.fake
    fake.windows["claude-sonnet-4-5"] = 8000
    big = "".join(f"line {i:05d}\n" for i in range(5000))  # 55,000 characters
    calls = iter([True])

    def respond(req):
        if _is_summary(req):
            return Reply(text="summary")
        if next(calls, False):
            return Reply(tool_calls=[ToolCall("echo", {"text": "x"}, id="call_big")])
        return Reply(text="read it")

    fake.responder = respond
    sup = await harness.start(
        tools=_tools({"output": big}),
        config=_config(),
        catalog=_catalog(a=("anthropic", "claude-sonnet-4-5", 8000, 500)),
    )
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="big")
    events = await harness.turn(rec.uuid, "prompt #1 run it", limit=30)
    assert of(events, TurnEnded)[-1].status == "completed"
    second = fake.requests[-1].json["messages"]
    result = second[-1]["content"][0]
    assert result["type"] == "tool_result"
    text = result["content"] if isinstance(result["content"], str) else result["content"][0]["text"]
    assert len(text) < 8000 * 0.25 * 4 + 400
    assert "characters cut from this tool result" in text
    assert text.startswith("line 00000") and text.rstrip().endswith("line 04999")
    stored = [r for r in harness.store.history(rec.uuid) if r.kind == "tool_result"]
    assert big in stored[0].content or big in json.dumps(stored[0].data or {}) or big in (stored[0].content or "")


async def test_manual_compaction_then_fork_and_rewind_before_it(harness):
    fake = harness.fake

    def respond(req):
        if _is_summary(req):
            return Reply(text="SUMMARY-OF-EARLY-TURNS")
        return Reply(text=f"answer #{_number(req)}")

    fake.responder = respond
    sup = await harness.start(config=_config())
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="by-hand")
    await _talk(harness, rec.uuid, 0, 3)
    await sup.history_op(rec.uuid, "mark", "before")
    await _talk(harness, rec.uuid, 3, 3)
    early = [r.id for r in harness.store.history(rec.uuid) if r.kind == "assistant"][1]
    outcome = await sup.compact(rec.uuid, keep_turns=1)
    assert outcome.compacted and outcome.messages == 10 and outcome.tokens_after < outcome.tokens_before
    # the next request: summary, then the kept turn, then the prompt
    await _talk(harness, rec.uuid, 6, 1)
    sent = json.dumps(fake.requests[-1].json["messages"])
    assert "SUMMARY-OF-EARLY-TURNS" in sent and "prompt #5" in sent and "prompt #0" not in sent
    # nothing left to compact with every turn kept
    again = await sup.compact(rec.uuid, keep_turns=50)
    assert not again.compacted and "nothing to compact" in again.reason
    # a fork at a message before the compaction replays the parent uncompacted
    child, _, _ = await sup.fork(rec.uuid, at_message=early, name="early-fork")
    await _talk(harness, child.uuid, 100, 1)
    sent = json.dumps(fake.requests[-1].json["messages"])
    assert "prompt #0" in sent and "SUMMARY-OF-EARLY-TURNS" not in sent
    # a rewind to a mark set before the compaction undoes it in the replay
    await sup.history_op(rec.uuid, "rewind", "before")
    await _talk(harness, rec.uuid, 200, 1)
    sent = json.dumps(fake.requests[-1].json["messages"])
    assert "prompt #0" in sent and "SUMMARY-OF-EARLY-TURNS" not in sent and "prompt #5" not in sent


async def test_compaction_refused_while_a_turn_runs(harness):
    fake = harness.fake
    fake.responder = lambda req: Reply(text="slow", delay=1.0)
    sup = await harness.start(config=_config())
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="busy")
    actor = await sup.live(rec.uuid)
    await sup.prompt(actor, "prompt #1")
    from agents.supervisor import AgentError

    with trio.fail_after(5):
        try:
            await sup.compact(rec.uuid)
        except AgentError as e:
            assert "running a turn" in str(e)
        else:
            raise AssertionError("compact ran during a turn")


async def test_kill_during_a_manual_compaction_answers_the_caller(harness):
    fake = harness.fake

    def respond(req):
        if _is_summary(req):
            return Reply(text="too late", delay=30)
        return Reply(text=f"answer #{_number(req)}")

    fake.responder = respond
    sup = await harness.start(config=_config())
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="doomed")
    await _talk(harness, rec.uuid, 0, 3)
    from agents.supervisor import AgentError

    outcome: list = []

    async def compact():
        try:
            await sup.compact(rec.uuid, keep_turns=1)
        except AgentError as e:
            outcome.append(str(e))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(compact)
            while not any(_is_summary(r) for r in fake.requests):
                await fake.wait_for_requests(len(fake.requests) + 1)
            await sup.kill(rec.uuid)
    assert outcome and "ended before its context was compacted" in outcome[0]
    assert not any(r.kind == "compaction" for r in harness.store.history(rec.uuid))


async def test_show_during_the_first_prompt_never_loses_the_prompt(harness):
    """`ikictl send` asks show and prompts at once: measuring the context
    must not hand the turn a second copy of it (a request with no messages)."""
    fake = harness.fake
    fake.responder = lambda req: Reply(text=f"answer #{_number(req)}")
    sup = await harness.start(config=_config())
    for n in range(20):
        rec, _, _ = await sup.create(model="claude-sonnet-4-5", name=f"race-{n}")
        actor = await sup.live(rec.uuid)
        loaded: list = []
        async with trio.open_nursery() as nursery:
            async def load(actor=actor, loaded=loaded):
                loaded.append(await actor.context())

            nursery.start_soon(load)
            nursery.start_soon(load)
            nursery.start_soon(sup.context_status, rec.uuid)
        assert loaded[0] is loaded[1]  # one list, whoever loaded it
        events = await harness.turn(rec.uuid, f"prompt #{n}")
        assert of(events, TurnEnded)[-1].status == "completed"
    assert all(r.json["messages"] for r in fake.requests)
