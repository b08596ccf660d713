"""``agent.prompt``'s ``tool_choice``, checked before anything is stored: a
named tool must be one the agent has (the built-in tools config.json's
``tools`` leaves it, the agent tools, the tools of its MCP servers), and
``required`` needs it to have a tool at all. Each refusal is -32602 naming
the field and listing the agent's tools. What the turn does with the choice:
agents/_fitting.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p
from agents import _mcp_select as mcp_select
from protocol import params as P
from providers.types import ToolChoice

if TYPE_CHECKING:
    from agents import Actor, Supervisor

__all__ = ["checked_choice"]

LISTED = 600  # characters of tool names a refusal lists at most


async def checked_choice(
    sup: Supervisor, actor: Actor, asked: P.ToolChoiceAsk | None
) -> ToolChoice | None:
    """The turn's tool choice for what ``agent.prompt`` asked (None: auto)."""
    if asked is None or asked == "auto":
        return None
    if asked == "none":
        return ToolChoice(mode="none")
    tools = sup.deps.tools
    if isinstance(asked, str):  # "required"
        if len(tools) or await _mcp_names(sup, actor):
            return ToolChoice(mode="required")
        raise p.RpcError(
            p.INVALID_PARAMS,
            f"tool_choice: required, but agent {actor.name} has no tools "
            "(config.json tools.enabled / tools.disabled, and no MCP server's)",
        )
    name = asked.name
    # the MCP servers are asked only for a name that is not built in: a lazy
    # one starts here, as it would on the turn's first model call
    if name in tools:
        return ToolChoice(mode="tool", name=name)
    mcp = await _mcp_names(sup, actor)
    if name in mcp:
        return ToolChoice(mode="tool", name=name)
    raise p.RpcError(
        p.INVALID_PARAMS,
        f"tool_choice.name: agent {actor.name} has no tool {name[:80]!r} "
        f"(its tools: {_listed([*tools.names(), *mcp])})",
    )


async def _mcp_names(sup: Supervisor, actor: Actor) -> list[str]:
    """The names of the tools the agent's MCP servers offer now."""
    hub = sup.deps.mcp
    servers = mcp_select.effective(hub, actor.mcp)
    if hub is None or not servers:
        return []
    return [spec.name for spec in await hub.tool_specs(servers)]


def _listed(names: list[str]) -> str:
    """The names, sorted, cut after LISTED characters (saying how many more)."""
    if not names:
        return "none"
    names = sorted(set(names))
    out: list[str] = []
    size = 0
    for name in names:
        size += len(name) + 2
        if size > LISTED:
            return f"{', '.join(out)}, … and {len(names) - len(out)} more"
        out.append(name)
    return ", ".join(out)
