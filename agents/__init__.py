"""Agents: one trio actor per agent under a supervisor, the turn loop, tools."""

from ._forks import numbered as fork_names
from .actor import Actor
from .deps import ActorDeps, AgentConfig, Neighbours
from .eventlog import EventLog, Subscription
from .events import AgentEvent, LogEntry
from .pool import ProviderPool
from .retry import RetryPolicy
from .store import AsyncStore
from .supervisor import AgentError, Supervisor
from .turn import Turn, TurnResult

__all__ = [
    "Actor",
    "ActorDeps",
    "AgentConfig",
    "AgentError",
    "AgentEvent",
    "AsyncStore",
    "EventLog",
    "LogEntry",
    "Neighbours",
    "ProviderPool",
    "RetryPolicy",
    "Subscription",
    "Supervisor",
    "Turn",
    "TurnResult",
    "fork_names",
]
