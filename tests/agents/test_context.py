"""The replay each provider accepts (issue 21 items 1 and 3): pure rules over
Messages, checked on the bodies the real encoders produce."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agents.context import for_provider, step_thinking
from providers.anthropic.codec import AnthropicCodec
from providers.openai.responses import ResponsesCodec
from providers.settings import settings_for
from providers.types import (
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    ThinkingConfig,
    ToolCallBlock,
    ToolResultBlock,
)

SIGNED = ThinkingBlock(text="let me think", signature="sig-anthropic", provider="anthropic")
REASONING = ThinkingBlock(
    text="", signature="enc-openai", provider="openai", provider_data={"id": "rs_1"}
)
CALL = ToolCallBlock(id="call_1", name="bash", arguments={"command": "ls"})
RESULT = Message(role="tool", content=[ToolResultBlock(tool_call_id="call_1", content="a b", name="bash")])
ANTHROPIC = AnthropicCodec(settings_for("anthropic", env={"ANTHROPIC_API_KEY": "sk-ant-test"}))
RESPONSES = ResponsesCodec(settings_for("openai", env={"OPENAI_API_KEY": "sk-test"}, api="responses"))
USER = Message(role="user", content=[TextBlock(text="list the files")])


def _assistant(provider: str, *blocks, model: str = "m") -> Message:
    return Message(role="assistant", content=list(blocks), provider=provider, model=model)


def _anthropic_body(messages: list[Message], level: str) -> dict:
    return ANTHROPIC.body(
        Request(model="claude-sonnet-4-5", messages=messages, thinking=ThinkingConfig(level=level)),
        stream=True,
    )


def _anthropic_accepts(body: dict) -> bool:
    """Anthropic's rules on thinking in a request (the 400s it answers)."""
    msgs = body["messages"]
    for m in msgs:
        content = m["content"]
        if m["role"] == "assistant" and isinstance(content, list) and (
            not content or content[-1]["type"] in ("thinking", "redacted_thinking")
        ):
            return False  # "the final block in an assistant message cannot be thinking"
    if "thinking" in body and body["thinking"].get("type") == "enabled":
        last = msgs[-1]
        tool_loop = last["role"] == "user" and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"]
        )
        if tool_loop:
            answered = msgs[-2]
            if answered["content"][0]["type"] not in ("thinking", "redacted_thinking"):
                return False  # "Expected `thinking` ... found `tool_use`"
    return True


def test_a_tool_loop_begun_on_openai_continues_on_anthropic_without_thinking():
    history = [USER, _assistant("openai", REASONING, CALL, model="gpt-5"), RESULT]
    replay = for_provider(history, "anthropic")
    assert _anthropic_body(replay, "high").get("thinking") is not None
    assert not _anthropic_accepts(_anthropic_body(replay, "high"))  # what was sent before
    level, reason = step_thinking(replay, provider="anthropic", api="messages", level="high")
    assert level == "none" and "openai/gpt-5" in reason
    assert _anthropic_accepts(_anthropic_body(replay, level))


def test_anthropic_keeps_thinking_when_the_loop_is_its_own():
    history = [USER, _assistant("anthropic", SIGNED, CALL), RESULT]
    replay = for_provider(history, "anthropic")
    assert step_thinking(replay, provider="anthropic", api="messages", level="med") == ("med", None)
    assert _anthropic_accepts(_anthropic_body(replay, "med"))


def test_a_new_turn_thinks_again_and_other_apis_are_untouched():
    history = [USER, _assistant("openai", CALL), RESULT, _assistant("openai", TextBlock(text="done")), USER]
    replay = for_provider(history, "anthropic")
    assert step_thinking(replay, provider="anthropic", api="messages", level="high") == ("high", None)
    loop = for_provider([USER, _assistant("openai", CALL), RESULT], "google")
    for api in ("chat", "responses", "generate_content"):
        assert step_thinking(loop, provider="x", api=api, level="high") == ("high", None)


def test_a_reply_cut_off_while_thinking_is_not_replayed_but_kept():
    cut = _assistant("anthropic", SIGNED)
    history = [USER, cut, USER]
    replay = for_provider(history, "anthropic")
    # the two prompts the dropped reply separated go as one user message
    assert cut not in replay and len(replay) == 1
    assert replay[0].content == [*USER.content, *USER.content]
    assert _anthropic_accepts(_anthropic_body(replay, "high"))
    assert history[1] is cut  # the stored history is not touched
    # text then a trailing thought: the text stays, the thought goes
    tail = _assistant("anthropic", SIGNED, TextBlock(text="partial"), SIGNED)
    (kept,) = [m for m in for_provider([USER, tail], "anthropic") if m.role == "assistant"]
    assert [type(b) for b in kept.content] == [ThinkingBlock, TextBlock]


def test_responses_never_gets_reasoning_without_its_following_item():
    history = [USER, _assistant("openai", REASONING), USER]
    body = RESPONSES.body(Request(model="gpt-5", messages=for_provider(history, "openai")), stream=True)
    items = body["input"]
    for i, item in enumerate(items):
        if item.get("type") == "reasoning":
            assert i + 1 < len(items) and items[i + 1].get("role") != "user"
    assert not any(item.get("type") == "reasoning" for item in items)


_blocks = st.lists(
    st.sampled_from([SIGNED, REASONING, CALL, TextBlock(text="t"), ThinkingBlock(text="x")]),
    max_size=5,
)


@given(st.lists(st.tuples(st.sampled_from(["anthropic", "openai", "google"]), _blocks), max_size=6))
def test_no_replayed_assistant_message_is_empty_or_ends_in_thinking(turns):
    history = []
    for provider, blocks in turns:
        history += [USER, _assistant(provider, *blocks)]
    for target in ("anthropic", "openai", "google"):
        for m in for_provider(history, target):
            if m.role == "assistant":
                assert m.content and not isinstance(m.content[-1], ThinkingBlock)
                if m.provider != target:  # another provider's reasoning is never sent
                    assert not any(isinstance(b, ThinkingBlock) for b in m.content)


def test_a_prompt_after_a_turn_stopped_inside_its_loop_counts_as_in_the_loop():
    history = [USER, _assistant("openai", CALL), RESULT, USER]
    replay = for_provider(history, "anthropic")
    assert not _anthropic_accepts(_anthropic_body(replay, "high"))
    level, _ = step_thinking(replay, provider="anthropic", api="messages", level="high")
    assert level == "none" and _anthropic_accepts(_anthropic_body(replay, level))
