"""Every request a provider will accept, across switches (issue 21): 4 wire
APIs x a switch to each other API x {plain, mid tool loop, after a cut-off
reply} x thinking {none, high}. The fake refuses what the real APIs refuse
(tests/fakes/rules.py), so a turn that completes is a request that was valid.

"mid tool loop" is reached two ways: a fallback in the middle of a loop
(the step after the tool runs on the other API) and a turn stopped by the
tool-turn limit, followed by a prompt on the other API.
"""

from __future__ import annotations

import pytest

from agents import AgentConfig, RetryPolicy
from agents.events import TurnEnded
from agents.tools import ToolOutput, ToolRegistry, ToolSpec
from tests.agents.conftest import KEYS, of
from tests.fakes import rules
from tests.fakes.script import HttpError, Reply, ToolCall

# one thinking-capable model per wire API
MODELS = {
    "messages": "anthropic/claude-sonnet-4-5",
    "responses": "openai/gpt-5",
    "chat": "deepseek/deepseek-v4-flash",
    "generate_content": "google/gemini-3-flash-preview",
}
ENV = {**KEYS, "DEEPSEEK_API_KEY": "test-deepseek-key"}


def _api_of(path: str) -> str:
    if path.endswith("/messages"):
        return "messages"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    return "generate_content"


_RULES = {
    "messages": rules.anthropic,
    "responses": rules.openai_responses,
    "chat": rules.openai_chat,
    "generate_content": rules.google,
}


def _tools() -> ToolRegistry:
    reg = ToolRegistry()

    async def echo(args, ctx):
        return ToolOutput(str(args.get("text", "")).upper())

    reg.register(ToolSpec("echo", "Shout", {"type": "object", "properties": {"text": {"type": "string"}}}, echo))
    return reg


def _thoughtful(**kw) -> Reply:
    return Reply(thinking="considering it", thinking_signature="c2lnbmVk", **kw)


class Script:
    """Replies by wire API, each request checked against that API's rules first."""

    def __init__(self) -> None:
        self.replies: dict[str, list[Reply]] = {api: [] for api in MODELS}
        self.refused: list[str] = []
        self.seen: list[str] = []

    def __call__(self, req) -> Reply:
        api = _api_of(req.path)
        self.seen.append(api)
        problem = _RULES[api](req.json)
        if problem is not None:
            self.refused.append(f"{api}: {problem}")
            return Reply(fault=HttpError(400, problem, code="invalid_request_error"))
        queue = self.replies[api]
        return queue.pop(0) if queue else _thoughtful(text="fine")


CASES = [
    (src, dst, state, level)
    for src in MODELS
    for dst in MODELS
    if dst != src
    for state in ("plain", "fallback_mid_loop", "tool_limit", "cut_off")
    for level in ("none", "high")
]


@pytest.mark.parametrize(("src", "dst", "state", "level"), CASES, ids=["-".join(c) for c in CASES])
async def test_every_request_is_accepted(harness, src, dst, state, level):
    config = AgentConfig(
        retry=RetryPolicy(base_delay=0.001, jitter=0.0, max_attempts_patient=1),
        fallbacks=[MODELS[dst]] if state == "fallback_mid_loop" else [],
        max_tool_turns=1 if state == "tool_limit" else 8,
    )
    sup = await harness.start(config=config, tools=_tools(), env=ENV)
    script = Script()
    harness.fake.responder = script
    call = ToolCall("echo", {"text": "hi"}, id="call_1")
    if state == "fallback_mid_loop":
        # src calls a tool, then is overloaded: the step after the tool runs on dst
        script.replies[src] = [
            _thoughtful(tool_calls=[call]),
            Reply(fault=HttpError(529, "Overloaded", code="overloaded_error")),
        ]
    elif state == "tool_limit":
        script.replies[src] = [_thoughtful(tool_calls=[call])]
    elif state == "cut_off":
        # a reply cut off by the output limit while still reasoning
        script.replies[src] = [_thoughtful(finish="length")]
    await sup.create(model=f"{MODELS[src]}/{level}", name="m")
    first = of(await harness.turn("m", "shout hi"), TurnEnded)[0]
    assert first.error is None, f"first turn: {first.error}\nrefused: {script.refused}"
    if state != "fallback_mid_loop":
        await sup.switch_model("m", f"{MODELS[dst]}/{level}")
    # two more turns on dst, the first of them with a tool call: all accepted
    script.replies[dst] = [_thoughtful(tool_calls=[ToolCall("echo", {"text": "x"}, id="call_2")])]
    for prompt in ("and now?", "once more"):
        ended = of(await harness.turn("m", prompt), TurnEnded)[0]
        assert ended.error is None, f"{prompt}: {ended.error}\nrefused: {script.refused}"
    assert not script.refused
    assert dst in script.seen
