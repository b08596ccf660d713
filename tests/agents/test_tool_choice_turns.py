"""A prompt's tool choice through the real supervisor and turn loop, over
loopback to the fake provider, on the four wire APIs: a forced tool
(``required`` or a name) on the turn's first model call only, ``none`` on
each call, each in its API's own spelling; with Anthropic thinking, the
forced call goes without thinking and a notice says so."""

from __future__ import annotations

import pytest

from agents import AgentConfig, RetryPolicy
from agents.events import Notice, TurnEnded
from agents.tools import ToolOutput, ToolRegistry, ToolSpec
from providers.types import ToolChoice
from tests.agents.conftest import collect_turn, of
from tests.fakes import rules
from tests.fakes.script import HttpError, Reply, ToolCall

MODELS = {
    "messages": "claude-sonnet-4-5",
    "chat": "gpt-4o",
    "responses": "gpt-5",
    "generate_content": "gemini-2.5-flash",
}
_RULES = {
    "messages": rules.anthropic,
    "chat": rules.openai_chat,
    "responses": rules.openai_responses,
    "generate_content": rules.google,
}


def _api_of(path: str) -> str:
    if path.endswith("/messages"):
        return "messages"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    return "generate_content"


def _tools() -> ToolRegistry:
    reg = ToolRegistry()

    async def echo(args, ctx):
        return ToolOutput(str(args.get("text", "")).upper())

    async def clock(args, ctx):
        return ToolOutput("noon")

    reg.register(ToolSpec("echo", "Shout", {"type": "object", "properties": {"text": {"type": "string"}}}, echo))
    reg.register(ToolSpec("clock", "The time", {"type": "object", "properties": {}}, clock))
    return reg


def wire_choice(api: str, body: dict) -> object:
    """The tool choice a request body asks for, read back to one spelling:
    "auto", "none", "required" or ("tool", NAME); None when it says nothing
    (the API's default: auto)."""
    if api == "messages":
        tc = body.get("tool_choice")
        if tc is None:
            return None
        kind = {"auto": "auto", "none": "none", "any": "required", "tool": "tool"}[tc["type"]]
        return ("tool", tc["name"]) if kind == "tool" else kind
    if api in ("chat", "responses"):
        tc = body.get("tool_choice")
        if isinstance(tc, dict):
            assert tc["type"] == "function"
            return ("tool", tc["function"]["name"] if api == "chat" else tc["name"])
        return tc
    config = (body.get("toolConfig") or {}).get("functionCallingConfig")
    if config is None:
        return None
    if config["mode"] == "ANY" and config.get("allowedFunctionNames"):
        assert len(config["allowedFunctionNames"]) == 1
        return ("tool", config["allowedFunctionNames"][0])
    return {"ANY": "required", "NONE": "none", "AUTO": "auto"}[config["mode"]]


def _free(choice: object) -> bool:
    """The model decides (said, or left to the API's default)."""
    return choice in (None, "auto")


