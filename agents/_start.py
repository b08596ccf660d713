"""The answer to a prompt sent to an idle agent.

A prompt for an agent with nothing running or queued needs no queue row:
its turn starts at once, and the transaction that starts it (the user row
and the open-turn mark, store/_turns.py) is what makes it durable. The
submitter waits on a StartAck until that transaction has committed, so
"acknowledged" still means "committed": one write instead of two.
"""

from __future__ import annotations

import trio


class StartAck:
    """Set once: the turn's first row, or why it was not stored."""

    __slots__ = ("_done", "_error", "row")

    def __init__(self) -> None:
        self._done = trio.Event()
        self._error: BaseException | None = None
        self.row: int | None = None

    def started(self, row: int) -> None:
        if not self._done.is_set():
            self.row = row
            self._done.set()

    def refuse(self, error: BaseException) -> None:
        if not self._done.is_set():
            self._error = error
            self._done.set()

    async def stored(self) -> int:
        """The first row once committed; the refusal raised here otherwise."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self.row is not None
        return self.row
