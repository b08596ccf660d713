"""What every control method answers: the protocol's results, defined once.

TypedDicts of the standard library, not msgspec Structs, so the one
definition serves both sides: the daemon builds them (the type checker holds
it to these shapes, and tests decode the real daemon's answers into them with
msgspec in strict mode), and ``ikictl`` — which must not import msgspec at
start-up — names them in its annotations only (``if TYPE_CHECKING``), at no
cost. Params are in ``protocol.params``; docs/protocol.md shows each method.

Timestamps are RFC 3339 text (``2026-11-23T20:29:03.123456Z``), as msgspec
writes a datetime.
"""

# no ``from __future__ import annotations``: TypedDict must see NotRequired
from typing import Any, Literal, NotRequired, TypedDict

# re-exported: one module of results for both sides
from protocol.approval_results import Approval as Approval
from protocol.approval_results import Approved as Approved
from protocol.cluster_results import ClusterState as ClusterState
from protocol.cluster_results import DaemonsListed as DaemonsListed
from protocol.cluster_results import Moved as Moved
from protocol.mcp_results import McpPrompt as McpPrompt
from protocol.mcp_results import McpPromptArgument as McpPromptArgument
from protocol.mcp_results import McpPrompts as McpPrompts
from protocol.mcp_results import McpServers as McpServers
from protocol.mcp_results import McpServerState as McpServerState
from protocol.mcp_results import McpTool as McpTool
from protocol.mcp_results import McpTools as McpTools
from protocol.schedule_results import Schedule as Schedule
from protocol.schedule_results import ScheduleRemoved as ScheduleRemoved
from protocol.schedule_results import ScheduleRun as ScheduleRun
from protocol.schedule_results import ScheduleShown as ScheduleShown
from protocol.schema_results import SavedSchema as SavedSchema
from protocol.schema_results import SchemaDeleted as SchemaDeleted
from protocol.schema_results import SchemaShown as SchemaShown
from protocol.setting_results import PolicySet as PolicySet
from protocol.setting_results import PrioritySet as PrioritySet
from protocol.trace_results import TracesState as TracesState
from protocol.worktree_results import Worktree as Worktree
from protocol.worktree_results import WorktreeBrief as WorktreeBrief
from protocol.worktree_results import WorktreeDiff as WorktreeDiff
from protocol.worktree_results import WorktreeKept as WorktreeKept
from protocol.worktree_results import WorktreeMerged as WorktreeMerged
from protocol.worktree_results import WorktreePruned as WorktreePruned

AgentState = Literal[
    "idle",
    "waiting_for_llm",
    "waiting_for_provider",
    "executing_tool",
    "retrying",
    "waiting_for_approval",
    "compacting",
    "needs_host",  # adopted where its folder or an MCP server is missing
]
TurnStatus = Literal[
    "completed", "cancelled", "interrupted", "error", "tool_limit", "budget_exceeded"
]


class Ok(TypedDict):
    ok: bool


class AgentCounts(TypedDict):
    running: int
    dead: int


class Status(TypedDict):
    version: str
    pid: int
    started_at: str
    uptime: float
    socket: str
    database: str
    agents: AgentCounts
    connections: int
    default_model: str
    max_line_bytes: int  # a longer request line is refused (error -32004) and the connection closed
    # protocol.PROTOCOL_VERSION: incremented on an incompatible change only
    protocol_version: int
    cluster: ClusterState  # this daemon among those sharing its database
    policies: list[str]  # the tool-permission policies an agent may be given (agent.set_policy)
    default_policy: str  # the one an agent made without a policy follows
    traces: TracesState  # OpenTelemetry export, as decided at start


class Prices(TypedDict):
    input: float
    output: float
    cached_input: float | None


class ModelRow(TypedDict):
    """One row of ``models.list`` (and of ``ikictl models --offline``)."""

    provider: str
    model: str
    aliases: list[str]
    api: str
    context_window: int | None
    max_output_tokens: int | None
    thinking: dict[str, str]  # none/low/med/high -> what that level means for this model
    prices: Prices | None


class ProviderRow(TypedDict):
    name: str
    label: str
    api: str
    base_url: str
    key_env: list[str]
    key_set: bool


class ProviderCheck(TypedDict):
    provider: str
    ok: bool
    status: NotRequired[int]
    error: NotRequired[str]


class ModelInfo(TypedDict):
    provider: str
    model: str
    thinking_level: str
    description: str
    warnings: list[str]


