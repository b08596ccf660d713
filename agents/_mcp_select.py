"""Which MCP servers an agent may use: its own list, or the configured defaults."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import AgentError

if TYPE_CHECKING:
    from .tools.mcp import McpHub


def checked(hub: McpHub | None, names: Sequence[str]) -> list[str]:
    """``names`` as given, each a configured server (AgentError naming the known ones)."""
    known = hub.names() if hub is not None else []
    out: list[str] = []
    for name in names:
        if name not in known:
            have = ", ".join(known) if known else "none are configured (mcp_servers in config.json)"
            raise AgentError(f"unknown MCP server {name!r} (known: {have})")
        if name not in out:
            out.append(name)
    return out


def parse(stored: str | None) -> list[str] | None:
    """The agents.mcp column: a JSON list of names, or NULL for the defaults."""
    if stored is None:
        return None
    try:
        value = json.loads(stored)
    except ValueError:
        return None
    if not isinstance(value, list):
        return None
    return [v for v in value if isinstance(v, str)]


def dump(names: list[str] | None) -> str | None:
    return None if names is None else json.dumps(names)


def effective(hub: McpHub | None, own: list[str] | None) -> list[str]:
    """The servers an agent uses now: its own list (names no longer configured
    left out) or, when it has none, the servers marked default."""
    if hub is None:
        return []
    if own is None:
        return hub.defaults()
    known = set(hub.names())
    return [n for n in own if n in known]
