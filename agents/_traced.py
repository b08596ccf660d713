"""A turn run inside its span (traces on: agents/tracing)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ._commands import PromptCmd
    from .tracing import Tracer
    from .turn import Turn, TurnResult


class _Agent(Protocol):
    uuid: str
    name: str
    provider: str
    model: str


async def traced(tracer: Tracer, actor: _Agent, turn: Turn, cmd: PromptCmd) -> TurnResult | None:
    """``turn.run()`` with the turn's span current: its model calls, tool
    calls and compactions are children of it."""
    with tracer.turn(
        agent=actor.uuid,
        name=actor.name,
        turn=turn.id,
        provider=actor.provider,
        model=actor.model,
        prompt=cmd.text,
        causes=cmd.causes,
    ) as span:
        result = await turn.run()
        if result is not None:
            r = result
            span.end(r.status, r.reply, r.usage, r.cost_usd, r.error, r.message)
        return result
