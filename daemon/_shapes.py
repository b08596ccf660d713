"""What the method modules share: the small conversions to the protocol's
shapes, and ``ApiHost``, what api.Api offers the modules that hold some of its
methods (_admin.py, _transfer.py, _history.py) without importing it."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, cast

import msgspec

if TYPE_CHECKING:
    from agents import Supervisor
    from agents.actor import Actor
    from agents.store import AsyncStore
    from providers.modelspec import ResolvedModel
    from providers.types import Usage
    from store import AgentRecord

    from . import results as R


def stamp(when: datetime) -> str:
    """RFC 3339, as msgspec writes a datetime."""
    return cast(str, msgspec.to_builtins(when))


def plain(value: Any) -> Any:
    """A Struct (usage report, provider error...) as JSON values."""
    return msgspec.to_builtins(value)


def model_info(r: ResolvedModel) -> R.ModelInfo:
    return {
        "provider": r.provider,
        "model": r.model,
        "thinking_level": r.thinking.level,
        "description": r.description,
        "warnings": list(r.warnings),
    }


def tokens(u: Usage) -> R.TokenUsage:
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "thinking_tokens": u.thinking_tokens,
        "cached_tokens": u.cached_tokens,
    }


class ApiHost(Protocol):
    """What api.Api gives the method modules."""

    sup: Supervisor
    db: AsyncStore

    async def _record(self, ref: str) -> AgentRecord: ...

    async def _actor(self, ref: str) -> Actor: ...

    async def _described(self, record: AgentRecord) -> R.AgentInfo: ...

    async def _outcome(self, uuid: str, turn: str) -> R.TurnOutcome: ...

    # the one mapping of the layers' refusals to protocol errors (api._REFUSALS)
    def _refusals(self) -> AbstractContextManager[None]: ...
