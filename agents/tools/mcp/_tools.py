"""What the model sees of a server's tools: names made safe for every
provider, schemas checked (a hostile server's schema is refused, not sent),
and the ToolSpecs whose handlers call the hub."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from .._api import ToolContext, ToolOutput, ToolSpec
from .._text import clip
from ._spec import McpToolInfo


class Caller(Protocol):
    """What the ToolSpecs' handlers need of the hub (no import of it: the hub
    imports this module)."""

    async def call(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> ToolOutput: ...

    async def read_resource(self, server: str, uri: str) -> ToolOutput: ...

SEP = "__"  # SERVER__TOOL; server names have no "_", so the first "__" splits
_NAME_MAX = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_SCHEMA = 64 * 1024  # bytes of a tool's input schema as JSON
MAX_DEPTH = 32  # nesting of a tool's input schema
MAX_DESCRIPTION = 8 * 1024  # characters of a tool's description sent to the model
MAX_TOOL_NAME = 256  # characters of a server's own tool name
# A tool call may run long when it keeps reporting progress: the hub times out
# silence (call_timeout); this is only the registry's outer bound.
TOTAL_TIMEOUT = 6 * 3600.0
READ_RESOURCE = "mcp_read_resource"


def exposed_name(server: str, tool: str) -> str:
    """SERVER__TOOL with every character providers refuse replaced by "_";
    a name over 64 characters is cut and ends with a hash of the whole, so
    two long names stay apart."""
    name = _UNSAFE.sub("_", f"{server}{SEP}{tool}")
    if len(name) <= _NAME_MAX:
        return name
    return name[: _NAME_MAX - 9] + "_" + _digest(tool)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not offered, or None: it must be an object schema of
    at most 64 KB of JSON nested at most 32 deep."""
    if not isinstance(schema, dict):
        return "its input schema is not a JSON object"
    if schema.get("type", "object") != "object":
        return f"its input schema is of type {clip(str(schema.get('type')), 40)!r}, not object"
    depth = _depth(schema)
    if depth > MAX_DEPTH:
        return f"its input schema is nested more than {MAX_DEPTH} deep"
    try:
        size = len(json.dumps(schema, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError) as exc:
        return f"its input schema is not JSON ({exc.__class__.__name__})"
    if size > MAX_SCHEMA:
        limit = MAX_SCHEMA // 1024
        return f"its input schema is {size // 1024} KB of JSON, over the {limit} KB limit"
    return None


def _depth(value: Any) -> int:
    """Nesting depth of dicts and lists, without recursion (a hostile schema
    may be nested thousands deep); stops counting past the limit."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > MAX_DEPTH:
                return deepest
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return deepest


def tool_infos(server: str, tools: Iterable[Any]) -> list[McpToolInfo]:
    """The SDK's ``Tool`` objects as McpToolInfo, each offered or rejected with
    a reason. Two tools whose safe names collide both get a hash suffix."""
    infos: list[McpToolInfo] = []
    seen: dict[str, int] = {}
    for tool in tools:
        name = str(getattr(tool, "name", ""))
        description = str(getattr(tool, "description", None) or "")
        if len(description) > MAX_DESCRIPTION:
            description = clip(description, MAX_DESCRIPTION)
        schema = getattr(tool, "input_schema", None)
        rejected: str | None
        if not name:
            rejected = "it has no name"
        elif len(name) > MAX_TOOL_NAME:
            rejected = f"its name is longer than {MAX_TOOL_NAME} characters"
        elif name in seen:
            rejected = "another tool of the server has the same name"
        else:
            rejected = schema_problem(schema)
        exposed = exposed_name(server, clip(name, MAX_TOOL_NAME))
        if rejected is None and exposed in {i.exposed for i in infos if i.rejected is None}:
            exposed = exposed_name(server, f"{name[:40]}_{_digest(name)}")
        seen[name] = len(infos)
        infos.append(
            McpToolInfo(
                server=server,
                name=clip(name, MAX_TOOL_NAME),
                exposed=exposed,
                description=description,
                input_schema=schema if rejected is None and isinstance(schema, dict) else {},
                rejected=rejected,
            )
        )
    return infos


def tool_spec(hub: Caller, info: McpToolInfo) -> ToolSpec:
    """A ToolSpec named SERVER__TOOL whose handler calls the server through the
    hub, reporting progress to the context."""
    server, tool = info.server, info.name

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        report = ctx.progress
        call_id = ctx.call_id

        def progress(done: float, total: float | None, message: str | None) -> None:
            if report is not None:
                report(call_id, done, total, message)

        return await hub.call(server, tool, args, progress=progress)

    description = info.description or f"the tool {tool} of the MCP server {server}"
    return ToolSpec(
        name=info.exposed,
        description=f"[MCP server {server}] {description}",
        parameters=info.input_schema,
        handler=handler,
        timeout=TOTAL_TIMEOUT,
        server=server,
    )


def read_resource_spec(hub: Caller, servers: Sequence[str], listing: str) -> ToolSpec:
    """The built-in tool that reads a resource of one of ``servers``."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return await hub.read_resource(str(args["server"]), str(args["uri"]))

    text = "Read a resource (a document, a file...) of an MCP server by its URI."
    if listing:
        text += " Some of the resources:\n" + listing
    return ToolSpec(
        name=READ_RESOURCE,
        description=text,
        parameters={
            "type": "object",
            "properties": {
                "server": {"type": "string", "enum": list(servers)},
                "uri": {"type": "string", "description": "the resource's URI"},
            },
            "required": ["server", "uri"],
            "additionalProperties": False,
        },
        handler=handler,
    )