class AgentInfo(TypedDict):
    uuid: str
    # the shortest prefix (8+ characters) of uuid naming it alone among all agents
    short: str
    name: str
    parent: str | None
    provider: str
    model: str
    thinking_level: str
    can_think: bool  # false: the catalog says the model cannot think (its level is moot)
    # provider/model/level of a model switch queued behind the running turn
    next_model: str | None
    system_prompt: str
    status: str  # running | dead
    state: AgentState | None  # None for a dead agent
    current_turn: str | None
    queued: int
    created_at: str
    ended_at: str | None
    cwd: str | None  # where its tools run; None: the daemon's (agents made before agents had one)
    policy: list[str]  # its tool-permission policy chain, ancestors' first
    yolo: bool  # the chain allows every tool call (its policies are all yolo ones)
    mcp: list[str]  # the MCP servers it uses now: its own list, or the configured defaults
    # its model calls' place in the limiter; None: each turn's, by who started it
    priority: str | None
    worktree: WorktreeBrief | None  # its git worktree (made with {worktree}), else None
    daemon: str | None  # the id of the daemon that runs it (docs/cluster.md); None: none yet


class UsageBrief(TypedDict):
    turns: int  # prompts answered
    calls: int  # model calls they took (a turn with tools takes several)
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


class ListedAgent(AgentInfo):
    usage: UsageBrief
    # when its newest own history row was written (created_at when it has none)
    last_active_at: str


class UsageTotals(TypedDict):
    provider: str | None
    model: str | None
    turns: int  # prompts that made a model call
    calls: int  # model calls: a turn with tools makes several
    input_tokens: int
    output_tokens: int
    thinking_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    cost_usd: float | None


class UsageReport(TypedDict):
    agent_uuid: str
    descendants: bool
    agents: int
    by_model: list[UsageTotals]
    total: UsageTotals
    unpriced: list[str]
    budget: NotRequired["BudgetInfo"]  # agent.usage of one agent: the budgets in force


class AllUsage(TypedDict):
    agents: int
    roots: list[UsageReport]


class LastTurn(TypedDict):
    turn: str
    status: TurnStatus
    reply: str
    error: dict[str, Any] | None


class ContextInfo(TypedDict):
    """``agent.show``: a live agent's context against its model's window."""

    window: int  # tokens the model reads
    # where the window comes from: catalog | config | default (a conservative
    # figure for a model the catalog does not know) | provider (a refusal named it)
    window_source: str
    max_output: int  # tokens reserved for the answer
    limit: int  # input tokens above which the next call compacts first
    compact_at: float
    tokens: int  # estimated input tokens of the next request
    calibrated: bool  # the estimate is scaled by what the provider reported
    messages: int  # messages in the replayed context
    summarized: bool  # the context begins with a compaction summary


class BudgetLine(TypedDict):
    """A budget in force (set on ``agent``) and its whole subtree's spend."""

    agent: str
    name: str
    tree: bool  # set on a root: it covers the whole tree
    max_cost_usd: float | None  # None: no such limit
    max_tokens: int | None
    max_turns: int | None
    allow_unpriced: bool
    spent_usd: float  # the priced calls' cost
    unpriced: list[str]  # models spent on with no price: the whole cost is unknown
    spent_tokens: int  # input + output (thinking included)
    spent_turns: int  # prompts that made a model call
    set_at: str


class BudgetInfo(TypedDict):
    budgets: list[BudgetLine]  # in force on the agent: its own first, then each ancestor's


class ShownAgent(AgentInfo):
    usage: UsageTotals
    last_turn: LastTurn | None
    context: ContextInfo | None  # None for a dead agent
    last_active_at: str  # as in agent.list
    budget: NotRequired[BudgetInfo]  # the budgets in force and their spend


class Created(TypedDict):
    """``agent.create`` and ``agent.fork``."""

    agent: AgentInfo
    model: ModelInfo
    turn: str | None
    # with ``wait`` and a prompt: how the first turn ended
    outcome: NotRequired["TurnOutcome"]


class Forked(TypedDict):
    """``agent.fork`` with ``count`` or ``prompts``: each child as agent.fork
    answers for one, in order."""

    children: list[Created]


class Queued(TypedDict):
    turn: str
    position: int


class TokenUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    thinking_tokens: int
    cached_tokens: int


class TurnOutcome(TypedDict):
    """``agent.prompt`` with ``wait: true``; ``agent.wait``."""

    turn: str
    status: TurnStatus
    reply: str
    error: dict[str, Any] | None
    usage: TokenUsage
    cost_usd: float | None
    message: NotRequired[str]  # budget_exceeded: which budget, what was spent, how to raise it
    data: NotRequired[Any]  # a prompt with a schema: its answer, parsed (None: not valid)


class Compacted(TypedDict):
    """``agent.compact``: what was done. ``compacted`` false: nothing was
    (``reason`` says why), or the summary failed (``message`` says why)."""

    compacted: bool
    reason: str  # "manual" when it ran; else why there was nothing to compact
    messages: int  # context messages the summary replaced
    tokens_before: int  # estimated input tokens of the context
    tokens_after: int
    summary_tokens: int
    usage: TokenUsage  # of the summary calls (paid even when they failed)
    cost_usd: float | None
    model: str  # provider/model that wrote the summary ("" when none ran)
    error: NotRequired[dict[str, Any]]  # the provider's error, when a call failed
    message: NotRequired[str]  # what went wrong: the summary was not stored


