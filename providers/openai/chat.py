"""OpenAI Chat Completions (``POST {base_url}/chat/completions``) and every
OpenAI-compatible service that speaks it (DeepSeek, xAI, OpenRouter, Groq,
Mistral, Ollama, llama.cpp, vLLM...), with the service's dialect flags.

Dialect flags (``ProviderSettings.dialect``, from the catalog):

* ``reasoning_content``: reasoning arrives in ``reasoning_content``. It is read
  whatever the flag; with ``thinking_toggle`` too (DeepSeek) and thinking on,
  every assistant message with tool calls sends its reasoning back ("" if none).
* ``openrouter_reasoning``: OpenRouter's ``reasoning`` request object, and its
  ``reasoning``/``reasoning_details`` deltas (details go back to OpenRouter).
* ``thinking_toggle``: ``thinking: {type: enabled|disabled}`` plus
  ``reasoning_effort`` (DeepSeek V4).
* ``content_thinking_chunks``: reasoning as ``{"type": "thinking"}`` content
  parts (Mistral); content lists are read whatever the flag.
* ``max_tokens_field``: ``max_tokens`` instead of ``max_completion_tokens``.
* ``no_stream_usage``: no ``stream_options`` (the service rejects it).

The stream decoder is in ``_chat_stream``; what both OpenAI APIs share, in ``_common``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..accumulate import collect
from ..catalog import Catalog
from ..settings import ProviderSettings
from ..types import (
    Message,
    Request,
    Response,
    StreamEvent,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from ._chat_stream import ChatStreamDecoder, WireChunk
from ._common import OpenAICodec, response_schema, tool_arguments


class ChatCodec(OpenAICodec):
    """Request -> Chat Completions bytes; bytes -> StreamEvents / Response."""

    path = "chat/completions"
    responses = False

    def __init__(self, settings: ProviderSettings, catalog: Catalog | None = None) -> None:
        super().__init__(settings, catalog)
        self._dialect = settings.dialect

    # ------------------------------------------------------------ encode

    def _fields(self, request: Request, *, stream: bool) -> dict[str, Any]:
        dialect = self._dialect
        body: dict[str, Any] = {"model": request.model, "messages": self._messages(request)}
        if "max_tokens_field" in dialect:
            body["max_tokens"] = request.max_output_tokens
        else:
            body["max_completion_tokens"] = request.max_output_tokens
        if stream:
            body["stream"] = True
            if "no_stream_usage" not in dialect:
                body["stream_options"] = {"include_usage": True}
        if request.tools:
            body.update(self._tools(request))
        self._thinking(request, body)
        if request.response_schema is not None:
            name, schema, strict = response_schema(
                request.response_schema, "chat", self.provider
            )
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": strict},
            }
        return body

    def _thinking(self, request: Request, body: dict[str, Any]) -> None:
        m = self.thinking(request)
        if not m.supported or m.kind in ("none", "always"):
            return
        dialect = self._dialect
        if "openrouter_reasoning" in dialect:
            reasoning: dict[str, Any]
            if m.effort is not None and m.enabled:
                reasoning = {"effort": m.effort}
            elif m.budget and m.enabled:
                reasoning = {"max_tokens": m.budget}
            elif m.level_name is not None and m.enabled:
                reasoning = {"effort": m.level_name}
            elif not m.enabled:
                reasoning = {"enabled": False}
            else:
                reasoning = {"enabled": True}
            if m.enabled and not request.thinking.include_summary:
                reasoning["exclude"] = True
            body["reasoning"] = reasoning
        elif "thinking_toggle" in dialect:
            body["thinking"] = {"type": "enabled" if m.enabled else "disabled"}
            if m.enabled and m.effort is not None:
                body["reasoning_effort"] = m.effort
        elif m.effort is not None:
            body["reasoning_effort"] = m.effort
        elif m.level_name is not None:
            body["reasoning_effort"] = m.level_name

    def _messages(self, request: Request) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        system = "\n\n".join(b.text for b in request.system if b.text)
        if system:
            out.append({"role": "system", "content": system})
        # DeepSeek in thinking mode: every assistant message that made tool calls
        # carries its reasoning_content in all later requests ("" when it has
        # none: another provider's, or thinking was off then), else 400 "The
        # reasoning_content in the thinking mode must be passed back to the API"
        reasoning = {"reasoning_content", "thinking_toggle"} <= self._dialect and bool(
            self.thinking(request).enabled
        )
        for m in request.messages:
            if m.role == "assistant":
                msg = self._assistant(m, reasoning=reasoning)
                if msg is not None:
                    out.append(msg)
            else:
                self._user(m, out)
        return out

    def _assistant(self, m: Message, *, reasoning: bool) -> dict[str, Any] | None:
        text = "".join(b.text for b in m.content if isinstance(b, TextBlock))
        calls = [b for b in m.content if isinstance(b, ToolCallBlock)]
        own = [b for b in m.content if isinstance(b, ThinkingBlock) and b.provider == self.provider]
        if not text and not calls:
            return None
        msg: dict[str, Any] = {"role": "assistant", "content": text or None}
        dialect = self._dialect
        if calls and reasoning:
            msg["reasoning_content"] = "".join(b.text for b in own if not b.redacted)
        if own and "openrouter_reasoning" in dialect:
            details = [
                d
                for b in own
                for d in ((b.provider_data or {}).get("reasoning_details") or [])
                if isinstance(d, dict)
            ]
            if details:
                msg["reasoning_details"] = details
        if calls:
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": tool_arguments(c)},
                }
                for c in calls
            ]
        return msg

    # ------------------------------------------------------------ decode

    def stream_decoder(self, request: Request) -> ChatStreamDecoder:
        return ChatStreamDecoder(self.provider, request.model)

    def decode_response(self, body: bytes, request: Request) -> Response:
        """Read as one chunk whose choices' messages are deltas, then finished."""
        data = self._answer(body)
        choices = []
        listed = data.get("choices")
        for c in listed if isinstance(listed, list) else ():
            if not isinstance(c, dict):
                continue
            message = c.get("message")
            if not isinstance(message, dict):
                # legacy completions put the text on the choice
                message = {"content": c.get("text")} if isinstance(c.get("text"), str) else {}
            message = dict(message)
            if isinstance(message.get("tool_calls"), list):
                message["tool_calls"] = [
                    {**tc, "index": i} if isinstance(tc, dict) else tc
                    for i, tc in enumerate(message["tool_calls"])
                ]
            choices.append(
                {
                    "index": c.get("index", 0),
                    "delta": message,
                    "finish_reason": c.get("finish_reason"),
                }
            )
        raw = {
            "id": data.get("id"),
            "model": data.get("model"),
            "choices": choices,
            "usage": data.get("usage"),
        }
        try:
            chunk = msgspec.convert(raw, WireChunk)
        except msgspec.ValidationError:
            chunk = WireChunk(id=raw["id"], model=raw["model"], usage=raw["usage"])
        decoder = self.stream_decoder(request)
        events: list[StreamEvent] = []
        decoder.chunk(chunk, events)
        events += decoder.finish()
        return collect(events, provider=self.provider)
