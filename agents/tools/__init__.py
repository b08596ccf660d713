"""Tools: JSON-Schema definitions with async handlers, and the registry that
runs the model's tool calls.

    env = ToolEnv(rule=EnvRule(passed=("AWS_PROFILE",)), secrets=lambda: keys)
    guard = Guard([Protected(credentials_file)])
    registry = ToolRegistry([*builtin_tools(), *agent_tools()], env=env, guard=guard)
    specs, warnings = await discover_external_tools(
        folders, reserved=registry.names(), env=env
    )
    for spec in specs:
        registry.register(spec)
    request = Request(..., tools=registry.definitions())
    results = await registry.run_all(response_message.tool_calls, ctx)

``run`` and ``run_all`` never raise to the turn loop (cancellation excepted):
every failure is a ToolResultBlock with is_error set and a message for the
model.

Tool processes get an environment built by ``ToolEnv`` from an allowlist (no
API key, no IKIGAI_* variable of the daemon's); the file tools refuse the
files of ``Guard`` (credentials.json). Bash and external tools read what the
daemon's user can read unless the ToolContext asks for a sandbox
(``sandbox="workdir"|"strict"``, bubblewrap: see _sandbox), which also hides
the Guard's files and their folder.
"""

from ._agents import agent_tools
from ._api import AgentOpError, AgentOps, Handler, ToolContext, ToolOutput, ToolSpec
from ._builtin import builtin_tools
from ._env import EnvRule, ToolEnv, is_env_name, provider_key_names
from ._external import discover_external_tools, external_tool
from ._guard import Guard, Protected
from ._registry import ToolRegistry
from ._sandbox import install_command, sandbox_available, sandbox_problem, wrap
from ._validate import validate

__all__ = [
    "AgentOpError",
    "AgentOps",
    "EnvRule",
    "Guard",
    "Handler",
    "Protected",
    "ToolContext",
    "ToolEnv",
    "ToolOutput",
    "ToolRegistry",
    "ToolSpec",
    "agent_tools",
    "builtin_tools",
    "discover_external_tools",
    "external_tool",
    "install_command",
    "is_env_name",
    "provider_key_names",
    "sandbox_available",
    "sandbox_problem",
    "validate",
    "wrap",
]