class Script:
    """Replies in order; every request first checked against its API's rules
    (tests/fakes/rules.py), and the forced ones against Anthropic's rule on
    thinking (400 "Thinking may not be enabled when tool_choice forces tool use")."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.refused: list[str] = []
        self.bodies: list[tuple[str, dict]] = []

    def __call__(self, req) -> Reply:
        api = _api_of(req.path)
        body = req.json
        self.bodies.append((api, body))
        problem = _RULES[api](body)
        forced = wire_choice(api, body)
        thinking = (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
        if problem is None and api == "messages" and thinking and not _free(forced) and forced != "none":
            problem = "Thinking may not be enabled when tool_choice forces tool use."
        if problem is not None:
            self.refused.append(f"{api}: {problem}")
            return Reply(fault=HttpError(400, problem, code="invalid_request_error"))
        return self.replies.pop(0) if self.replies else Reply(text="done")


async def _turn(harness, name: str, text: str, choice: ToolChoice | None) -> list:
    actor = await harness.sup.live(name)
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    turn, _ = await harness.sup.prompt(actor, text, tool_choice=choice)
    return await collect_turn(sub, turn)


ASKED = {
    "required": (ToolChoice(mode="required"), "required"),
    "named": (ToolChoice(mode="tool", name="clock"), ("tool", "clock")),
}


@pytest.mark.parametrize("api", list(MODELS))
@pytest.mark.parametrize("asked", list(ASKED))
async def test_a_forced_tool_is_asked_on_the_first_call_only(harness, api, asked):
    """The first call forces the tool in the API's own spelling; the call
    after the tool ran leaves the model free, so the turn can end; the next
    turn, asked nothing, is free from its first call."""
    sup = await harness.start(tools=_tools())
    script = Script(Reply(tool_calls=[ToolCall("clock", {}, id="call_1")]), Reply(text="it is noon"))
    harness.fake.responder = script
    await sup.create(model=MODELS[api], name="t")
    choice, spelled = ASKED[asked]
    events = await _turn(harness, "t", "what time is it?", choice)
    [ended] = of(events, TurnEnded)
    assert ended.status == "completed", (ended.error, script.refused)
    assert not script.refused
    calls = [(a, b) for a, b in script.bodies]
    assert len(calls) == 2 and {a for a, _ in calls} == {api}
    assert wire_choice(api, calls[0][1]) == spelled, calls[0][1]
    assert _free(wire_choice(api, calls[1][1])), calls[1][1]
    # the turn's own, not the agent's: the next prompt is free again
    await _turn(harness, "t", "thanks", None)
    assert _free(wire_choice(api, script.bodies[-1][1]))
    assert not of(events, Notice)  # no thinking to turn off, nothing to say


@pytest.mark.parametrize("api", list(MODELS))
async def test_none_holds_for_every_call_of_the_turn(harness, api):
    """"none" on each call, even after a model that called a tool anyway;
    the tools are still listed (an API refuses tool calls in the history of
    a request that declares none)."""
    sup = await harness.start(tools=_tools())
    script = Script(
        Reply(tool_calls=[ToolCall("echo", {"text": "x"}, id="call_1")]),
        Reply(tool_calls=[ToolCall("echo", {"text": "y"}, id="call_2")]),
        Reply(text="in words then"),
    )
    harness.fake.responder = script
    await sup.create(model=MODELS[api], name="t")
    events = await _turn(harness, "t", "no tools please", ToolChoice(mode="none"))
    [ended] = of(events, TurnEnded)
    assert ended.status == "completed", (ended.error, script.refused)
    assert not script.refused
    assert len(script.bodies) == 3
    for _, body in script.bodies:
        assert wire_choice(api, body) == "none", body
        assert "tools" in body
    await _turn(harness, "t", "and now?", None)
    assert _free(wire_choice(api, script.bodies[-1][1]))


async def test_anthropic_thinking_is_off_for_the_forced_call_and_a_notice_says_so(harness):
    """Anthropic refuses thinking with a forced tool: the forced call goes
    without it (and says so), the rest of that tool loop too (a loop goes on
    with thinking only from a thinking block), the next turn thinks again."""
    sup = await harness.start(tools=_tools())
    script = Script(
        Reply(tool_calls=[ToolCall("echo", {"text": "hi"}, id="call_1")]),
        Reply(text="HI it is", thinking="so", thinking_signature="c2ln"),
    )
    harness.fake.responder = script
    await sup.create(model="claude-sonnet-4-5/high", name="t")
    events = await _turn(harness, "t", "shout hi", ToolChoice(mode="tool", name="echo"))
    [ended] = of(events, TurnEnded)
    assert ended.status == "completed", (ended.error, script.refused)
    assert not script.refused
    first, second = (b for _, b in script.bodies)
    assert wire_choice("messages", first) == ("tool", "echo")
    assert "thinking" not in first
    assert _free(wire_choice("messages", second))
    notes = [n.text for n in of(events, Notice)]
    assert sum("Anthropic takes no thinking with a forced tool (tool_choice: echo)" in t for t in notes) == 1
    harness.fake.responder = Script(Reply(text="again", thinking="hmm", thinking_signature="c2ln"))
    await _turn(harness, "t", "and now?", None)
    assert harness.fake.requests[-1].json["thinking"]["type"] == "enabled"


async def test_a_forced_call_retried_and_fallen_back_stays_forced(harness):
    """The first call is the first answer's: a retry and a fallback to
    another API, before any answer, still force the tool; the step after the
    tool ran (back on the agent's own model) is free."""
    config = AgentConfig(retry=RetryPolicy(base_delay=0.001, jitter=0.0, max_attempts_patient=2), fallbacks=["gpt-4o"])
    sup = await harness.start(tools=_tools(), config=config)
    overloaded = Reply(fault=HttpError(529, "Overloaded", code="overloaded_error"))
    script = Script(overloaded, overloaded, Reply(tool_calls=[ToolCall("clock", {}, id="call_1")]), Reply(text="noon"))
    harness.fake.responder = script
    await sup.create(model="claude-sonnet-4-5", name="t")
    events = await _turn(harness, "t", "time?", ToolChoice(mode="tool", name="clock"))
    assert of(events, TurnEnded)[0].status == "completed", script.refused
    apis = [a for a, _ in script.bodies]
    assert apis == ["messages", "messages", "chat", "messages"], apis
    assert [wire_choice(a, b) for a, b in script.bodies[:3]] == [("tool", "clock")] * 3
    assert _free(wire_choice("messages", script.bodies[3][1]))


async def test_a_named_tool_gone_by_the_turn_leaves_the_choice_to_the_model(harness):
    """The daemon refuses a name the agent lacks; one gone between the prompt
    and its turn (its MCP server down, say) is not sent (an API would refuse
    it): the model chooses, and a notice says why."""
    sup = await harness.start(tools=_tools())
    script = Script(Reply(text="fine"))
    harness.fake.responder = script
    await sup.create(model="gpt-4o", name="t")
    events = await _turn(harness, "t", "go", ToolChoice(mode="tool", name="vanished"))
    assert of(events, TurnEnded)[0].status == "completed"
    assert wire_choice("chat", script.bodies[0][1]) == "auto"
    assert any("vanished is no longer a tool of the agent" in n.text for n in of(events, Notice))
