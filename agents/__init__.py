"""Agents: one trio actor per agent under a supervisor, the turn loop, tools."""

from .actor import Actor, AgentConfig, TurnResult
from .eventlog import EventLog, Subscription
from .events import AgentEvent, LogEntry
from .pool import ProviderPool
from .retry import RetryPolicy
from .store import AsyncStore
from .supervisor import AgentError, Supervisor

__all__ = [
    "Actor",
    "AgentConfig",
    "AgentError",
    "AgentEvent",
    "AsyncStore",
    "EventLog",
    "LogEntry",
    "ProviderPool",
    "RetryPolicy",
    "Subscription",
    "Supervisor",
    "TurnResult",
]
