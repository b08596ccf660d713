"""Params of every control method, as msgspec Structs: the daemon decodes each
request's params into its Struct, and a mismatch becomes -32602 naming the
field. Clients need not import this (see protocol/__init__.py)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

import protocol as p
from protocol._params_base import _P
from protocol.schema_params import SchemaName, SchemaRef, SchemaSave

# Names, refs and model texts are short: a bound keeps every error that quotes
# them short too. Prompts, system texts and mail may fill a line.
Ref = Annotated[str, Meta(max_length=p.MAX_NAME)]
# the handlers check the lower bound of counts with their own message
Count = Annotated[int, Meta(le=p.MAX_INT)]
RowId = Annotated[int, Meta(ge=0, le=p.MAX_INT)]
# an agent's working directory: an absolute path (PATH_MAX on Linux)
Folder = Annotated[str, Meta(min_length=1, max_length=4096)]

EXCERPT = 200  # characters of client text an error message may quote
# the MCP servers an agent may use: names of configured servers ([]: none)
McpNames = Annotated[list[Ref], Meta(max_length=256)]
# a model call's place in its provider key's queue (agents/limiter)
Priority = Literal["interactive", "background"]



# a budget's limits: a positive amount of US dollars (NaN and infinities are
# refused by the bounds), positive counts
Dollars = Annotated[float, Meta(gt=0, le=1_000_000)]
Limit = Annotated[int, Meta(ge=1, le=p.MAX_INT)]


class BudgetLimits(_P, frozen=True):
    """A budget on an agent and its descendants; each limit optional."""

    max_cost_usd: Dollars | None = None
    max_tokens: Limit | None = None
    max_turns: Limit | None = None
    # a cost limit on a model with no price: its calls count toward tokens/turns only
    allow_unpriced: bool = False


class NoParams(_P, frozen=True):
    pass


class ModelsList(_P, frozen=True):
    provider: Ref | None = None


class ProvidersCheck(_P, frozen=True):
    provider: Ref


class AgentRef(_P, frozen=True):
    agent: Ref


# a git branch name or revision: checked by the daemon (agents/worktrees)
GitRef = Annotated[str, Meta(min_length=1, max_length=250)]


class WorktreeAsk(_P, frozen=True):
    """A git worktree for the new agent (agents/worktrees): on ``branch``
    (default ikigai/<agent name>) from ``from`` (default: the parent's HEAD)."""

    branch: GitRef | None = None
    from_: GitRef | None = msgspec.field(default=None, name="from")


class Create(_P, frozen=True):
    model: Ref | None = None
    name: Ref | None = None
    system: str = ""
    prompt: str | None = None
    wait: bool = False
    cwd: Folder | None = None
    policy: Ref | None = None  # a named policy (config "policies" or a built-in)
    mcp: McpNames | None = None  # None: the servers the config marks default
    priority: Priority | None = None  # None: each turn's, by who started it
    budget: BudgetLimits | None = None  # None: config's budget.root (a root agent)
    worktree: bool | WorktreeAsk = False  # cwd must be in a git repository
    # the daemon to run it (an id, a host name or a label), or "any": the
    # live daemon with the fewest running agents; None: the one asked
    on: Ref | None = None
    traceparent: Any = None  # as agent.prompt's: the trace its first turn continues


class ListAgents(_P, frozen=True):
    include_dead: bool = False


class Attachment(_P, frozen=True):
    """A file sent with a prompt: exactly one of ``data`` (base64, with its
    ``media_type``), ``path`` (absolute, on the daemon's machine) or ``url``
    (http/https, fetched by the daemon). The daemon checks the rest
    (daemon/methods/attachments.py). ``name`` and ``media_type`` are short
    (a bound, as for names: a refusal never quotes them at length)."""

    media_type: Ref | None = None
    data: str | None = None
    name: Ref | None = None
    path: Annotated[str, Meta(max_length=4096)] | None = None  # PATH_MAX on Linux
    url: Annotated[str, Meta(max_length=8192)] | None = None


class ToolNamed(_P, frozen=True):
    """``tool_choice: {"name": TOOL}``: that tool, one the agent has."""

    name: Annotated[str, Meta(min_length=1, max_length=p.MAX_NAME)]


# agent.prompt's tool choice: "auto" (the model decides), "none" (no tool call
# in the turn), "required" (a tool call on the turn's first model call) or
# {"name": TOOL} (that tool's); the daemon checks the name against the agent's
ToolChoiceAsk = Literal["auto", "none", "required"] | ToolNamed
TOOL_CHOICE_FORMS = 'must be "auto", "none", "required" or {"name": TOOL}'


class Prompt(_P, frozen=True):
    agent: Ref
    text: str
    wait: bool = False
    attachments: list[Attachment] | None = None
    tool_choice: ToolChoiceAsk | None = None  # None: "auto"
    # a W3C trace context the turn continues; anything malformed is ignored
    traceparent: Any = None
    # the JSON Schema the final answer must match, or a name saved with schema.save
    schema: dict[str, Any] | SchemaName | None = None


class Subscribe(_P, frozen=True):
    agent: Ref
    from_seq: Count | None = None


class Unsubscribe(_P, frozen=True):
    subscription: RowId


class Cancel(_P, frozen=True):
    agent: Ref
    at_boundary: bool = False


class Fork(_P, frozen=True):
    agent: Ref
    model: Ref | None = None
    at: RowId | None = None
    name: Ref | None = None
    prompt: str | None = None
    # several children at once, in one transaction: count copies of ``prompt``
    # (or none), or one child per entry of ``prompts``; the answer is then Forked
    count: Annotated[int, Meta(le=p.MAX_FORKS)] | None = None
    prompts: Annotated[list[str], Meta(max_length=p.MAX_FORKS)] | None = None
    wait: bool = False
    cwd: Folder | None = None
    policy: Ref | None = None  # added to the parent's chain: it can only narrow
    mcp: McpNames | None = None  # None: the parent's
    priority: Priority | None = None  # None: the parent's
    budget: BudgetLimits | None = None  # at most what the parent has left
    # each child in a git worktree of its own; None: as its policy says
    # (fork_isolation), else none
    worktree: bool | WorktreeAsk | None = None
    traceparent: Any = None  # as agent.prompt's: the children's first turns link to it


class SetModel(_P, frozen=True):
    agent: Ref
    model: Ref
    queue: bool = False


class SetSystem(_P, frozen=True):
    agent: Ref
    text: str


class SetPolicy(_P, frozen=True):
    agent: Ref
    policy: Ref | None = None  # a named policy; null or absent: the configured default


class SetPriority(_P, frozen=True):
    agent: Ref
    priority: Priority | None = None  # null or absent: each turn's again, by who started it


class FleetSnapshot(_P, frozen=True):
    """``since``: the ``version`` of the caller's last snapshot; with
    ``wait_s`` the answer waits until the fleet changes after it (an agent's
    state, a provider wait, a turn's end), at most that long."""

    since: Annotated[int, Meta(ge=0, le=p.MAX_INT)] | None = None
    wait_s: Annotated[float, Meta(ge=0, le=60)] = 0.0


class SetBudget(_P, frozen=True):
    agent: Ref
    budget: BudgetLimits | None = None  # None, {} or clear: the agent's own budget removed
    clear: bool = False


class History(_P, frozen=True):
    agent: Ref
    limit: Count | None = msgspec.field(default=None)
    before: RowId | None = None
    blocks: bool = False  # each row's message as blocks, with its model, usage, turn...
    signatures: bool = False  # with blocks: the signatures themselves, not only "signed"


class Usage(_P, frozen=True):
    agent: Ref | None = None
    descendants: bool = False


class Compact(_P, frozen=True):
    agent: Ref
    # the newest turns kept as they are; None: as many as fit in 40% of the window
    keep: Annotated[int, Meta(ge=0, le=p.MAX_INT)] | None = None


class Label(_P, frozen=True):
    agent: Ref
    label: Ref | None = None


class MailSend(_P, frozen=True):
    to: Ref
    text: str
    from_: Ref | None = msgspec.field(default=None, name="from")


class Inbox(_P, frozen=True):
    agent: Ref
    unread: bool = False  # True: only mail not yet read


# an answer's reason is the model's to read: a few lines, not a document
Reason = Annotated[str, Meta(max_length=2000)]


class Approve(_P, frozen=True):
    approval: Ref
    decision: Literal["allow", "deny"]
    remember: Literal["once", "agent", "session"] = "once"
    reason: Reason | None = None


class ApprovalsList(_P, frozen=True):
    agent: Ref | None = None


class McpServer(_P, frozen=True):
    server: Ref


class Wait(_P, frozen=True):
    agent: Ref
    turn: Ref


class Rename(_P, frozen=True):
    agent: Ref
    name: Ref


class Remove(_P, frozen=True):
    agent: Ref
    purge: bool = False  # delete its rows too (those other agents still read are kept)
    # a live agent is killed first, with its descendants; with prune_worktree,
    # its worktree's uncommitted changes are discarded
    force: bool = False
    prune_worktree: bool = False  # delete its git worktree and branch too


class Kill(_P, frozen=True):
    agent: Ref
    prune_worktree: bool = False  # delete its git worktree and branch too
    force: bool = False  # with prune_worktree: even with uncommitted changes


class Prune(_P, frozen=True):
    purge: bool = False
    dry_run: bool = False


class Export(_P, frozen=True):
    agent: Ref
    signatures: bool = True  # False: the opaque signatures are left out of each message


class Import(_P, frozen=True):
    # an agent.export document; checked field by field by daemon/methods/transfer.py
    document: dict[str, Any]
    name: Ref | None = None


# a time rule's texts (cron, a zone, a duration, a date-time): short
RuleText = Annotated[str, Meta(max_length=200)]


class ScheduleAdd(_P, frozen=True):
    """A schedule (agents/schedules): the texts are parsed by the daemon,
    which names the field of a bad one."""

    agent: Ref
    prompt: Annotated[str, Meta(min_length=1)]
    cron: RuleText | None = None
    tz: RuleText | None = None
    every: RuleText | None = None
    at: RuleText | None = None
    in_: RuleText | None = msgspec.field(default=None, name="in")
    fork: bool = False
    keep: Annotated[int, Meta(ge=1, le=10_000)] | None = None
    name: Ref | None = None
    missed: Literal["skip", "once", "all"] = "once"
    overlap: Literal["skip", "queue"] = "skip"
    budget_usd: Dollars | None = None  # each fork's cost budget (only with fork)
    allow_fast: bool = False


class ScheduleRef(_P, frozen=True):
    schedule: Ref  # an id (digits) or a name


class ScheduleShow(_P, frozen=True):
    schedule: Ref
    limit: Annotated[int, Meta(ge=1, le=10_000)] = 50


class ScheduleList(_P, frozen=True):
    all: bool = False  # removed ones too


class WorktreeList(_P, frozen=True):
    all: bool = False  # pruned ones too
    disk: bool = False  # measure each worktree's disk use (reads every file's size)


class WorktreeDiff(_P, frozen=True):
    agent: Ref
    stat: bool = False  # a summary (git diff --stat) instead of the patch


class WorktreeMerge(_P, frozen=True):
    agent: Ref
    into: GitRef | None = None  # default: the branch checked out in the parent's checkout
    squash: bool = False
    message: Annotated[str, Meta(max_length=10_000)] | None = None  # of a squash commit


class WorktreePrune(_P, frozen=True):
    # None: every dead agent's worktree; else these agents' (live ones too)
    agents: Annotated[list[Ref], Meta(max_length=1000)] | None = None
    force: bool = False  # even with uncommitted changes or unmerged commits
    dry_run: bool = False


class Move(_P, frozen=True):
    agent: Ref
    to: Ref  # a daemon id, host or label, or "any" (another live daemon, fewest agents)


class DaemonsList(_P, frozen=True):
    include_gone: bool = False  # stopped and lost daemons too


PARAMS: dict[str, type[_P]] = {
    p.DAEMON_STATUS: NoParams,
    p.DAEMON_SHUTDOWN: NoParams,
    p.DAEMON_RELOAD: NoParams,
    p.MODELS_LIST: ModelsList,
    p.PROVIDERS_LIST: NoParams,
    p.PROVIDERS_CHECK: ProvidersCheck,
    p.AGENT_CREATE: Create,
    p.AGENT_LIST: ListAgents,
    p.AGENT_SHOW: AgentRef,
    p.AGENT_PROMPT: Prompt,
    p.AGENT_SUBSCRIBE: Subscribe,
    p.AGENT_UNSUBSCRIBE: Unsubscribe,
    p.AGENT_CANCEL: Cancel,
    p.AGENT_KILL: Kill,
    p.AGENT_FORK: Fork,
    p.AGENT_SET_MODEL: SetModel,
    p.AGENT_SET_SYSTEM: SetSystem,
    p.AGENT_SET_PRIORITY: SetPriority,
    p.AGENT_SET_POLICY: SetPolicy,
    p.AGENT_SET_BUDGET: SetBudget,
    p.SCHEMA_SAVE: SchemaSave,
    p.SCHEMA_LIST: NoParams,
    p.SCHEMA_SHOW: SchemaRef,
    p.SCHEMA_DELETE: SchemaRef,
    p.AGENT_HISTORY: History,
    p.AGENT_USAGE: Usage,
    p.AGENT_CLEAR: AgentRef,
    p.AGENT_MARK: Label,
    p.AGENT_REWIND: Label,
    p.AGENT_COMPACT: Compact,
    p.MAIL_SEND: MailSend,
    p.MAIL_INBOX: Inbox,
    p.AGENT_APPROVE: Approve,
    p.APPROVALS_LIST: ApprovalsList,
    p.MCP_LIST: NoParams,
    p.MCP_TOOLS: McpServer,
    p.MCP_RESTART: McpServer,
    p.MCP_PROMPTS: McpServer,
    p.DAEMON_SUBSCRIBE: NoParams,
    p.DAEMON_UNSUBSCRIBE: NoParams,
    p.FLEET_SNAPSHOT: FleetSnapshot,
    p.AGENT_WAIT: Wait,
    p.AGENT_RENAME: Rename,
    p.AGENT_REMOVE: Remove,
    p.AGENT_PRUNE: Prune,
    p.AGENT_EXPORT: Export,
    p.AGENT_IMPORT: Import,
    p.SCHEDULE_ADD: ScheduleAdd,
    p.SCHEDULE_LIST: ScheduleList,
    p.SCHEDULE_SHOW: ScheduleShow,
    p.SCHEDULE_REMOVE: ScheduleRef,
    p.SCHEDULE_PAUSE: ScheduleRef,
    p.SCHEDULE_RESUME: ScheduleRef,
    p.SCHEDULE_RUN: ScheduleRef,
    p.WORKTREE_LIST: WorktreeList,
    p.WORKTREE_DIFF: WorktreeDiff,
    p.WORKTREE_MERGE: WorktreeMerge,
    p.WORKTREE_PRUNE: WorktreePrune,
    p.DAEMONS_LIST: DaemonsList,
    p.AGENT_MOVE: Move,
}

HistoryOp = Literal["clear", "mark", "rewind"]


def decode_params(method: str, raw: object) -> _P:
    """Params for ``method`` from the request's ``params`` (absent: {})."""
    kind = PARAMS[method]
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise p.RpcError(p.INVALID_PARAMS, "params must be an object")
    names = _FIELDS[kind]
    for key, value in raw.items():
        # checked here, not left to msgspec: its message would quote the whole key
        if key not in names:
            raise p.RpcError(
                p.INVALID_PARAMS,
                f"invalid params for {method}: Object contains unknown field `{excerpt(key)}`",
            )
        if key in _REF_FIELDS and isinstance(value, str) and "\x00" in value:
            at = value.index("\x00")
            raise p.RpcError(
                p.INVALID_PARAMS,
                f"invalid params for {method}: {key}: contains a NUL character (at character {at})",
            )
    try:
        return msgspec.convert(raw, type=kind)
    except msgspec.ValidationError as e:
        text = str(e)
        # msgspec says "... - at `$.agent`": name the field plainly
        if " - at `$." in text:
            what, _, where = text.rpartition(" - at `$.")
            field = where.rstrip("`")
            bounds = _int_bounds(kind, field) if what.startswith("Expected `int` ") else None
            if bounds is not None:
                what = bounds
            elif field == "tool_choice":  # msgspec's "Invalid enum value..." names no form
                what = TOOL_CHOICE_FORMS
            text = f"{field}: {what}"
        raise p.RpcError(
            p.INVALID_PARAMS, f"invalid params for {method}: {excerpt(text, 2 * EXCERPT)}"
        ) from None


# fields that name something (an agent, a model...): never a NUL, which no
# name holds and PostgreSQL text cannot store
_REF_FIELDS = frozenset(
    {
        "agent",
        "to",
        "from",
        "name",
        "label",
        "model",
        "provider",
        "approval",
        "reason",
        "server",
        "turn",
    }
)
_FIELDS: dict[type[_P], frozenset[str]] = {
    kind: frozenset(f.encode_name for f in msgspec.structs.fields(kind))
    for kind in set(PARAMS.values())
}


def _int_bounds(kind: type[_P], field: str) -> str | None:
    """The whole allowed range of an int field (msgspec names only the bound broken)."""
    for f in msgspec.inspect.type_info(kind).fields:  # type: ignore[attr-defined]
        if f.encode_name != field:
            continue
        options = f.type.types if isinstance(f.type, msgspec.inspect.UnionType) else (f.type,)
        for t in options:
            if isinstance(t, msgspec.inspect.IntType):
                if t.ge is not None and t.le is not None:
                    return f"must be an integer from {t.ge} to {t.le}"
                if t.le is not None:
                    return f"must be an integer at most {t.le}"
    return None


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """At most ``limit`` characters of client text, to quote in an error."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


# ------------------------------------------------------------------ lone surrogates

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any, root: tuple[str | int, ...] = ()) -> str | None:
    """Where the first lone surrogate in a decoded JSON value is, said plainly
    (None: there is none). A surrogate cannot be encoded as UTF-8: once taken
    in, it would fail the answer, an event or a database row much later."""
    found = _find_surrogate(value)
    if found is None:
        return None
    back, match, in_key = found
    path = (*root, *reversed(back))
    if in_key:
        return (
            f"{_where(path)}: a key contains a lone surrogate ({_escaped(match)}); "
            "keys must be valid Unicode"
        )
    what = excerpt(path[-1], 40) if path and isinstance(path[-1], str) else "every string"
    return (
        f"{_where(path)}: contains a lone surrogate ({_escaped(match)}); "
        f"{what} must be valid Unicode"
    )


def _find_surrogate(item: Any) -> tuple[list[str | int], re.Match[str], bool] | None:
    """(the path to it, innermost first; the match; in a key?). Recursive: the
    parser refused anything nested deeper than p.MAX_DEPTH. Tight loops with
    exact type tests: this runs on the event loop over up to a whole line."""
    kind = type(item)
    if kind is str:
        match = None if item.isascii() else _SURROGATE.search(item)
        return None if match is None else ([], match, False)
    if kind is list or kind is dict:
        # a dict's keys are text (JSON), a list's are its indices
        for k, v in item.items() if kind is dict else enumerate(item):
            if type(k) is str and not k.isascii() and (match := _SURROGATE.search(k)):
                return [], match, True
            t = type(v)
            if t is str:
                if not v.isascii() and (match := _SURROGATE.search(v)):
                    return [k], match, False
            elif t is list or t is dict:
                inner = _find_surrogate(v)
                if inner is not None:
                    inner[0].append(k)
                    return inner
    return None


def _escaped(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x} at character {found.start()}"


def _where(path: tuple[str | int, ...]) -> str:
    if not path:
        return "request"
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f"{'.' if out else ''}{excerpt(part, 40)}"
    return out
