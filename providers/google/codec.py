"""Google Gemini ``generateContent`` codec: pure bytes in, events out.

Wire: ``POST {base}/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse`` (and ``:countTokens``), key in the
``x-goog-api-key`` header - never in the URL.

Block indices and thought signatures
------------------------------------
Gemini streams ``candidates[0].content.parts``; each chunk carries new parts.
Blocks are numbered from 0 in order of first appearance:

* A text part extends the open text block, and a thought part (``thought:
  true``) the open thinking block, when the previous part was of the same
  kind **and that block carries no signature yet**. Anything else (a function
  call, a part of the other kind, or a block already signed) closes it, and
  the part opens a new block.
* A part carrying a ``thoughtSignature`` may join an unsigned block: the
  signature then sits at the end of the block, which is exactly the part it
  came on, and the block goes back as one part ``{"text": <whole text>,
  "thoughtSignature": sig}`` - the shape the non-streamed answer has. This is
  the Gemini 3 streaming pattern: text parts, then an empty text part with the
  signature.
* A part after a signed part always opens a new block, so a signature never
  comes to cover text that followed it. (``[{"text": "A", sig}, {"text":
  "B"}]`` decodes to two text blocks and goes back as those same two parts.)
* Empty text parts with no signature are ignored; a signed empty part is kept
  (an empty TextBlock with the signature).
* A function call is its own block. Gemini sends calls whole: ToolCallStart
  (with the part's signature), one ToolCallDelta with the JSON arguments and
  ToolCallDone come together. Calls streamed as ``partialArgs`` (Vertex
  ``streamFunctionCallArguments``) start at the part with the name and end,
  with the assembled arguments, when a part has no ``willContinue``.
* A call without an ``id`` gets ``"call_" + uuid4().hex`` and
  ``provider_data={"synthetic_id": True}``; only ids Gemini issued are sent
  back (on ``functionCall`` and the matching ``functionResponse``).

On the way back, thinking blocks are sent as thought parts and signatures on
the part they came on - only when the block (or its message) is from this
provider. Other providers' thinking is dropped; their tool calls go without a
signature, except on Gemini 3+, where a step whose calls carry none gets
Google's documented ``skip_thought_signature_validator`` on each foreign call
(and on its first call).

Finish and usage
----------------
STOP -> stop (tool_use when calls were made), MAX_TOKENS -> length, safety
reasons -> content_filter, MALFORMED_FUNCTION_CALL and kin -> error, others
-> unknown; a ``promptFeedback.blockReason`` with no candidates ->
content_filter. Usage: input = promptTokenCount (cached included), cached =
cachedContentTokenCount, output = candidatesTokenCount + thoughtsTokenCount,
thinking = thoughtsTokenCount. The DoneEvent is emitted on the chunk with the
finishReason; a body that ends without one ends with an ErrorEvent (network).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ..accumulate import collect
from ..base import HttpRequest
from ..catalog import Catalog, ModelEntry, default_catalog
from ..ratelimits import RateLimits, google_limits
from ..schema_fit import fit_for_request
from ..settings import ProviderSettings
from ..thinking import ThinkingMapping, map_thinking
from ..types import (
    DoneEvent,
    ErrorEvent,
    ProviderError,
    ProviderFailure,
    Request,
    Response,
    StreamEvent,
)
from ._decode import GeminiStreamDecoder, new_call_id
from ._encode import encode_contents, encode_tools
from ._errors import http_error
from ._wire import CHUNK_DECODER, COUNT_DECODER, Chunk

SUBSET_DIALECT = "gemini_schema_subset"
_ENCODE = msgspec.json.encode
_CHUNKS_DECODER = msgspec.json.Decoder(list[Chunk])


class GeminiCodec:
    """Codec and TokenCounter for the Gemini API (``generate_content``)."""

    def __init__(self, settings: ProviderSettings, catalog: Catalog | None = None) -> None:
        self.settings = settings
        self.provider = settings.name
        self.catalog = catalog or default_catalog()
        base = settings.base_url.rstrip("/")
        self._base = base
        # The v1 API has no parametersJsonSchema / responseJsonSchema.
        self._subset = SUBSET_DIALECT in settings.dialect or base.endswith("/v1")
        self.new_id: Callable[[], str] = new_call_id

    @property
    def schema_subset(self) -> bool:
        """Whether schemas go as the OpenAPI subset (``responseSchema``), not JSON Schema."""
        return self._subset

    # ------------------------------------------------------------ model facts

    def entry(self, model: str) -> ModelEntry:
        """The catalog entry; an unknown name takes the longest known id it starts with
        (``gemini-2.5-flash-preview-09-2025`` -> gemini-2.5-flash), else the default."""
        name = model.rsplit("/", 1)[-1]
        for provider in dict.fromkeys((self.provider, "google")):
            if provider not in self.catalog.providers:
                continue
            entry, known = self.catalog.entry_or_default(provider, name)
            if known:
                return entry
            family = [
                m
                for m in self.catalog.models_of(provider)
                if any(name.startswith(n + "-") for n in (m.id, *m.aliases))
            ]
            if family:
                return max(family, key=lambda m: len(m.id))
        return self.catalog.entry_or_default(
            self.provider if self.provider in self.catalog.providers else "google", name
        )[0]

    def thinking(self, request: Request) -> tuple[ThinkingMapping, ModelEntry]:
        entry = self.entry(request.model)
        return map_thinking(entry.thinking, request.thinking.level, model=request.model), entry

    # ------------------------------------------------------------ encoding

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        key = self.settings.require_key()
        if key:
            headers["x-goog-api-key"] = key
        headers.update(self.settings.extra_headers)
        return headers

    def _url(self, model: str, method: str) -> str:
        path = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        return f"{self._base}/{path}:{method}"

    def body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {
            "contents": encode_contents(
                request.messages, provider=self.provider, model=request.model
            )
        }
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": b.text} for b in request.system]}
        body.update(encode_tools(request, subset=self._subset))

        mapping, entry = self.thinking(request)
        gen: dict[str, Any] = {
            "maxOutputTokens": min(request.max_output_tokens, entry.max_output_tokens)
        }
        thinking: dict[str, Any] = {}
        if mapping.supported and mapping.kind != "none":
            if mapping.budget is not None:
                thinking["thinkingBudget"] = mapping.budget
            elif mapping.level_name is not None:
                # the API's ThinkingLevel enum: MINIMAL, LOW, MEDIUM, HIGH
                thinking["thinkingLevel"] = mapping.level_name.upper()
            if mapping.enabled and request.thinking.include_summary:
                thinking["includeThoughts"] = True
        if thinking:
            gen["thinkingConfig"] = thinking
        if request.response_schema is not None:
            gen["responseMimeType"] = "application/json"
            fitted = fit_for_request(
                "generate_content", request.response_schema, self.provider,
                gemini_subset=self._subset,
            ).schema  # fmt: skip
            gen["responseSchema" if self._subset else "responseJsonSchema"] = fitted
        body["generationConfig"] = gen

        extra = (request.provider_data or {}).get("google")
        if isinstance(extra, dict):
            for key, value in extra.items():
                if key == "generationConfig" and isinstance(value, dict):
                    gen.update(value)
                else:
                    body[key] = value
        return body

    def encode(self, request: Request, *, stream: bool) -> HttpRequest:
        headers = self._headers()
        if stream:
            url = self._url(request.model, "streamGenerateContent") + "?alt=sse"
        else:
            url = self._url(request.model, "generateContent")
        return HttpRequest("POST", url, headers, _ENCODE(self.body(request)))

    def encode_count_tokens(self, request: Request) -> HttpRequest:
        headers = self._headers()
        full = self.body(request)
        model = (
            request.model
            if request.model.startswith(("models/", "tunedModels/"))
            else f"models/{request.model}"
        )
        inner: dict[str, Any] = {"model": model, "contents": full["contents"]}
        for key in ("systemInstruction", "tools", "toolConfig"):
            if key in full:
                inner[key] = full[key]
        return HttpRequest(
            "POST",
            self._url(request.model, "countTokens"),
            headers,
            _ENCODE({"generateContentRequest": inner}),
        )

    # ------------------------------------------------------------ decoding

    def stream_decoder(self, request: Request | None = None) -> GeminiStreamDecoder:
        return GeminiStreamDecoder(
            provider=self.provider, secret=self.settings.api_key, new_id=self.new_id
        )

    def decode_events(self, body: bytes) -> list[StreamEvent]:
        """The events of a whole non-streamed body (as if streamed in one chunk).

        A JSON array is the chunks of ``streamGenerateContent`` asked without
        ``alt=sse`` (what a proxy that drops the query string gets back).
        """
        decoder = self.stream_decoder()
        out: list[StreamEvent] = []
        try:
            if body.lstrip()[:1] == b"[":
                chunks = _CHUNKS_DECODER.decode(body)
                for chunk in chunks[:-1]:
                    decoder.handle(chunk, out)
                chunk = chunks[-1] if chunks else Chunk()
            else:
                chunk = CHUNK_DECODER.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise self._malformed("response body", exc, retryable=True) from None
        decoder.handle(chunk, out)
        if not decoder.finished:
            out.append(DoneEvent(finish_reason="unknown", model=chunk.model_version))
        return out

    def decode_response(self, body: bytes, request: Request) -> Response:
        events = self.decode_events(body)
        for event in events:
            if isinstance(event, ErrorEvent):
                raise ProviderFailure(event.error)
        return collect(events, provider=self.provider)

    def decode_limits(
        self, headers: Mapping[str, str], body: bytes, *, now: float
    ) -> RateLimits | None:
        return google_limits(headers, body, now=now)

    def decode_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> ProviderError:
        return http_error(
            status, body, headers, provider=self.provider, secret=self.settings.api_key
        )

    def decode_count_tokens(self, body: bytes) -> int:
        try:
            return COUNT_DECODER.decode(body).total_tokens
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise self._malformed("countTokens body", exc, retryable=False) from None

    def _malformed(self, what: str, exc: Exception, *, retryable: bool) -> ProviderFailure:
        """A 200 answer that is not the JSON it should be."""
        error = ProviderError(
            category="server",
            message=f"malformed {what}: {exc}",
            http_status=200,
            retryable=retryable,
            provider=self.provider,
        )
        return ProviderFailure(error)
