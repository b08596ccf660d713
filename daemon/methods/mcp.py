"""The MCP methods (``mcp.list``, ``mcp.tools``, ``mcp.restart``,
``mcp.prompts``) and the ``mcp_server`` daemon event: api.py registers them.
See docs/protocol.md.

What the hub says goes out scrubbed: a server's command line or URL may hold
a value brought in by ``$NAME``, and its last error may quote one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import protocol as p
from protocol import params as P
from protocol import results as R
from providers.redact import redact

if TYPE_CHECKING:
    from agents import Supervisor
    from agents.tools.mcp import McpHub, ServerState
    from daemon.server import Connection, Handler
    from store import AgentRecord

__all__ = ["McpApi", "agent_servers", "server_event", "server_state"]


def server_state(state: ServerState) -> R.McpServerState:
    """A ServerState as the protocol shows it, secrets scrubbed."""
    return {
        "name": state.name,
        "transport": state.transport,
        "target": redact(state.target),
        "state": state.state,
        "pid": state.pid,
        "tools": state.tools,
        "last_error": None if state.last_error is None else redact(state.last_error),
        "restarts": state.restarts,
        "since": state.since,
    }


def server_event(state: ServerState) -> dict[str, Any]:
    """The ``mcp_server`` daemon event of a state change."""
    return {"type": "mcp_server", **server_state(state)}


def agent_servers(sup: Supervisor, record: AgentRecord, live: bool) -> list[str]:
    """The MCP servers an agent uses (AgentInfo.mcp): a live agent's as the
    supervisor has them; a dead one's as stored (NULL: the defaults), less
    those no longer configured."""
    if live:
        return sup.mcp_servers_of(record.uuid)
    hub = sup.deps.mcp
    if hub is None:
        return []
    own: Any = None
    if record.mcp is not None:
        try:
            own = json.loads(record.mcp)
        except ValueError:
            own = None
    if not isinstance(own, list):
        return hub.defaults()
    known = set(hub.names())
    return [n for n in own if isinstance(n, str) and n in known]


class McpApi:
    """The handlers; ``hub`` is asked at each call (the supervisor's)."""

    def __init__(self, hub: Callable[[], McpHub | None]) -> None:
        self._hub = hub

    def handlers(self) -> dict[str, Handler]:
        return {
            p.MCP_LIST: self.list,
            p.MCP_TOOLS: self.tools,
            p.MCP_RESTART: self.restart,
            p.MCP_PROMPTS: self.prompts,
        }

    def _server(self, name: str) -> McpHub:
        """The hub, once ``name`` is known to be one of its servers."""
        hub = self._hub()
        names = hub.names() if hub is not None else []
        if hub is None or name not in names:
            known = (
                f"configured: {', '.join(names)}"
                if names
                else "none is configured: see mcp_servers in config.json"
            )
            raise p.RpcError(
                p.INVALID_PARAMS,
                f"server: no MCP server is named {P.excerpt(name, 64)!r} ({known})",
                {"server": name, "known": names},
            )
        return hub

    async def list(self, conn: Connection, params: P.NoParams) -> R.McpServers:
        hub = self._hub()
        return {"servers": [server_state(s) for s in (hub.states() if hub else [])]}

    async def tools(self, conn: Connection, params: P.McpServer) -> R.McpTools:
        from agents.tools.mcp import McpError

        hub = self._server(params.server)
        try:
            tools = await hub.tools(params.server)  # starts a lazy server
        except McpError as e:
            raise _failed(params.server, e) from None
        return {
            "server": params.server,
            "tools": [
                {
                    "server": t.server,
                    "name": t.name,
                    "exposed": t.exposed,
                    "description": t.description,
                    "input_schema": dict(t.input_schema),
                    "rejected": t.rejected,
                }
                for t in tools
            ],
        }

    async def restart(self, conn: Connection, params: P.McpServer) -> R.McpServerState:
        from agents.tools.mcp import McpError

        hub = self._server(params.server)
        try:
            return server_state(await hub.restart(params.server))
        except McpError as e:
            raise _failed(params.server, e) from None

    async def prompts(self, conn: Connection, params: P.McpServer) -> R.McpPrompts:
        from agents.tools.mcp import McpError

        hub = self._server(params.server)
        try:
            prompts = await hub.prompts(params.server)
        except McpError as e:
            raise _failed(params.server, e) from None
        return {"server": params.server, "prompts": [_prompt(x) for x in prompts]}


def _failed(server: str, e: Exception) -> p.RpcError:
    return p.RpcError(p.MCP_FAILED, str(e), {"server": server})


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _prompt(raw: dict[str, Any]) -> R.McpPrompt:
    """A prompt as the hub lists it, held to the protocol's shape."""
    args = raw.get("arguments") or []
    return {
        "name": str(raw.get("name", "")),
        "description": _text(raw.get("description")),
        "arguments": [
            {
                "name": str(a.get("name", "")),
                "description": _text(a.get("description")),
                "required": bool(a.get("required")),
            }
            for a in args
            if isinstance(a, dict)
        ],
    }
