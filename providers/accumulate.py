"""Fold a stream of StreamEvents into a Response.

Streaming and non-streaming calls end in the same object: non-streaming
decoders may emit events and fold them here, or build the Response directly;
tests compare the two. ``events_of`` goes the other way: the events that fold
into a given Response (how a whole JSON answer to a streaming request is
delivered as a stream).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from .types import (
    Block,
    DoneEvent,
    ErrorEvent,
    FinishReason,
    ProviderError,
    Response,
    StartEvent,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    Usage,
)


class StreamProtocolError(ValueError):
    """Events that contradict each other (a text delta for a tool call's index...)."""


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """(arguments, raw): raw is the text when it is not a JSON object."""
    if not text.strip():
        return {}, None
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, UnicodeError):  # a lone surrogate
        return {}, text
    if not isinstance(value, dict):
        return {}, text
    return value, None


class _Part:
    __slots__ = ("args", "done", "id", "kind", "name", "provider_data", "redacted", "sig", "text")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.text: list[str] = []
        self.sig: list[str] = []
        self.args: list[str] = []
        self.redacted = False
        self.id = ""
        self.name = ""
        self.done = False
        self.provider_data: dict[str, Any] | None = None

    def merge_data(self, data: dict[str, Any] | None) -> None:
        if data:
            self.provider_data = {**(self.provider_data or {}), **data}


class Accumulator:
    def __init__(self, *, provider: str | None = None) -> None:
        self.provider = provider
        self.model = ""
        self.finish_reason: FinishReason | None = None
        self.usage = Usage()
        self.provider_data: dict[str, Any] | None = None
        self.error: ProviderError | None = None
        self._parts: dict[int, _Part] = {}

    @property
    def done(self) -> bool:
        return self.finish_reason is not None or self.error is not None

    @property
    def has_output(self) -> bool:
        return bool(self._parts)

    def _part(self, index: int, kind: str) -> _Part:
        part = self._parts.get(index)
        if part is None:
            part = self._parts[index] = _Part(kind)
        elif part.kind != kind:
            raise StreamProtocolError(f"block {index} is {part.kind}, not {kind}")
        return part

    def feed(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            part = self._part(event.index, "text")
            part.text.append(event.text)
            if event.signature:
                part.sig.append(event.signature)
        elif isinstance(event, ThinkingDelta):
            part = self._part(event.index, "thinking")
            part.text.append(event.text)
            if event.signature:
                part.sig.append(event.signature)
            part.redacted = part.redacted or event.redacted
            part.merge_data(event.provider_data)
        elif isinstance(event, ToolCallStart):
            part = self._part(event.index, "tool_call")
            part.id, part.name = event.id, event.name
            if event.signature:
                part.sig.append(event.signature)
            part.merge_data(event.provider_data)
        elif isinstance(event, ToolCallDelta):
            self._part(event.index, "tool_call").args.append(event.arguments)
        elif isinstance(event, ToolCallDone):
            self._part(event.index, "tool_call").done = True
        elif isinstance(event, StartEvent):
            self.model = event.model or self.model
            if event.provider_data:
                self.provider_data = {**(self.provider_data or {}), **event.provider_data}
        elif isinstance(event, DoneEvent):
            self.finish_reason = event.finish_reason
            self.usage = event.usage
            if event.model:
                self.model = event.model
            if event.provider_data:
                self.provider_data = {**(self.provider_data or {}), **event.provider_data}
        elif isinstance(event, ErrorEvent):
            self.error = event.error
        else:  # pragma: no cover - the union is closed
            raise StreamProtocolError(f"unknown event {event!r}")

    def blocks(self) -> list[Block]:
        out: list[Block] = []
        for index in sorted(self._parts):
            part = self._parts[index]
            sig = "".join(part.sig) or None
            if part.kind == "text":
                text = "".join(part.text)
                if text or sig:
                    out.append(
                        TextBlock(text=text, signature=sig, provider=self.provider if sig else None)
                    )
            elif part.kind == "thinking":
                out.append(
                    ThinkingBlock(
                        text="".join(part.text),
                        signature=sig,
                        redacted=part.redacted,
                        provider=self.provider,
                        provider_data=part.provider_data,
                    )
                )
            else:
                args, raw = parse_arguments("".join(part.args))
                out.append(
                    ToolCallBlock(
                        id=part.id,
                        name=part.name,
                        arguments=args,
                        raw_arguments=raw,
                        signature=sig,
                        provider=self.provider if (sig or part.provider_data) else None,
                        provider_data=part.provider_data,
                    )
                )
        return out

    def response(self) -> Response:
        """The response so far. An unfinished stream ends as ``error`` (if one came)
        or ``unknown``."""
        finish = self.finish_reason
        if finish is None:
            finish = "error" if self.error is not None else "unknown"
        return Response(
            blocks=self.blocks(),
            finish_reason=finish,
            usage=self.usage,
            model=self.model,
            provider=self.provider,
            provider_data=self.provider_data,
        )


def collect(events: Iterable[StreamEvent], *, provider: str | None = None) -> Response:
    acc = Accumulator(provider=provider)
    for event in events:
        acc.feed(event)
    return acc.response()


def events_of(response: Response) -> list[StreamEvent]:
    """The events a stream would have sent for ``response``: an Accumulator
    (provider ``response.provider``) fed them gives back an equal Response.

    One delta per block, at the block's index; a tool call's arguments go as
    JSON text (its raw text when the model's was not a JSON object).
    """
    out: list[StreamEvent] = [StartEvent(model=response.model)]
    for index, block in enumerate(response.blocks):
        if isinstance(block, TextBlock):
            out.append(TextDelta(index=index, text=block.text, signature=block.signature))
        elif isinstance(block, ThinkingBlock):
            out.append(
                ThinkingDelta(
                    index=index,
                    text=block.text,
                    signature=block.signature,
                    redacted=block.redacted,
                    provider_data=block.provider_data,
                )
            )
        elif isinstance(block, ToolCallBlock):
            out.append(
                ToolCallStart(
                    index=index,
                    id=block.id,
                    name=block.name,
                    signature=block.signature,
                    provider_data=block.provider_data,
                )
            )
            if block.raw_arguments is not None:
                arguments = block.raw_arguments
            else:
                arguments = msgspec.json.encode(block.arguments).decode() if block.arguments else ""
            if arguments:
                out.append(ToolCallDelta(index=index, arguments=arguments))
            out.append(ToolCallDone(index=index))
        # tool results and images are never part of a model's answer
    out.append(
        DoneEvent(
            finish_reason=response.finish_reason,
            usage=response.usage,
            model=response.model or None,
            provider_data=response.provider_data,
        )
    )
    return out
