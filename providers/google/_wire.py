"""Typed shapes of the generateContent response, decoded with msgspec.

Only the fields the decoder reads are declared; everything else in a chunk
(safetyRatings, citationMetadata, groundingMetadata, createTime...) is skipped
by msgspec without building Python objects, which is most of the decoder's
speed.

The stream shapes are ``gc=False``: decoded JSON holds no reference cycles, and
thousands of chunks a second need not be tracked by the cycle collector.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec


class PartialArg(msgspec.Struct, rename="camel", gc=False):
    """One piece of a streamed function-call argument (Vertex streamFunctionCallArguments)."""

    json_path: str = ""
    string_value: str | None = None
    number_value: float | None = None
    bool_value: bool | None = None
    # present (as JSON null or a NullValue enum) when the value is null
    null_value: Any = msgspec.UNSET
    will_continue: bool = False


class FunctionCall(msgspec.Struct, rename="camel", gc=False):
    name: str | None = None
    args: dict[str, Any] | None = None
    id: str | None = None
    partial_args: list[PartialArg] | None = None
    will_continue: bool = False


class Part(msgspec.Struct, rename="camel", gc=False):
    text: str | None = None
    thought: bool = False
    thought_signature: str | None = None
    function_call: FunctionCall | None = None


class Content(msgspec.Struct, rename="camel", gc=False):
    parts: list[Part] | None = None
    role: str | None = None


class Candidate(msgspec.Struct, rename="camel", gc=False):
    content: Content | None = None
    finish_reason: str | None = None
    finish_message: str | None = None
    index: int = 0


class UsageMetadata(msgspec.Struct, rename="camel", gc=False):
    prompt_token_count: int = 0
    candidates_token_count: int = 0
    thoughts_token_count: int = 0
    cached_content_token_count: int = 0
    tool_use_prompt_token_count: int = 0
    total_token_count: int = 0


class PromptFeedback(msgspec.Struct, rename="camel", gc=False):
    block_reason: str | None = None
    block_reason_message: str | None = None


class Chunk(msgspec.Struct, rename="camel", gc=False):
    """One streamed GenerateContentResponse, or the whole non-streamed body."""

    candidates: list[Candidate] | None = None
    usage_metadata: UsageMetadata | None = None
    model_version: str | None = None
    response_id: str | None = None
    prompt_feedback: PromptFeedback | None = None
    # a google.rpc.Status sent inside the stream instead of a response
    error: Any = None


class CountTokensResponse(msgspec.Struct, rename="camel"):
    # required and bounded: a body without it, or a negative or absurd count,
    # is a malformed answer, not a count of 0
    total_tokens: Annotated[int, msgspec.Meta(ge=0, le=1 << 40)]


CHUNK_DECODER = msgspec.json.Decoder(Chunk)
COUNT_DECODER = msgspec.json.Decoder(CountTokensResponse)
