"""What the ``mcp.*`` methods answer (and the ``mcp_server`` daemon event).
Part of protocol.results, which re-exports them; kept apart so neither
module grows past the house limit."""

# no ``from __future__ import annotations``: TypedDict must see NotRequired
from typing import Any, Literal, TypedDict

__all__ = [
    "McpPrompt",
    "McpPromptArgument",
    "McpPrompts",
    "McpServerState",
    "McpServers",
    "McpTool",
    "McpTools",
]


class McpServerState(TypedDict):
    """One MCP server (``mcp.list``, ``mcp.restart``; the ``mcp_server`` daemon event)."""

    name: str
    transport: Literal["stdio", "http"]
    target: str  # the command line or URL (never its env or headers)
    state: Literal["stopped", "starting", "ready", "restarting", "failed"]
    pid: int | None
    tools: int  # tools it lists (0 until ready)
    last_error: str | None
    restarts: int
    since: float  # Unix time of the last state change


class McpServers(TypedDict):
    servers: list[McpServerState]


class McpTool(TypedDict):
    server: str
    name: str  # the server's own name for it
    exposed: str  # SERVER__TOOL: the name models see
    description: str
    input_schema: dict[str, Any]
    rejected: str | None  # why it is not offered to models (None: it is)


class McpTools(TypedDict):
    server: str
    tools: list[McpTool]


class McpPromptArgument(TypedDict):
    name: str
    description: str | None
    required: bool


class McpPrompt(TypedDict):
    name: str
    description: str | None
    arguments: list[McpPromptArgument]


class McpPrompts(TypedDict):
    server: str
    prompts: list[McpPrompt]
