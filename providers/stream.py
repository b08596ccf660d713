"""What every stream decoder shares: the SSE framing, the feed/close contract
of ``providers.base.StreamDecoder``, canonical block numbers and tool calls.

* ``FramedDecoder``: a decoder subclasses it and writes ``_read`` (the data of
  the events a piece of the body completed) and ``_cut`` (the body ended
  before the provider's final event).
* ``BlockNumbers``: the one place block indices are given out.
* ``ToolCall``: a tool call's events, start to end, its early argument
  pieces held back until it can start.
* ``read_json``: an event's data through a msgspec decoder, invalid UTF-8
  read as the SSE spec reads it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar

from .sse import Frames, SSEFramer
from .types import (
    ErrorEvent,
    ProviderError,
    StreamEvent,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
)

T = TypeVar("T")


def read_json(decode: Callable[[bytes | str], T], data: bytes) -> T:
    """``decode(data)``, invalid UTF-8 read as the SSE spec reads it (each bad
    sequence a U+FFFD): the framer hands data on as it came. Raises what
    ``decode`` raises for anything else."""
    try:
        return decode(data)
    except UnicodeDecodeError:
        return decode(data.decode("utf-8", "replace"))


class Numbered(Protocol):
    index: int  # -1 until the block is numbered


class BlockNumbers:
    """Canonical block indices: dense from 0, in the order blocks first show
    content. A block is numbered with its first piece, not when the wire opens
    it, so one that never shows any (an empty text block, a server-side tool
    the project does not model) takes no number."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0  # how many blocks are numbered

    def new(self) -> int:
        index = self.count
        self.count = index + 1
        return index

    def of(self, block: Numbered) -> int:
        """``block.index``, the next number given to it now if it has none."""
        index = block.index
        if index < 0:
            index = block.index = self.count
            self.count = index + 1
        return index


class ToolCall:
    """A tool call from its start to its end. Argument pieces that come before
    it can start (its name still unknown) are held back and sent after its
    ToolCallStart; it is numbered when it starts."""

    __slots__ = ("args", "done", "id", "index", "name", "pending", "started")

    def __init__(self, id: str = "", name: str = "") -> None:
        self.id = id
        self.name = name
        self.index = -1
        self.started = False
        self.done = False
        self.args = False  # an argument piece came (sent or held)
        self.pending: list[str] = []

    def start(
        self,
        blocks: BlockNumbers,
        out: list[StreamEvent],
        *,
        signature: str | None = None,
        provider_data: dict[str, Any] | None = None,
    ) -> int:
        """ToolCallStart with the call's id and name, then the pieces held back."""
        self.started = True
        index = blocks.of(self)
        out.append(
            ToolCallStart(
                index=index,
                id=self.id,
                name=self.name,
                signature=signature,
                provider_data=provider_data,
            )
        )
        if self.pending:
            out.append(ToolCallDelta(index=index, arguments="".join(self.pending)))
            self.pending = []
        return index

    def piece(self, arguments: str, out: list[StreamEvent]) -> None:
        """A piece of the argument JSON: sent if the call started, else held."""
        self.args = True
        if self.started:
            out.append(ToolCallDelta(index=self.index, arguments=arguments))
        else:
            self.pending.append(arguments)

    def end(self, out: list[StreamEvent]) -> None:
        """ToolCallDone, once."""
        if not self.done:
            self.done = True
            out.append(ToolCallDone(index=self.index))


class FramedDecoder(ABC):
    """A StreamDecoder of an SSE body: bytes through one SSEFramer, the events'
    data to ``_read``; once a DoneEvent or ErrorEvent is out (``finished``),
    the rest of the body is ignored."""

    __slots__ = ("_framer", "blocks", "finished", "provider")

    # at the end of the body, an event that lacks its empty line is read (True)
    # or dropped, as the SSE spec says (False)
    take_partial: ClassVar[bool] = False

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.blocks = BlockNumbers()
        self.finished = False  # a DoneEvent or ErrorEvent was emitted
        self._framer = SSEFramer()

    def feed(self, data: bytes) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if not self.finished:
            self._read(self._framer.feed(data), out)
        return out

    def close(self) -> list[StreamEvent]:
        """End of body: what it still completes, then an ErrorEvent if the
        provider's final event never came."""
        out: list[StreamEvent] = []
        if self.finished:
            return out
        frames, unfinished = self._framer.close(take_partial=self.take_partial)
        self._read(frames, out)
        if not self.finished:
            self._cut(unfinished, out)
            self.finished = True
        return out

    def _fail(self, out: list[StreamEvent], error: ProviderError) -> None:
        """End the stream with ``error``."""
        self.finished = True
        out.append(ErrorEvent(error=error))

    @abstractmethod
    def _read(self, frames: Frames, out: list[StreamEvent]) -> None:
        """Append the events of ``frames`` to ``out``; stop once finished."""

    @abstractmethod
    def _cut(self, unfinished: bool, out: list[StreamEvent]) -> None:
        """The body ended before the final event (``unfinished``: inside an
        event): append what ends the stream, usually an ErrorEvent."""
