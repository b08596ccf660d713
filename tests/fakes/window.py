"""Context windows for the fake provider: how it counts a request's tokens.

``FakeProvider(windows={"model": 2000})`` gives a model a context window. For
a request to such a model the fake counts the input with ``fake_tokens``, a
tokenizer deliberately unlike ikigai's estimate (providers/tokens.py: bytes /
4 of each part), so the agent's calibration against reported usage is put to
the test: one token per 3 bytes of the request's prompt-bearing JSON (the body
without the model, stream and output-limit fields and Gemini's
generationConfig, cache markers removed).

Then, as the real APIs do, a request whose input plus the output it asks room
for (max_tokens, max_completion_tokens, max_output_tokens or
generationConfig.maxOutputTokens) exceeds the window gets the wire's own
context-length error (``context_error`` of the wire module), and any other
gets its reply with the usage's input tokens replaced by that count. The
count endpoints (Anthropic count_tokens, Gemini countTokens) answer the same
count without taking a scripted Reply. The count is recorded on the request
(``RecordedRequest.tokens``).

A wire module takes part by defining ``context_error(tokens, output, window,
request) -> HttpError`` (and, for a count endpoint, ``is_count(request)`` and
``render_count(tokens, request)``; ``model_of(request)`` when the body does not
name the model). Wires without ``context_error`` ignore windows.
"""

from __future__ import annotations

import json
from typing import Any

from .recorded import RecordedRequest

BYTES_PER_TOKEN = 3
OUTPUT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
# what a request says about its answer, not part of the prompt (Gemini's
# generationConfig holds its output limit and thinking settings; its
# countTokens request carries none)
_NOT_PROMPT = frozenset({"model", "stream", "stream_options", "generationConfig", *OUTPUT_FIELDS})


def _strip_cache_marks(value: Any) -> Any:
    """Without Anthropic's cache_control markers: a count_tokens body has none,
    and the same prompt must count the same either way."""
    if isinstance(value, dict):
        return {k: _strip_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_marks(v) for v in value]
    return value


def prompt_part(request: RecordedRequest) -> Any:
    """The prompt-bearing part of the request's JSON body."""
    body = request.json
    if not isinstance(body, dict):
        return body
    inner = body.get("generateContentRequest")
    if isinstance(inner, dict):
        body = inner  # Gemini countTokens wraps the request it counts
    part = {k: v for k, v in body.items() if k not in _NOT_PROMPT}
    return _strip_cache_marks(part)


def fake_tokens(request: RecordedRequest) -> int:
    """The fake's count of the request's input tokens (bytes / 3, rounded up)."""
    text = json.dumps(prompt_part(request), separators=(",", ":"), ensure_ascii=False)
    size = len(text.encode("utf-8", "surrogatepass"))
    return -(-size // BYTES_PER_TOKEN)


def requested_output(request: RecordedRequest) -> int:
    """The output tokens the request asks room for (0 when it names none)."""
    body = request.json
    if not isinstance(body, dict):
        return 0
    for name in OUTPUT_FIELDS:
        value = body.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    config = body.get("generationConfig")
    if isinstance(config, dict):
        value = config.get("maxOutputTokens")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def model_of(wire: Any, request: RecordedRequest) -> str | None:
    """The model a request is for: the wire's ``model_of`` (Gemini names it in
    the path), else the body's ``model``."""
    from_path = getattr(wire, "model_of", None)
    if from_path is not None:
        name = from_path(request)
        return name if isinstance(name, str) else None
    body = request.json
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None
