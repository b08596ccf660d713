"""The control protocol: JSON-RPC 2.0, one JSON object per line (UTF-8), over
a Unix socket. This module is the contract between ``ikigaid`` and its clients;
it imports only the standard library so ``ikictl`` starts fast. The daemon
validates params with the msgspec types in ``protocol.params``.

See docs/protocol.md for every method with an example session.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # importing typing itself costs ikictl start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


VERSION = 1
# The protocol's version, reported by daemon.status: incremented on an
# incompatible change (a method, param or result key removed or changed in
# meaning); additions (a new method, param or result key) keep it.
PROTOCOL_VERSION = 2
MAX_LINE = 1 << 20  # bytes; a longer line is refused and that connection closed
# Limits on what a request may hold (docs/protocol.md, "Errors"): deeper
# nesting is refused before it is parsed, the rest is -32602 naming the field.
MAX_DEPTH = 64  # arrays and objects nested in one line
MAX_INT = (1 << 53) - 1  # ids, seqs, limits, message ids: what JSON numbers hold exactly
MAX_ID = 256  # characters of a string request id
MAX_FORKS = 1000  # children one agent.fork makes ({count} or {prompts})
MAX_NAME = 256  # characters of an agent reference, name, label, model or provider text

# ------------------------------------------------------------------ methods

DAEMON_STATUS = "daemon.status"
DAEMON_SHUTDOWN = "daemon.shutdown"
DAEMON_RELOAD = "daemon.reload"
MODELS_LIST = "models.list"
PROVIDERS_LIST = "providers.list"
PROVIDERS_CHECK = "providers.check"
AGENT_CREATE = "agent.create"
AGENT_LIST = "agent.list"
AGENT_SHOW = "agent.show"
AGENT_PROMPT = "agent.prompt"
AGENT_SUBSCRIBE = "agent.subscribe"
AGENT_UNSUBSCRIBE = "agent.unsubscribe"
AGENT_CANCEL = "agent.cancel"
AGENT_KILL = "agent.kill"
AGENT_FORK = "agent.fork"
AGENT_SET_MODEL = "agent.set_model"
AGENT_SET_SYSTEM = "agent.set_system"
AGENT_SET_PRIORITY = "agent.set_priority"
AGENT_SET_POLICY = "agent.set_policy"
AGENT_SET_BUDGET = "agent.set_budget"
AGENT_HISTORY = "agent.history"
AGENT_USAGE = "agent.usage"
AGENT_CLEAR = "agent.clear"
AGENT_MARK = "agent.mark"
AGENT_REWIND = "agent.rewind"
AGENT_COMPACT = "agent.compact"
MAIL_SEND = "mail.send"
MAIL_INBOX = "mail.inbox"
AGENT_APPROVE = "agent.approve"
APPROVALS_LIST = "approvals.list"
MCP_LIST = "mcp.list"
MCP_TOOLS = "mcp.tools"
MCP_RESTART = "mcp.restart"
MCP_PROMPTS = "mcp.prompts"
AGENT_WAIT = "agent.wait"
AGENT_RENAME = "agent.rename"
AGENT_REMOVE = "agent.remove"
AGENT_PRUNE = "agent.prune"
AGENT_EXPORT = "agent.export"
AGENT_IMPORT = "agent.import"
DAEMON_SUBSCRIBE = "daemon.subscribe"
DAEMON_UNSUBSCRIBE = "daemon.unsubscribe"
FLEET_SNAPSHOT = "fleet.snapshot"  # every live agent and the provider queues (ikictl top)
# schedules: prompts that fire on their own (docs/protocol.md, "Schedules")
SCHEDULE_ADD = "schedule.add"
SCHEDULE_LIST = "schedule.list"
SCHEDULE_SHOW = "schedule.show"
SCHEDULE_REMOVE = "schedule.remove"
SCHEDULE_PAUSE = "schedule.pause"
SCHEDULE_RESUME = "schedule.resume"
SCHEDULE_RUN = "schedule.run"
# git worktrees of agents made with {worktree} (docs/protocol.md, "Worktrees")
WORKTREE_LIST = "worktree.list"
WORKTREE_DIFF = "worktree.diff"
WORKTREE_MERGE = "worktree.merge"
WORKTREE_PRUNE = "worktree.prune"
# the daemons sharing this database (docs/cluster.md)
DAEMONS_LIST = "daemons.list"
AGENT_MOVE = "agent.move"  # an idle agent handed to another daemon, its event seq going on
# JSON Schemas saved by name for agent.prompt {schema: NAME} (docs/protocol.md)
SCHEMA_SAVE = "schema.save"
SCHEMA_LIST = "schema.list"
SCHEMA_SHOW = "schema.show"
SCHEMA_DELETE = "schema.delete"

# server -> client notification carrying one agent event
EVENT = "agent.event"
# server -> client notification: a subscription ended (agent killed, lagged)
SUBSCRIPTION_END = "agent.subscription_end"
# server -> client notification carrying one daemon event (daemon.subscribe):
# an MCP server's state changed, or "lagged" (the subscription ended)
DAEMON_EVENT = "daemon.event"

# ------------------------------------------------------------------ errors

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
AGENT_NOT_FOUND = -32001  # no agent has that id, prefix or name
AMBIGUOUS_AGENT = -32002  # a prefix or name matches several; data.candidates lists them
REFUSED = -32003  # the agent is busy, dead, the model text is bad...
LINE_TOO_LONG = -32004
TURN_FAILED = -32005  # prompt with wait: the turn ended in error (data has the error)
MCP_FAILED = -32006  # an MCP server could not start or answer (data.server names it)
SCHEDULE_NOT_FOUND = -32007  # no schedule has that id or name
# worktree.merge: git stopped on a conflict; the checkout was left as it was
# (data.conflicts lists the paths, the message is git's own)
MERGE_CONFLICT = -32008
# the agent is alive but no daemon runs it at the moment: its daemon was lost
# (another adopts it within the lease), or stopped (data.daemon names it)
AGENT_UNAVAILABLE = -32009


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


# ------------------------------------------------------------------ where the socket is


def runtime_dir(env: Mapping[str, str] | None = None) -> str:
    """$XDG_RUNTIME_DIR/ikigai, or /tmp/ikigai-$UID without one."""
    env = os.environ if env is None else env
    base = env.get("XDG_RUNTIME_DIR")
    if base:
        return os.path.join(base, "ikigai")
    return f"/tmp/ikigai-{os.getuid()}"


def socket_path(env: Mapping[str, str] | None = None) -> str:
    """IKIGAI_SOCKET, else IKIGAI_HOME/run/ikigai.sock, else the runtime folder's ikigai.sock."""
    env = os.environ if env is None else env
    if env.get("IKIGAI_SOCKET"):
        return env["IKIGAI_SOCKET"]
    if env.get("IKIGAI_HOME"):
        return os.path.join(env["IKIGAI_HOME"], "run", "ikigai.sock")
    return os.path.join(runtime_dir(env), "ikigai.sock")
