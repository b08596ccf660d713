"""Tools: JSON-Schema definitions with async handlers, and the registry that
runs the model's tool calls.

    registry = ToolRegistry([*builtin_tools(), *agent_tools()])
    specs, warnings = await discover_external_tools(folders, reserved=registry.names())
    for spec in specs:
        registry.register(spec)
    request = Request(..., tools=registry.definitions())
    results = await registry.run_all(response_message.tool_calls, ctx)

``run`` and ``run_all`` never raise to the turn loop (cancellation excepted):
every failure is a ToolResultBlock with is_error set and a message for the
model.
"""

from ._agents import agent_tools
from ._api import AgentOpError, AgentOps, Handler, ToolContext, ToolOutput, ToolSpec
from ._builtin import builtin_tools
from ._external import discover_external_tools, external_tool
from ._registry import ToolRegistry
from ._validate import validate

__all__ = [
    "AgentOpError",
    "AgentOps",
    "Handler",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "ToolSpec",
    "agent_tools",
    "builtin_tools",
    "discover_external_tools",
    "external_tool",
    "validate",
]