class Subscribed(TypedDict):
    subscription: int
    next_seq: int


class Cancelled(TypedDict):
    cancelled: bool


class Killed(TypedDict):
    killed: list[str]
    # with prune_worktree: the worktree deleted (its note says a branch kept)
    worktree: NotRequired[Worktree]


class ImageInfo(TypedDict):
    """An image, described: never its data."""

    media_type: str
    bytes: int | None  # its decoded size; None for an image given by URL
    url: str | None


class HistoryBlock(TypedDict):
    """One block of a history row's message (``agent.history`` with ``blocks``).
    ``type`` says which keys it has (docs/protocol.md, "History blocks"):
    text {text, signed}; thinking {text, redacted, signed}; tool_call {id,
    name, arguments, signed}; tool_result {tool_call_id, name, content,
    is_error, images}; image and document {name, media_type, bytes, sha256,
    url}: an attached file, never its bytes. ``signature`` only with
    ``signatures: true`` (on text, thinking and tool_call blocks)."""

    type: Literal["text", "thinking", "tool_call", "tool_result", "image", "document"]
    text: NotRequired[str]
    redacted: NotRequired[bool]
    signed: NotRequired[bool]  # the provider's opaque signature is kept with the block
    signature: NotRequired[str | None]
    id: NotRequired[str]
    name: NotRequired[str | None]
    arguments: NotRequired[dict[str, Any]]
    tool_call_id: NotRequired[str]
    content: NotRequired[str]
    is_error: NotRequired[bool]
    images: NotRequired[list[ImageInfo]]
    media_type: NotRequired[str]
    bytes: NotRequired[int | None]
    url: NotRequired[str | None]
    sha256: NotRequired[str | None]  # an attached file's: how the store keeps it


class RowUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    thinking_tokens: int
    cached_tokens: int
    cache_write_tokens: int


HistoryTurnStatus = Literal["completed", "interrupted", "running", "incomplete"]


class HistoryRow(TypedDict):
    id: int
    agent: str
    kind: str
    content: str
    data: dict[str, Any] | None
    created_at: str
    # the rest only with ``blocks: true``
    blocks: NotRequired[list[HistoryBlock]]  # [] for a row without a message
    role: NotRequired[Literal["user", "assistant", "tool"] | None]
    provider: NotRequired[str | None]  # assistant rows
    model: NotRequired[str | None]
    thinking_level: NotRequired[str | None]
    usage: NotRequired[RowUsage | None]  # assistant and usage rows
    cost_usd: NotRequired[float | None]  # None: unpriced (or no usage)
    finish_reason: NotRequired[str | None]  # assistant rows
    turn: NotRequired[str | None]  # the turn it belongs to; None before the first
    turn_status: NotRequired[HistoryTurnStatus | None]
    compacted: NotRequired[bool]  # a compaction covers it: replay shows its summary instead
    inherited: NotRequired[bool]  # a row of an ancestor (``agent`` is not the agent asked)


class History(TypedDict):
    messages: list[HistoryRow]
    more: bool


class MessageId(TypedDict):
    message_id: int


class MailId(TypedDict):
    id: int


# "from" is a Python keyword, hence the functional form
Mail = TypedDict(
    "Mail",
    {
        "id": int,
        "from": str | None,
        "to": str,
        "body": str,
        "created_at": str,
        "read_at": str | None,
    },
)


class DaemonSubscribed(TypedDict):
    subscribed: bool


class Removed(TypedDict):
    """``agent.remove`` and ``agent.prune``."""

    removed: list[str]  # uuids no longer listed (with dry_run: those that would be)
    purged_rows: int  # rows deleted (messages, mail, queued prompts, approvals)
    # agent.remove with prune_worktree: the worktree deleted (its note says a branch kept)
    worktree: NotRequired[Worktree]


class ExportedAgent(TypedDict):
    uuid: str
    name: str
    provider: str
    model: str
    thinking_level: str
    system_prompt: str
    cwd: str | None
    policy: list[str] | None  # its policy chain; None: the configured default
    mcp: list[str] | None  # its MCP servers; None: the configured defaults
    parent: str | None
    created_at: str


class ExportedRow(TypedDict):
    id: int
    agent: str
    kind: str
    content: str
    data: dict[str, Any] | None
    message: dict[str, Any] | None  # the stored providers.types.Message, as JSON
    created_at: str


