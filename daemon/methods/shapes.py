"""What the method modules share: the small conversions to the protocol's
shapes, and ``ApiHost``, what api.Api offers the modules that hold some of its
methods (every family module) without importing it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, cast

import msgspec

if TYPE_CHECKING:
    from agents import Supervisor
    from agents.actor import Actor
    from agents.store import AsyncStore
    from daemon.cluster import Membership
    from protocol import results as R
    from providers.catalog import Catalog
    from providers.modelspec import ResolvedModel
    from providers.types import Usage
    from store import AgentRecord


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


@dataclass
class DaemonInfo:
    """What the methods are told of the daemon process (service.py fills it)."""

    socket: str
    database: str
    started_at: float
    default_model: str
    connections: Callable[[], int]
    shutdown: Callable[[], None]
    reload: Callable[[], str | None]  # None: done; else why it was refused
    settings: Callable[[str], Any]  # provider name -> ProviderSettings
    max_line_bytes: int = 0  # the longest request line the socket takes (read at start)
    membership: Membership | None = None  # this daemon among the database's (daemon/cluster)
    traces: dict[str, Any] | None = None  # daemon.status's ``traces`` (daemon/process/traces.py)


class ApiHost(Protocol):
    """What api.Api gives the method modules."""

    sup: Supervisor
    db: AsyncStore

    async def _record(self, ref: str) -> AgentRecord: ...

    async def _actor(self, ref: str) -> Actor: ...

    async def _described(self, record: AgentRecord) -> R.AgentInfo: ...

    async def _outcome(self, uuid: str, turn: str) -> R.TurnOutcome: ...

    async def _created(self, created: R.Created, wait: bool) -> R.Created: ...

    def _info(
        self, record: AgentRecord, short: str, memo: dict[Any, Any] | None = None
    ) -> R.AgentInfo: ...

    @property
    def info(self) -> DaemonInfo: ...

    @property
    def catalog(self) -> Catalog: ...

    # the one mapping of the layers' refusals to protocol errors (api._REFUSALS)
    def _refusals(self) -> AbstractContextManager[None]: ...


class Family:
    """A family of methods (one module of daemon/methods): the host and what
    every family reads of it, given once."""

    def __init__(self, host: ApiHost) -> None:
        self.host = host
        self.sup = host.sup
        self.db = host.db
