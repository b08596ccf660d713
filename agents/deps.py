"""What an actor needs from the world, passed down to it in one object.

The actor reaches for nothing: the store, the provider pool, the tools, the
settings, the operations its agent tools may call and the few things only the
supervisor knows (names of other agents, whose mail a wait is holding) all
come in ``ActorDeps``. A test can build one around a real store and a fake
provider and run an actor with no supervisor at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from providers.modelspec import ResolvedModel
from providers.types import ThinkingLevel
from store import Budget

from .permissions import Permissions
from .pool import ProviderPool
from .retry import RetryPolicy
from .store import AsyncStore
from .tools import AgentOps, ToolRegistry

if TYPE_CHECKING:  # imported by the daemon when servers are configured
    from .tools.mcp import McpHub
    from .tracing import Tracer


@dataclass(frozen=True)
class DailyLimits:
    """The configured budgets (daemon config ``budget`` and
    ``providers.NAME.daily_budget_usd``), checked by agents/budget.py."""

    daemon_usd: float | None = None  # every agent's calls, per UTC day
    provider_usd: Mapping[str, float] = field(default_factory=dict)  # per provider, per UTC day
    root: Budget | None = None  # given to each new root agent created without one


@dataclass
class AgentConfig:
    max_tool_turns: int = 50
    max_output_tokens: int = 4096
    tool_concurrency: int = 8
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    event_keep: int = 256
    subscriber_buffer: int = 512
    cwd: Path = field(default_factory=Path.cwd)
    worktrees: Path | None = None  # where worktrees of agents are made (agents/worktrees)
    fallbacks: list[str] = field(default_factory=list)  # MODEL[/THINKING] tried on retryable errors
    approval_timeout: float | None = None  # seconds an approval waits; None: until answered
    # context compaction (daemon config "context"): compact when a request would
    # fill this share of (window - output reserve); the model that summarizes
    # (MODEL[/THINKING], None: the agent's own); the share of the window a
    # replayed tool result may take before it is cut
    compact_at: float = 0.8
    summary_model: str | None = None
    tool_result_share: float = 0.25
    daily: DailyLimits = field(default_factory=DailyLimits)  # and the default root budget


class Neighbours(Protocol):
    """What an actor asks of the agents around it (the supervisor answers)."""

    def label_of(self, uuid: str) -> str:
        """'name (uuid)' of a live agent, else the uuid."""
        ...

    def awaited_by(self, uuid: str) -> set[str]:
        """Agents whose mail to ``uuid`` belongs to a wait it is in, not to its inbox."""
        ...

    def turn_finished(self, uuid: str) -> None:
        """A turn of ``uuid`` ended (waits re-check)."""
        ...

    def resolve_model(
        self, text: str, *, current_thinking: ThinkingLevel = "none"
    ) -> ResolvedModel: ...


def _always() -> bool:
    return True


@dataclass
class ActorDeps:
    # not frozen: a config reload puts a new ``permissions`` here, and every
    # actor shares this one object, so each call sees the new rules
    db: AsyncStore
    pool: ProviderPool
    tools: ToolRegistry
    config: AgentConfig
    neighbours: Neighbours
    ops: AgentOps | None = None  # None: the agent tools (fork, kill, send, wait) are not offered
    # which tool calls may run (default: the built-in policies, "default" for every agent)
    permissions: Permissions = field(default_factory=Permissions)
    # the MCP servers agents may use (agents/tools/mcp); None: none configured
    mcp: McpHub | None = None
    # does this daemon hold its lease on a shared database (daemon/cluster):
    # asked before each model call, so a daemon that was paused past its
    # lease makes none before its agents are stopped
    lease_held: Callable[[], bool] = _always
    # spans of turns, model calls and tool calls (agents/tracing); None: traces off
    tracer: Tracer | None = None
