"""The data of the MCP hub: a server's configuration, its state as people see
it, a tool it offers, and the one error the hub raises."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from providers.secrets import scrub

Transport = Literal["stdio", "http"]
State = Literal["stopped", "starting", "ready", "restarting", "failed"]


class McpError(Exception):
    """An unknown server, or a server that is not available; the message is
    written for people and models (no secret in it)."""


@dataclass(frozen=True)
class McpServerSpec:
    """One configured server: exactly one of ``command`` (stdio) or ``url``
    (Streamable HTTP). ``env`` and ``headers`` hold resolved values: they are
    given to the server and never shown."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    default: bool = False
    start: Literal["lazy", "eager"] = "lazy"
    call_timeout: float = 120.0  # seconds a tool call may stay silent (progress resets it)
    connect_timeout: float = 30.0
    mode: Literal["legacy", "auto"] = "legacy"

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r}: give exactly one of command or url")
        if self.call_timeout <= 0 or self.connect_timeout <= 0:
            raise ValueError(f"MCP server {self.name!r}: timeouts must be positive")

    @property
    def transport(self) -> Transport:
        return "stdio" if self.command is not None else "http"

    @property
    def target(self) -> str:
        """The command line or the URL, for people: no user info, no query
        (either may carry a token), registered secrets scrubbed."""
        if self.command is not None:
            return scrub(shlex.join([self.command, *self.args]))
        parts = urlsplit(self.url or "")
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        try:
            port = parts.port
        except ValueError:  # not a number: shown as nothing rather than raising
            port = None
        netloc = host + (f":{port}" if port else "")
        query = "..." if parts.query else ""
        return scrub(urlunsplit((parts.scheme, netloc, parts.path, query, "")))


@dataclass(frozen=True)
class ServerState:
    """What ``mcp.list`` shows; also the payload of the daemon's event."""

    name: str
    transport: Transport
    target: str  # the command line or URL, secrets never included
    state: State
    pid: int | None
    tools: int  # tools listed (0 until ready)
    last_error: str | None
    restarts: int
    since: float  # time.time() of the last state change


@dataclass(frozen=True)
class McpToolInfo:
    server: str
    name: str  # the server's own tool name
    exposed: str  # SERVER__TOOL as the model sees it (sanitized, <= 64 chars)
    description: str
    input_schema: dict[str, Any]
    rejected: str | None = None  # why it is not offered (schema too big or deep, bad name...)
