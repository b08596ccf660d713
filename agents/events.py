"""What an agent publishes: the provider's stream events plus its own.

Every event in an agent's log is a LogEntry with a sequence number; the daemon
sends these to subscribers as they are (msgspec encodes the tagged union).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from providers.types import ProviderError, StreamEvent, Usage

AgentState = Literal[
    "idle",
    "waiting_for_llm",
    "waiting_for_provider",  # its model call waits in the provider limiter's queue
    "executing_tool",
    "retrying",
    "waiting_for_approval",
    "compacting",
    "needs_host",  # adopted by a daemon whose host lacks its folder or an MCP server
]
TurnStatus = Literal[
    "completed", "cancelled", "interrupted", "error", "tool_limit", "budget_exceeded"
]


# gc=False: events and log entries hold only values and other structs, never
# anything that could point back at them, so the collector need not track
# them; an agent's event log keeps its last 256 entries, and with a thousand
# agents a full collection walking them stalled every stream for ~300 ms
class _Event(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    pass


class TurnStarted(_Event, tag="turn_started"):
    prompt: str
    provider: str
    model: str
    thinking_level: str


class TurnEnded(_Event, tag="turn_ended"):
    """completed: the model stopped; cancelled: stopped at a boundary, history
    kept; interrupted: stopped mid-way, the turn left out of the context;
    error: a provider error that was not (or no longer) retried; tool_limit:
    the tool-turn limit was reached; budget_exceeded: a model call could have
    crossed a budget and was not made (``message`` says which budget, what was
    spent and how to raise it)."""

    status: TurnStatus
    error: ProviderError | None = None
    message: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)  # every response of the turn
    cost_usd: float | None = None  # None when a model used has no price in the catalog
    # the answer matching the prompt's schema, parsed; absent without a schema
    data: Any = msgspec.UNSET


class StateChanged(_Event, tag="state"):
    state: AgentState


class Queued(_Event, tag="queued"):
    turn: str
    position: int  # 1: next after the running turn


class RetryScheduled(_Event, tag="retry"):
    attempt: int  # the attempt that is coming, from 2
    delay: float  # seconds
    error: ProviderError
    model: str
    discarded_output: bool = False  # a partial answer was thrown away


class ProviderWait(_Event, tag="provider_wait"):
    """A model call waits in its provider key's limiter (agents/limiter):
    ``position`` 1 is next; ``reason``: concurrency (every slot of the key
    is taken), rate (a request or token bucket is empty) or paused (the key
    met a 429 or 529)."""

    provider: str
    position: int
    expected_wait_s: float
    reason: Literal["concurrency", "rate", "paused"]


class FallbackUsed(_Event, tag="fallback"):
    from_model: str
    to_model: str
    error: ProviderError


class ToolStarted(_Event, tag="tool_started"):
    id: str
    name: str
    arguments: dict[str, Any]


class ToolProgress(_Event, tag="tool_progress"):
    """A long tool call (an MCP server's) reports how far it has got."""

    id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None


class ToolFinished(_Event, tag="tool_finished"):
    id: str
    name: str
    is_error: bool
    content: str  # possibly shortened for the event; the full text is in history


class ApprovalRequested(_Event, tag="approval_requested"):
    """A tool call waits for a person (or a script) to answer ``agent.approve``."""

    approval: str  # the id to answer with; the same after a daemon restart
    tool: str
    arguments: dict[str, Any]
    tool_call_id: str
    rule: str  # the label of the rule that asked
    policy: str  # the policy of the agent's chain that rule belongs to


class ApprovalDecided(_Event, tag="approval_decided"):
    approval: str
    decision: Literal["allow", "deny"]
    by: str  # who answered: a client, "timeout", "cancel"
    reason: str | None = None
    remember: Literal["once", "agent", "session"] = "once"


class CompactionStarted(_Event, tag="compaction_started"):
    """The oldest part of the context is being summarized (history keeps it all).
    reason: auto (the next request would not fit), manual (agent.compact),
    context_length (the provider refused a request as too long)."""

    reason: str
    messages: int  # context messages the summary will replace
    tokens_before: int  # estimated input tokens of the context before
    model: str  # provider/model writing the summary


class CompactionDone(_Event, tag="compaction_done"):
    reason: str
    messages: int
    tokens_before: int
    tokens_after: int  # estimated, with the summary in place
    summary_tokens: int
    usage: Usage = msgspec.field(default_factory=Usage)  # of the summary calls
    cost_usd: float | None = None
    model: str = ""


class CompactionFailed(_Event, tag="compaction_failed"):
    reason: str
    message: str
    error: ProviderError | None = None


class Notice(_Event, tag="notice"):
    text: str


class ModelSwitched(_Event, tag="model_switched"):
    provider: str
    model: str
    thinking_level: str
    description: str
    warnings: list[str] = msgspec.field(default_factory=list)


class AgentEnded(_Event, tag="agent_ended"):
    reason: str


class Lagged(_Event, tag="lagged"):
    """The subscriber fell behind (or asked for events no longer kept): events
    from ``resume_from`` on were not delivered; subscribe again from it (the
    store's history has everything)."""

    resume_from: int
    oldest_kept: int


AgentOwnEvent = (
    TurnStarted
    | TurnEnded
    | StateChanged
    | Queued
    | RetryScheduled
    | ProviderWait
    | FallbackUsed
    | ToolStarted
    | ToolProgress
    | ToolFinished
    | ApprovalRequested
    | ApprovalDecided
    | CompactionStarted
    | CompactionDone
    | CompactionFailed
    | Notice
    | ModelSwitched
    | AgentEnded
    | Lagged
)
AgentEvent = StreamEvent | AgentOwnEvent


class LogEntry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    seq: int
    agent: str
    event: AgentEvent
    turn: str | None = None
