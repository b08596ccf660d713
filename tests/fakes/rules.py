"""The cross-field rules real provider APIs enforce on request bodies, so the
fake answers 400 where they do (the fake must be at least as strict as they
are). Each function takes a parsed body and returns the problem in words, or
None. Sources: the providers' API references and the 400 messages they send
(quoted beside each rule).
"""

from __future__ import annotations

import binascii
import json
from typing import Any

from . import attachment_rules, schema_rules

_THINKING = ("thinking", "redacted_thinking")
# the image types each API takes (Anthropic and OpenAI: the same four)
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_GEMINI_IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif")
_MAX_IMAGE = 5 * 1024 * 1024  # Anthropic: "image exceeds 5 MB maximum"


def _base64(data: Any) -> bool:
    if not isinstance(data, str) or not data:
        return False
    try:
        binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _anthropic_result(where: str, content: Any) -> str | None:
    """A tool_result's content: a string or a list of text and image blocks."""
    if content is None or isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"{where}.content: Input should be a valid string or list"
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        at = f"{where}.content.{j}"
        if kind == "text":
            if not isinstance(part.get("text"), str) or not part["text"]:
                return f"{at}: text content blocks must be non-empty"
        elif kind == "image":
            source = part.get("source")
            if not isinstance(source, dict):
                return f"{at}.source: Field required"
            if source.get("type") == "url":
                if not isinstance(source.get("url"), str):
                    return f"{at}.source.url: Input should be a valid string"
                continue
            if source.get("type") != "base64":
                return f"{at}.source.type: Input should be 'base64' or 'url'"
            if source.get("media_type") not in _IMAGE_TYPES:
                return (
                    f"{at}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', "
                    "'image/gif' or 'image/webp'"
                )
            if not _base64(source.get("data")):
                return f"{at}.source.base64.data: The image data is not valid base64"
            if len(source["data"]) > _MAX_IMAGE:
                return f"{at}.source.base64: image exceeds 5 MB maximum"
        elif kind not in ("search_result", "document"):
            return f"{at}.type: Input tag {kind!r} does not match any of the expected tags"
    return None


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
    if (problem := schema_rules.anthropic(body)) is not None:  # the answer's schema
        return problem
    if (problem := attachment_rules.anthropic(body)) is not None:  # pictures, documents
        return problem
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
        for j, b in enumerate(content):
            if b.get("type") == "tool_use" and not isinstance(b.get("input"), dict):
                return f"messages.{i}.content: tool_use.input: Input should be a valid dictionary"
            if b.get("type") == "tool_result":
                problem = _anthropic_result(f"messages.{i}.content.{j}", b.get("content"))
                if problem is not None:
                    return problem
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
    if (problem := schema_rules.openai_chat(body)) is not None:  # the answer's schema
        return problem
    if (problem := attachment_rules.openai_chat(body)) is not None:  # pictures, documents
        return problem
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
            content = m.get("content")
            if isinstance(content, list) and any(
                not isinstance(p, dict) or p.get("type") != "text" for p in content
            ):
                return (
                    "Image URLs are only allowed for messages with role 'user', but this "
                    f"message with role 'tool' contains an image URL. (messages[{i}])"
                )
            if not isinstance(content, (str, list)):
                return f"messages[{i}].content: expected a string or an array of text parts"
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
    if (problem := schema_rules.openai_responses(body)) is not None:  # the answer's schema
        return problem
    if (problem := attachment_rules.openai_responses(body)) is not None:  # pictures, documents
        return problem
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
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                return f"No tool call found for function call output with call_id {item.get('call_id')}."
            problem = _responses_output(i, item.get("output"))
            if problem is not None:
                return problem
    return None


def _responses_output(i: int, output: Any) -> str | None:
    """A function_call_output's output: a string or a list of input_text,
    input_image and input_file parts."""
    if isinstance(output, str):
        return None
    if not isinstance(output, list):
        return f"Invalid type for 'input[{i}].output': expected a string or an array"
    for j, part in enumerate(output):
        kind = part.get("type") if isinstance(part, dict) else None
        at = f"input[{i}].output[{j}]"
        if kind == "input_text":
            if not isinstance(part.get("text"), str):
                return f"Missing required parameter: '{at}.text'."
        elif kind == "input_image":
            url = part.get("image_url")
            if not isinstance(url, str) and not isinstance(part.get("file_id"), str):
                return f"Missing required parameter: '{at}.image_url'."
            if isinstance(url, str) and url.startswith("data:"):
                head, _, data = url.partition(",")
                kind_of = head[len("data:") :].removesuffix(";base64")
                if not head.endswith(";base64") or kind_of not in _IMAGE_TYPES:
                    return f"Invalid '{at}.image_url': expected a base64-encoded data URL of an image."
                if not _base64(data):
                    return f"Invalid '{at}.image_url'. Expected a base64-encoded data URL with an image MIME type."
        elif kind != "input_file":
            return (
                f"Invalid value: '{kind}'. Supported values are: 'input_text', 'input_image', "
                f"and 'input_file'. ({at}.type)"
            )
    return None


_LEVELS = ("MINIMAL", "LOW", "MEDIUM", "HIGH")


def google(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "body must be an object"
    if (problem := schema_rules.google(body)) is not None:  # the answer's schema
        return problem
    if (problem := attachment_rules.google(body)) is not None:  # pictures, documents
        return problem
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
            reply = part.get("functionResponse")
            if reply is not None:
                problem = _gemini_response(f"contents[{i}].parts.functionResponse", reply)
                if problem is not None:
                    return problem
    return None


def _gemini_response(where: str, reply: Any) -> str | None:
    """A functionResponse: an object ``response``; ``parts`` (Gemini 3's
    multimodal function responses) each one inlineData or fileData."""
    if not isinstance(reply, dict) or not isinstance(reply.get("response", {}), dict):
        return f"Invalid value at '{where}.response' (type.googleapis.com/google.protobuf.Struct)"
    parts = reply.get("parts", [])
    if not isinstance(parts, list):
        return f"Invalid value at '{where}.parts': expected a list"
    for j, p in enumerate(parts):
        at = f"{where}.parts[{j}]"
        if not isinstance(p, dict) or set(p) - {"inlineData", "fileData"} or len(p) != 1:
            return f"Invalid JSON payload received. Unknown name in '{at}': only inlineData or fileData"
        blob = p.get("inlineData")
        if blob is not None:
            kind = blob.get("mimeType") if isinstance(blob, dict) else None
            if not isinstance(kind, str) or (kind.startswith("image/") and kind not in _GEMINI_IMAGE_TYPES):
                return f"{at}.inlineData.mimeType: Unsupported MIME type: {kind}"
            if not _base64(blob.get("data")):
                return f"Invalid value at '{at}.inline_data.data' (TYPE_BYTES), Base64 decoding failed"
    return None


def refusal(rule: Any, request: Any, code: str) -> Any:
    """A wire module's ``reject``: the 400 the real API answers, or None."""
    from .script import HttpError

    problem = rule(request.json)
    return None if problem is None else HttpError(400, problem, code=code)
