"""OpenAI Responses (``POST {base_url}/responses``), used statelessly.

Every request carries the whole conversation with ``store: false``; reasoning
comes back as encrypted items (``include: ["reasoning.encrypted_content"]``)
that are kept on ThinkingBlocks (text = the summary, signature = the encrypted
content, provider_data = {"id": item id}) and sent back to the same provider
only. No conversation state lives at the provider.

The stream decoder is in ``_responses_stream``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..accumulate import collect
from ..types import Message, Request, Response, TextBlock, ThinkingBlock, ToolCallBlock
from ._common import OpenAICodec, response_schema, tool_arguments
from ._responses_stream import ResponsesStreamDecoder, WireResponse


class ResponsesCodec(OpenAICodec):
    """Request -> Responses API bytes; bytes -> StreamEvents / Response."""

    path = "responses"
    responses = True

    # ------------------------------------------------------------ encode

    def _fields(self, request: Request, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model}
        system = "\n\n".join(b.text for b in request.system if b.text)
        if system:
            body["instructions"] = system
        body["input"] = self._input(request)
        body["max_output_tokens"] = request.max_output_tokens
        if stream:
            body["stream"] = True
        body["store"] = False
        m = self.thinking(request)
        if m.kind != "none":
            body["include"] = ["reasoning.encrypted_content"]
        if m.supported and m.kind != "none":
            reasoning: dict[str, Any] = {}
            effort = m.effort if m.effort is not None else m.level_name
            if effort is not None:
                reasoning["effort"] = effort
            if m.enabled and request.thinking.include_summary:
                reasoning["summary"] = "auto"
            if reasoning:
                body["reasoning"] = reasoning
        if request.tools:
            body.update(self._tools(request))
        if request.response_schema is not None:
            name, schema, strict = response_schema(
                request.response_schema, "responses", self.provider
            )
            body["text"] = {
                "format": {"type": "json_schema", "name": name, "schema": schema, "strict": strict}
            }
        return body

    def _input(self, request: Request) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for m in request.messages:
            if m.role == "assistant":
                self._assistant(m, items)
            else:
                self._user(m, items)
        return items

    def _assistant(self, m: Message, items: list[dict[str, Any]]) -> None:
        text: list[str] = []

        def flush() -> None:
            # typed, with output_text parts: the shape every server reads as an
            # assistant message (llama-server refuses a bare role + string)
            if text:
                part = {"type": "output_text", "text": "".join(text)}
                items.append({"type": "message", "role": "assistant", "content": [part]})
                text.clear()

        for b in m.content:
            if isinstance(b, TextBlock):
                if b.text:
                    text.append(b.text)
            elif isinstance(b, ThinkingBlock):
                rid = (b.provider_data or {}).get("id")
                # encrypted reasoning goes back only to the provider that made it
                if b.provider == self.provider and b.signature and rid and not b.redacted:
                    flush()
                    items.append(
                        {
                            "type": "reasoning",
                            "id": rid,
                            "summary": [{"type": "summary_text", "text": b.text}] if b.text else [],
                            "encrypted_content": b.signature,
                        }
                    )
            elif isinstance(b, ToolCallBlock):
                flush()
                items.append(
                    {
                        "type": "function_call",
                        "call_id": b.id,
                        "name": b.name,
                        "arguments": tool_arguments(b),
                    }
                )
        flush()

    # ------------------------------------------------------------ decode

    def stream_decoder(self, request: Request) -> ResponsesStreamDecoder:
        return ResponsesStreamDecoder(self.provider, request.model)

    def decode_response(self, body: bytes, request: Request) -> Response:
        """Read as a stream's closing ``response.completed`` event."""
        data = self._answer(body)
        try:
            resp = msgspec.convert(data, WireResponse)
        except msgspec.ValidationError:
            resp = WireResponse()
        events = self.stream_decoder(request).finish(resp)
        return collect(events, provider=self.provider)
