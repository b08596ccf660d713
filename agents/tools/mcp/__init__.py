"""MCP servers as tools: one supervised connection per server, shared by
every agent allowed to use it.

    hub = McpHub({"time": McpServerSpec("time", command="uvx", args=("mcp-server-time",))},
                 on_state=lambda s: ...)
    await nursery.start(hub.run)
    specs = await hub.tool_specs(["time"])         # ToolSpecs named time__get_current_time
    out = await hub.call("time", "get_current_time", {"timezone": "UTC"})

Every server failure reaches the caller as an error ToolOutput (or McpError
for an unknown server); the server restarts with backoff on its own. The MCP
SDK is imported only when a server is first used.
"""

from ._hub import McpHub
from ._spec import McpError, McpServerSpec, McpToolInfo, ServerState
from ._tools import READ_RESOURCE, exposed_name

__all__ = [
    "READ_RESOURCE",
    "McpError",
    "McpHub",
    "McpServerSpec",
    "McpToolInfo",
    "ServerState",
    "exposed_name",
]
