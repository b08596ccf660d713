"""The rows the store returns and the entries it takes. msgspec Structs, so the
daemon can put them on the wire as they are."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, NamedTuple

import msgspec

from providers.types import Message

# Every kind a messages row can have. See docs/store.md for each one's data.
KINDS: Final = frozenset(
    {
        "system",  # the system prompt was set (creation or update); content = the prompt
        "user",  # a user Message (message_json)
        "assistant",  # an assistant Message + provider/model/thinking/finish_reason/usage in data
        "tool_call",  # one tool call of the assistant row before it (for people; not replayed)
        "tool_result",  # a tool-role Message with the results (message_json)
        "clear",  # the context starts afresh after this row
        "mark",  # a checkpoint; data.label
        "rewind",  # back to a mark; data.mark_id
        "fork",  # first row of a forked agent; data.parent_uuid, data.at_message_id
        "agent_killed",  # the agent ended; data.reason
        "model_switch",  # provider/model/thinking changed; data.from, data.to
        "interrupted",  # the turn starting at data.turn_start was cancelled
        "usage",  # tokens spent without an assistant message (e.g. a cancelled stream)
        # a tool call passed the gate or not; data: tool_call_id, tool, decision,
        # rule, policy, by, reason (+ approval, remember when asked). Not replayed
        "permission",
        # the context up to row data.upto is replaced in replay by a summary:
        # content = its text, message_json = the summary Message (a user one);
        # data: upto + the caller's (tokens_before, tokens_after, reason...).
        # Written by Store.compact; see docs/store.md for how replay folds it
        "compaction",
    }
)
# Kinds whose row holds a providers.types.Message, and the role it must have.
MESSAGE_ROLES: Final = {"user": "user", "assistant": "assistant", "tool_result": "tool"}
# Kinds the generic append takes; the others have their own Store method.
APPENDABLE: Final = frozenset(
    {"user", "assistant", "tool_result", "clear", "mark", "rewind", "interrupted", "usage"}
)


class AgentRecord(msgspec.Struct, frozen=True, kw_only=True):
    uuid: str
    name: str
    parent_uuid: str | None
    fork_message_id: int | None
    provider: str
    model: str
    thinking_level: str
    system_prompt: str
    status: str  # "running" | "dead"
    created_at: datetime
    ended_at: datetime | None
    cwd: str | None = None  # where its tools run; None: the daemon's own
    policy: str | None = None  # its policy chain, JSON list of names; None: the default
    mcp: str | None = None  # its MCP servers, JSON list of names; None: the configured defaults
    hidden_at: datetime | None = None  # removed from listings (agent.remove); None: listed
    # its model calls' place in the provider limiter: interactive or
    # background; None: each turn's, by who started it (0007)
    priority: str | None = None
    daemon: str | None = None  # the daemon that runs it (0011); None: not placed yet
    seq: int | None = None  # its next event's seq after a hand-over (0011); None: 1

    @property
    def alive(self) -> bool:
        return self.status != "dead"


class MessageRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    agent_uuid: str
    kind: str
    content: str
    data: dict[str, Any] | None
    message: Message | None  # user, assistant and tool_result rows; a compaction's summary
    created_at: datetime


class Replayed(NamedTuple):
    """One message of an agent's replayed context (Store.replay_entries)."""

    id: int  # the row it comes from (for a summary: the compaction row)
    message: Message
    summary: bool  # the summary of a compaction, standing for the rows it covers


class AgentRef(NamedTuple):
    """What short ids are judged against: an agent's uuid, name and life."""

    uuid: str
    name: str
    alive: bool


class WorktreeSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A git worktree made for an agent (agents/worktrees): its folder is the
    agent's cwd."""

    path: str
    branch: str
    base: str  # the commit it started from
    repo: str  # the checkout it was made from: where merges land


class ForkChild(msgspec.Struct, frozen=True, kw_only=True):
    """One child of Store.fork_many: its name (None: the parent's, suffixed)
    and its first prompt (a user Message), if any."""

    name: str | None = None
    prompt: Message | None = None
    # what the first turn's user row carries beside its turn id
    meta: dict[str, Any] | None = None
    # chosen before the transaction (a worktree is named after its agent):
    # its id, its own cwd and its worktree's row
    uuid: str | None = None
    cwd: str | None = None
    worktree: WorktreeSpec | None = None


class QueuedPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt acknowledged and not yet started (see store/_turns.py)."""

    id: int
    agent_uuid: str
    turn: str
    text: str
    mail_ids: list[int]
    created_at: datetime
    # files sent with it (agent.prompt attachments): image and document
    # blocks as builtins, each with its ``type`` tag
    attachments: list[dict[str, Any]] = msgspec.field(default_factory=list)
    # its tool choice (agent.prompt tool_choice): {mode, name?}; None: auto
    tool_choice: dict[str, str] | None = None
    # the JSON Schema its final answer must match (agent.prompt schema)
    schema: dict[str, Any] | None = None


class ApprovalRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call the gate asked about (see store/_approvals.py); pending
    while ``decision`` is None."""

    id: str
    agent_uuid: str
    agent_name: str
    turn: str
    tool_call_id: str
    tool: str
    arguments: dict[str, Any]
    rule: str
    policy: str
    created_at: datetime
    decided_at: datetime | None = None
    decision: str | None = None  # allow | deny
    decided_by: str | None = None
    reason: str | None = None

    @property
    def pending(self) -> bool:
        return self.decision is None


class MailRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    from_uuid: str | None
    to_uuid: str
    body: str
    created_at: datetime
    read_at: datetime | None


class UsageTotals(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens and cost of one (provider, model), or of everything (both None)."""

    provider: str | None
    model: str | None
    turns: int = 0  # prompts that made a model call (one per turn, see calls)
    calls: int = 0  # model calls (assistant messages): a turn with tools makes several
    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    # US dollars from the catalog's prices; None when unknown: the model has no
    # price (in the grand total: any of them has none, see UsageReport.unpriced)
    cost_usd: float | None = None


class UsageReport(msgspec.Struct, frozen=True, kw_only=True):
    agent_uuid: str
    descendants: bool  # totals include every descendant of the agent
    agents: int  # how many agents the totals cover
    by_model: list[UsageTotals]  # one per (provider, model requested), most expensive first
    total: UsageTotals
    unpriced: list[str]  # "provider/model" with tokens but no price in the catalog


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """One row for ``Store.append_many``.

    user/assistant/tool_result need ``message``; ``content`` is derived from it
    when None. For assistant, ``data`` may carry ``usage`` (a Usage or a dict)
    and ``finish_reason``; the store adds provider, model, thinking_level and
    the thinking text, and writes one tool_call row after it per tool call.
    """

    kind: str
    content: str | None = None
    data: dict[str, Any] | None = None
    message: Message | None = None