class ExportDoc(TypedDict):
    """``agent.export``; what ``agent.import`` takes back."""

    format: Literal["ikigai-agent"]
    version: int  # 1
    exported_at: str
    agent: ExportedAgent
    messages: list[ExportedRow]  # its whole lineage, inherited rows included, oldest first
    blobs: NotRequired[dict[str, dict[str, Any]]]  # sha256 -> {media_type, size, data}: files


class FleetWait(TypedDict):  # provider: the last ``provider_wait``'s fields
    on: Literal["provider", "approval", "tool"]
    provider: NotRequired[str]
    position: NotRequired[int]
    expected_wait_s: NotRequired[float]
    reason: NotRequired[Literal["concurrency", "rate", "paused"]]
    approval: NotRequired[str]
    tool: NotRequired[str]


class FleetAgent(TypedDict):
    uuid: str
    short: str
    name: str
    parent: str | None
    tree: str  # the uuid of its root agent (itself for a root)
    state: AgentState
    provider: str
    model: str
    thinking_level: str
    priority: str | None  # as in AgentInfo
    queued: int  # prompts waiting behind the running turn (``turn``)
    turn: str | None
    tokens_per_s: float  # output, over the last few seconds (streamed text, then usage)
    usage: UsageBrief  # its own turns so far (not its descendants'); cost_usd None: unpriced
    budget: BudgetLine | None  # the nearest budget in force (its own or an ancestor's)
    waiting: FleetWait | None


class FleetBucket(TypedDict):
    kind: str  # requests, input_tokens, output_tokens, tokens
    source: Literal["configured", "learned"]
    level: float
    capacity: float
    per_minute: float


class FleetLimiter(TypedDict):  # one provider key's limiter
    provider: str
    key: str  # a short hash naming the key, never the key
    in_flight: int
    max_concurrent: int
    queued: dict[str, int]  # priority -> calls waiting
    paused_for_s: float  # 0 when not paused; paused_until: the Unix time it ends
    paused_until: float | None
    pause_reason: str | None
    buckets: list[FleetBucket]


class FleetSnapshot(TypedDict):  # every live agent, every provider key's queue
    at: float  # Unix time of the snapshot
    version: int  # changes when an agent's state, wait or turn does (``since``)
    agents: list[FleetAgent]
    limiters: list[FleetLimiter]


# The result type of each method (the keys are protocol's method names);
# agent.prompt with wait answers TurnOutcome, agent.usage with no agent AllUsage.
RESULTS: dict[str, Any] = {
    "daemon.status": Status,
    "daemon.shutdown": Ok,
    "daemon.reload": Ok,
    "models.list": list[ModelRow],
    "providers.list": list[ProviderRow],
    "providers.check": ProviderCheck,
    "agent.create": Created,
    "agent.list": list[ListedAgent],
    "agent.show": ShownAgent,
    "agent.prompt": Queued,
    "agent.subscribe": Subscribed,
    "agent.unsubscribe": Ok,
    "agent.cancel": Cancelled,
    "agent.kill": Killed,
    "agent.fork": Created,
    "agent.set_model": ModelInfo,
    "agent.set_system": Ok,
    "agent.set_priority": PrioritySet,
    "agent.set_policy": PolicySet,
    "agent.set_budget": BudgetInfo,
    "agent.history": History,
    "agent.usage": UsageReport,
    "agent.clear": MessageId,
    "agent.mark": MessageId,
    "agent.rewind": MessageId,
    "agent.compact": Compacted,
    "mail.send": MailId,
    "mail.inbox": list[Mail],
    "mcp.list": McpServers,
    "mcp.tools": McpTools,
    "mcp.restart": McpServerState,
    "mcp.prompts": McpPrompts,
    "daemon.subscribe": DaemonSubscribed,
    "daemon.unsubscribe": Ok,
    "agent.wait": TurnOutcome,
    "agent.rename": AgentInfo,
    "agent.remove": Removed,
    "agent.prune": Removed,
    "agent.export": ExportDoc,
    "agent.import": Created,
    "agent.approve": Approved,
    "approvals.list": list[Approval],
    "fleet.snapshot": FleetSnapshot,
    "schedule.add": Schedule,
    "schedule.list": list[Schedule],
    "schedule.show": ScheduleShown,
    "schedule.remove": ScheduleRemoved,
    "schedule.pause": Schedule,
    "schedule.resume": Schedule,
    "schedule.run": ScheduleRun,
    "worktree.list": list[Worktree],
    "worktree.diff": WorktreeDiff,
    "worktree.merge": WorktreeMerged,
    "worktree.prune": WorktreePruned,
    "daemons.list": DaemonsListed,
    "agent.move": Moved,
    "schema.save": SavedSchema,
    "schema.list": list[SavedSchema],
    "schema.show": SchemaShown,
    "schema.delete": SchemaDeleted,
}
