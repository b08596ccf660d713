"""The cross-field rules real provider APIs enforce on request bodies, so the
fake answers 400 where they do (the fake must be at least as strict as they
are). Each function takes a parsed body and returns the problem in words, or
None. Sources: the providers' API references and the 400 messages they send
(quoted beside each rule).
"""

from __future__ import annotations

import json
from typing import Any

_THINKING = ("thinking", "redacted_thinking")


def _parses(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def anthropic(body: Any) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return "messages: Field required"
    msgs = body["messages"]
    if not msgs:
        return "messages: at least one message is required"
    thinking = isinstance(body.get("thinking"), dict) and body["thinking"].get("type") == "enabled"
    if thinking:
        budget = body["thinking"].get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= body.get("max_tokens", 0):
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    for i, m in enumerate(msgs):
        content = m.get("content")
        if content in ("", []):
            return f"messages.{i}: all messages must have non-empty content"
        if not isinstance(content, list):
            continue
        if m.get("role") == "assistant" and content[-1].get("type") in _THINKING:
            return f"messages.{i}: The final block in an assistant message cannot be `thinking`."
        calls = [b["id"] for b in content if b.get("type") == "tool_use"]
        for b in content:
            if b.get("type") == "tool_use" and not isinstance(b.get("input"), dict):
                return f"messages.{i}.content: tool_use.input: Input should be a valid dictionary"
        if calls:
            nxt = msgs[i + 1]["content"] if i + 1 < len(msgs) else None
            answered = {
                b.get("tool_use_id")
                for b in (nxt if isinstance(nxt, list) else [])
                if b.get("type") == "tool_result"
            }
            if i + 1 < len(msgs) and not set(calls) <= answered:
                return (
                    f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(sorted(set(calls) - answered))}"
                )
        if m.get("role") == "user":
            prev = msgs[i - 1]["content"] if i and msgs[i - 1].get("role") == "assistant" else []
            issued = {b.get("id") for b in prev if isinstance(prev, list) and b.get("type") == "tool_use"}
            for b in content:
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in issued:
                    return (
                        f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` "
                        "blocks: each `tool_result` block must have a corresponding `tool_use` "
                        "block in the previous message."
                    )
    last = msgs[-1]
    if thinking and last.get("role") == "user" and isinstance(last.get("content"), list):
        in_loop = any(b.get("type") == "tool_result" for b in last["content"])
        prev = msgs[-2] if len(msgs) > 1 else None
        if in_loop and prev is not None and isinstance(prev.get("content"), list):
            first = prev["content"][0].get("type")
            if first not in _THINKING:
                return (
                    f"messages.{len(msgs) - 2}.content.0.type: Expected `thinking` or "
                    f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, a "
                    "final `assistant` message must start with a thinking block."
                )
    return None


def openai_chat(body: Any) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return "Missing required parameter: 'messages'."
    msgs = body["messages"]
    # DeepSeek's thinking mode (the ``thinking`` toggle on): every assistant
    # message with tool calls must carry its reasoning_content back
    deepseek_thinking = isinstance(body.get("thinking"), dict) and body["thinking"].get("type") == "enabled"
    pending: set[str] = set()
    for i, m in enumerate(msgs):
        role = m.get("role")
        if pending and role != "tool":
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(sorted(pending))}"
            )
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if not m.get("content") and not calls and not m.get("reasoning_content"):
                return f"messages[{i}]: an assistant message needs content or tool_calls"
            for c in calls:
                if not _parses(c.get("function", {}).get("arguments")):
                    return f"messages[{i}].tool_calls: function.arguments is not valid JSON"
            if calls and deepseek_thinking and not isinstance(m.get("reasoning_content"), str):
                return "The reasoning_content in the thinking mode must be passed back to the API."
            pending = {c.get("id") for c in calls}
        elif role == "tool":
            if m.get("tool_call_id") not in pending:
                return (
                    f"messages[{i}]: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'."
                )
            pending.discard(m.get("tool_call_id"))
    return None


def openai_responses(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "body must be an object"
    cap = body.get("max_output_tokens")
    if cap is not None and (not isinstance(cap, int) or cap < 16):
        return (
            f"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, "
            f"but got {cap} instead."
        )
    items = body.get("input")
    if not isinstance(items, list):
        return None
    calls: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "reasoning":
            nxt = items[i + 1] if i + 1 < len(items) else None
            nxt_kind = None if nxt is None else nxt.get("type") or "message"
            if nxt is None or nxt_kind == "function_call_output" or nxt.get("role") == "user":
                return (
                    f"Item '{item.get('id')}' of type 'reasoning' was provided without its "
                    "required following item."
                )
        elif kind == "function_call":
            if not _parses(item.get("arguments")):
                return f"input[{i}].arguments: not valid JSON"
            calls.add(item.get("call_id"))
        elif kind == "function_call_output" and item.get("call_id") not in calls:
            return f"No tool call found for function call output with call_id {item.get('call_id')}."
    return None


_LEVELS = ("MINIMAL", "LOW", "MEDIUM", "HIGH")


def google(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "body must be an object"
    config = (body.get("generationConfig") or {}).get("thinkingConfig") or {}
    if "thinkingLevel" in config:
        if config["thinkingLevel"] not in _LEVELS:
            return (
                "Invalid value at 'generation_config.thinking_config.thinking_level' "
                f"({config['thinkingLevel']!r}): expected one of {', '.join(_LEVELS)}"
            )
        if "thinkingBudget" in config:
            return "thinking_budget and thinking_level are mutually exclusive"
    for i, c in enumerate(body.get("contents") or []):
        for part in c.get("parts") or []:
            call = part.get("functionCall")
            if call is not None and not isinstance(call.get("args", {}), dict):
                return f"contents[{i}]: functionCall.args must be an object"
    return None


def refusal(rule: Any, request: Any, code: str) -> Any:
    """A wire module's ``reject``: the 400 the real API answers, or None."""
    from .script import HttpError

    problem = rule(request.json)
    return None if problem is None else HttpError(400, problem, code=code)
