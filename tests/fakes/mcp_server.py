"""A fake MCP server of ours, built on the SDK's own MCPServer, for the MCP
hub's tests: ``python -m tests.fakes.mcp_server`` (stdio) or run by path.

Tools: echo, add, slow (writes a marker file when cancelled), progress,
image, fail (isError), raise (a JSON-RPC error), crash (exits mid-call), hang
(never answers, ignores cancel), grow (adds a tool: list_changed), env (its
environment), headers (over HTTP: the request's), big (a long text), garbage (junk lines on stdout before the
answer), answer_badly (a malformed answer line of the test's choosing),
flood (one endless line), and two tools with hostile schemas (deep, huge).
A text and a binary resource; a prompt.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

# 1x1 transparent PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("ikigai-fake")
# The SDK's stdio server moves fd 1 to stderr and speaks on a private copy of
# it: this copy reaches the client's pipe, to write what a broken server would.
WIRE = os.dup(1)


def _log(text: str) -> None:
    print(f"fake: {text}", file=sys.stderr, flush=True)


@server.tool()
def echo(text: str) -> str:
    """Answer the text."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow(seconds: float, marker: str = "") -> str:
    """Sleep; write ``marker`` (a file path) if cancelled by the client."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if marker:
            Path(marker).write_text("cancelled")  # noqa: ASYNC240 - tiny, and the test waits on it
        _log(f"slow({seconds}) cancelled")
        raise
    return f"slept {seconds}"


@server.tool()
async def progress(steps: int, interval: float, ctx: Context) -> str:
    """Report ``steps`` progress notifications, ``interval`` seconds apart."""
    for i in range(1, steps + 1):
        await anyio.sleep(interval)
        await ctx.report_progress(i, steps, f"step {i}")
    return f"done {steps}"


@server.tool()
def image() -> Image:
    """A tiny PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def fail() -> str:
    """Fail as a tool (isError)."""
    raise ToolError("it went wrong on purpose")


@server.tool(name="raise")
def raise_() -> str:
    """Fail as a protocol error (JSON-RPC error)."""
    raise MCPError(-32602, "bad params on purpose")


@server.tool()
def crash() -> str:
    """Exit the process in the middle of the call."""
    _log("crashing")
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer, whatever the client says."""
    with anyio.CancelScope(shield=True):
        await anyio.sleep(3600)
    return "never"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool named ``name`` and say so (tools/list_changed)."""

    def grown() -> str:
        return f"I am {name}"

    server.add_tool(grown, name=name, description="added at run time")
    try:  # a 2025 (legacy) connection
        await ctx.request_context.session.send_tool_list_changed()
    except Exception as exc:
        _log(f"legacy list_changed: {exc!r}")
    try:  # a 2026-07-28 one: subscriptions/listen
        await ctx.notify_tools_changed()
    except Exception as exc:
        _log(f"notify_tools_changed: {exc!r}")
    return f"added {name}"


@server.tool()
def env() -> str:
    """The server's environment as JSON."""
    return json.dumps(dict(os.environ))


@server.tool()
def headers(ctx: Context) -> str:
    """Over HTTP: the request's headers as JSON."""
    request = ctx.request_context.request
    return json.dumps(dict(request.headers) if request is not None else {})


@server.tool()
def big(size: int) -> str:
    """``size`` characters of text."""
    return "x" * size


@server.tool()
def garbage() -> str:
    """Junk lines on stdout (not JSON, invalid UTF-8), then a normal answer."""
    os.write(WIRE, b"this is not json\n\xff\xfe\xfd invalid utf-8\n{\"jsonrpc\": \"2.0\"}\n")
    return "still here"


@server.tool()
async def answer_badly(line_hex: str, ctx: Context, then: float = 3600.0) -> str:
    """Answer this call with the bytes ``line_hex`` (hex; ``@ID@`` stands for
    this request's id) as one line, then sleep ``then`` seconds before the real
    answer: a client that skips the bad line waits for that one."""
    rid = ctx.request_id
    wire_id = rid if rid.lstrip("-").isdigit() else json.dumps(rid)
    line = bytes.fromhex(line_hex).replace(b"@ID@", wire_id.encode())
    os.write(WIRE, line + b"\n")
    await anyio.sleep(then)
    return "the real answer, late"


@server.tool()
def flood(megabytes: int) -> str:
    """One line of ``megabytes`` MB with no end."""
    chunk = b"y" * (1024 * 1024)
    for _ in range(megabytes):
        os.write(WIRE, chunk)
    return "flooded"


@server.tool()
def deep() -> str:
    """A tool whose schema is nested 40 deep."""
    return "deep"


@server.tool()
def huge() -> str:
    """A tool whose schema is 100 KB."""
    return "huge"


def _nested(depth: int) -> dict[str, object]:
    schema: dict[str, object] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


server._tool_manager.get_tool("deep").parameters = _nested(40)  # type: ignore[union-attr]
server._tool_manager.get_tool("huge").parameters = {  # type: ignore[union-attr]
    "type": "object",
    "properties": {f"p{i}": {"type": "string", "description": "d" * 90} for i in range(1000)},
}


@server.resource("fake://readme", mime_type="text/plain")
def readme() -> str:
    """A text resource."""
    return "the readme of the fake server"


@server.resource("fake://blob", mime_type="application/octet-stream")
def blob() -> bytes:
    """A binary resource."""
    return b"\x00\x01\x02\x03"


@server.prompt()
def greet(who: str) -> str:
    """Greet someone."""
    return f"Say hello to {who}"


if __name__ == "__main__":
    _log(f"started, pid {os.getpid()}")
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
