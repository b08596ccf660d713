"""The demo responder: answers any prompt plausibly, in whatever wire format
the request came in on, so the offline demo (and ikictl's end-to-end tests)
have something real-looking to stream.

- thinking text when the request turns thinking on;
- a short answer streamed in small pieces with small delays;
- a ``bash`` tool call (``echo hello from a tool``) when the prompt asks for a
  tool, then, once the tool's result comes back, an answer quoting it;
- a long, slow answer when the prompt asks for something long (a story, an
  essay...), so ``cancel`` has something to cancel;
- JSON matching the schema a request asks for (demo_json.py), filled from
  the prompt's ``Key: value`` lines.

Deterministic: the same prompt gets the same answer.
"""

from __future__ import annotations

from typing import Any

from .demo_json import ANSWER_TOOL, asked_schema, fields_of, value_for
from .recorded import RecordedRequest
from .script import Reply, ToolCall, Usage

TOOL_COMMAND = "echo hello from a tool"
DELAY = 0.03  # seconds before each streamed piece
SLOW_DELAY = 0.25
LONG_PIECES = 120  # x SLOW_DELAY: half a minute of story


def _text_of(content: Any) -> str:
    """The plain text in a message's content, whatever the wire's shape."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, str):
                parts.append(c)
            elif isinstance(c, dict):
                if isinstance(c.get("text"), str):
                    parts.append(c["text"])
                elif c.get("type") == "tool_result":
                    parts.append(_text_of(c.get("content")))
                elif isinstance(c.get("functionResponse"), dict):
                    parts.append(_text_of(c["functionResponse"].get("response")))
        return "\n".join(parts)
    if isinstance(content, dict):
        for key in ("output", "content", "result", "text"):
            if key in content:
                return _text_of(content[key])
    return ""


def last_turn(body: Any) -> tuple[str, str | None, int]:
    """(the last user text, the last tool result's text or None, characters of
    the whole conversation) from an Anthropic, OpenAI Chat / Responses or Gemini body."""
    if not isinstance(body, dict):
        return "", None, 0
    items: list[Any] = body.get("messages") or body.get("contents") or []
    if isinstance(body.get("input"), list):
        items = body["input"]
    elif isinstance(body.get("input"), str):
        return body["input"], None, len(body["input"])
    size = len(str(items)) + len(str(body.get("system") or body.get("instructions") or ""))
    user_text = ""
    tool_text: str | None = None
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        role = item.get("role")
        kind = item.get("type")
        content = item.get("content", item.get("parts"))
        if kind == "function_call_output" or role == "tool":
            tool_text = _text_of(item.get("output", content)) if tool_text is None else tool_text
            break
        if isinstance(content, list) and any(
            isinstance(c, dict) and (c.get("type") == "tool_result" or "functionResponse" in c) for c in content
        ):
            tool_text = _text_of(content)
            break
        if role == "user":
            user_text = _text_of(content)
            break
        if role in ("assistant", "model") or kind in ("function_call", "reasoning", "message"):
            break
    return user_text, tool_text, size


def thinking_on(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    t = body.get("thinking")
    if isinstance(t, dict) and t.get("type") in ("enabled", "adaptive"):
        return True
    effort = body.get("reasoning_effort")
    if isinstance(effort, str) and effort not in ("none", "minimal"):
        return True
    r = body.get("reasoning")
    if isinstance(r, dict) and r.get("enabled") is not False and r.get("effort") not in (None, "none", "minimal"):
        return True
    gen = body.get("generationConfig") or {}
    tc = gen.get("thinkingConfig") if isinstance(gen, dict) else None
    if isinstance(tc, dict):
        if tc.get("includeThoughts") or tc.get("thinkingLevel"):
            return True
        budget = tc.get("thinkingBudget")
        if isinstance(budget, int) and budget != 0:
            return True
    return False


def _wants_tool(text: str) -> bool:
    t = text.lower()
    return any(w in t for w in ("tool", "bash", "run ", "command", "shell"))


def _wants_long(text: str) -> bool:
    t = text.lower()
    return any(w in t for w in ("long", "story", "essay", "slow"))


def _tokens(chars: int) -> int:
    return max(1, chars // 4)


def answer_for(prompt: str) -> str:
    """The short answer to a prompt (deterministic)."""
    p = " ".join(prompt.split())
    lowered = p.lower()
    if "ikigai" in lowered:
        return (
            "Ikigai is a Japanese idea: a reason for being, found where what you love, "
            "what you are good at, what the world needs and what you can be paid for meet."
        )
    if "summar" in lowered:
        return "So far we talked about ikigai, ran a tool that said hello, and I summarised it."
    if lowered.strip(" !.?") == "hi" or lowered.startswith(("hi ", "hello")):
        return "Hello! I am the offline demo model. Ask me anything."
    short = p if len(p) <= 60 else p[:57] + "..."
    return f"You said: {short}. This answer comes from the offline fake provider."


def demo_responder(request: RecordedRequest) -> Reply | None:
    body = request.json
    if not isinstance(body, dict):
        return None
    prompt, tool_result, size = last_turn(body)
    thinking = thinking_on(body)
    tools = bool(body.get("tools"))
    schema, by_tool = asked_schema(body)
    if schema is not None and (tool_result is None or by_tool):
        # a corrective retry: the fields are in the turn's prompt, before it
        return _structured(schema, by_tool, _user_texts(body), size)
    if tool_result is not None:
        out = tool_result.strip().splitlines()[0] if tool_result.strip() else "(nothing)"
        text = f"The tool ran and printed: {out}"
        think = "The tool answered; I report what it printed." if thinking else ""
        return _reply(text, think, size, pieces=4)
    if _wants_tool(prompt) and tools:
        think = "The user wants a tool run. bash with echo will do." if thinking else ""
        return Reply(
            text="Let me run that for you.",
            thinking=think,
            tool_calls=[ToolCall(name="bash", arguments={"command": TOOL_COMMAND})],
            usage=Usage(input=_tokens(size), output=20, thinking=_tokens(len(think))),
            pieces=3,
            delay=DELAY,
        )
    if _wants_long(prompt):
        sentence = "Once upon a time an agent told a very long story, one slow word at a time. "
        text = sentence * 12
        return _reply(text, "", size, pieces=LONG_PIECES, delay=SLOW_DELAY)
    think = f"The user asks: {' '.join(prompt.split())[:80]}. A short, friendly answer fits." if thinking else ""
    return _reply(answer_for(prompt), think, size, pieces=8)


def _user_texts(body: dict[str, Any]) -> str:
    """Every user message's text, oldest first (Key: value lines are read from them)."""
    items = body.get("messages") or body.get("contents") or body.get("input") or []
    texts = [
        _text_of(item.get("content", item.get("parts")))
        for item in items if isinstance(item, dict) and item.get("role") == "user"
    ]
    return "\n".join(texts)


def _structured(schema: dict[str, Any], by_tool: bool, prompt: str, size: int) -> Reply:
    """A schema's answer, from the prompt's ``Key: value`` lines."""
    import json

    value = value_for(schema, fields_of(prompt))
    if by_tool:
        return Reply(
            tool_calls=[ToolCall(name=ANSWER_TOOL, arguments=value)],
            usage=Usage(input=_tokens(size), output=20),
            delay=DELAY,
        )
    return _reply(json.dumps(value), "", size, pieces=4)


def _reply(text: str, thinking: str, size: int, *, pieces: int, delay: float = DELAY) -> Reply:
    return Reply(
        text=text,
        thinking=thinking,
        usage=Usage(input=_tokens(size), output=_tokens(len(text) + len(thinking)), thinking=_tokens(len(thinking)) if thinking else 0),
        pieces=pieces,
        delay=delay,
    )
