"""The hub against MCP servers written by others: mcp-server-time (Python,
stdio) and server-everything (TypeScript, stdio and Streamable HTTP)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from agents.tools.mcp import McpServerSpec
from tests._ready import await_ready, tcp_listens

from .conftest import ROOT, everything_js


async def test_mcp_server_time_over_stdio(start_hub):
    spec = McpServerSpec("time", command=sys.executable, args=("-m", "mcp_server_time"))
    hub = (await start_hub({"time": spec})).hub
    with trio.fail_after(20):
        tools = {t.name: t for t in await hub.tools("time")}
        out = await hub.call("time", "get_current_time", {"timezone": "UTC"})
        bad = await hub.call("time", "get_current_time", {"timezone": "Not/AZone"})
        unknown = await hub.call("time", "no_such_tool", {})
    assert set(tools) == {"get_current_time", "convert_time"}
    assert tools["get_current_time"].exposed == "time__get_current_time"
    assert "timezone" in tools["get_current_time"].input_schema["properties"]
    assert not out.is_error and json.loads(out.content)["timezone"] == "UTC"
    assert bad.is_error and "Not/AZone" in bad.content
    assert unknown.is_error and "no_such_tool" in unknown.content  # an MCPError, as a result


async def _check_everything(hub, name: str) -> None:
    tools = {t.name for t in await hub.tools(name)}
    assert {"echo", "get-tiny-image", "trigger-long-running-operation"} <= tools
    out = await hub.call(name, "echo", {"message": "hi"})
    assert (out.content, out.is_error) == ("Echo: hi", False)
    out = await hub.call(name, "get-tiny-image", {})
    assert not out.is_error and len(out.images) == 1
    assert out.images[0].media_type == "image/png" and len(out.images[0].data or "") > 1000
    seen = []
    out = await hub.call(
        name,
        "trigger-long-running-operation",
        {"duration": 0.6, "steps": 3},
        progress=lambda p, total, msg: seen.append(p),
    )
    assert not out.is_error and "completed" in out.content.lower()
    assert sorted(seen) == [1.0, 2.0, 3.0]
    out = await hub.call(name, "get-sum", {"a": "not a number"})
    assert out.is_error
    out = await hub.read_resource(name, "demo://resource/static/document/architecture.md")
    assert not out.is_error and out.content.startswith("[resource demo://")
    assert any(s.name == "mcp_read_resource" for s in await hub.tool_specs([name]))


async def test_server_everything_over_stdio(start_hub):
    spec = McpServerSpec("every", command="node", args=(everything_js(), "stdio"))
    hub = (await start_hub({"every": spec})).hub
    with trio.fail_after(30):
        await _check_everything(hub, "every")
    assert hub.state("every").restarts == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EverythingHttp:
    """server-everything over Streamable HTTP on a free port."""

    def __init__(self, out: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: trio.Process | None = None
        self.out = out  # what it prints, every start: shown if a start fails

    async def start(self) -> None:
        with self.out.open("ab") as out:
            self.proc = await trio.lowlevel.open_process(
                ["node", everything_js(), "streamableHttp"],
                env={**os.environ, "PORT": str(self.port)},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        await await_ready(self.proc, tcp_listens(self.port), "server-everything (HTTP)", output=[self.out])

    async def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            with trio.CancelScope(shield=True):
                await self.proc.wait()
            self.proc = None


@pytest.fixture
async def everything_http(tmp_path: Path):
    server = EverythingHttp(tmp_path / "everything.out")
    try:
        await server.start()
        yield server
    finally:
        await server.stop()


async def test_server_everything_over_streamable_http_gone_then_back(start_hub, everything_http):
    """Streamable HTTP: everything works; the server dies: a call is an error
    (quickly), the hub reconnects with backoff once the server is back."""
    spec = McpServerSpec("web", url=everything_http.url, connect_timeout=5)
    box = await start_hub({"web": spec})
    hub = box.hub
    with trio.fail_after(40):
        await _check_everything(hub, "web")
        state = hub.state("web")
        assert state.transport == "http" and state.pid is None
        assert state.target == everything_http.url
        await everything_http.stop()
        out = await hub.call("web", "echo", {"message": "b"})
        assert out.is_error and "web" in out.content
        await box.wait_for("web", lambda s: s.state in ("failed", "restarting"))
        await everything_http.start()
        await box.wait_for("web", lambda s: s.state == "ready")
        assert (await hub.call("web", "echo", {"message": "c"})).content == "Echo: c"
    assert hub.state("web").restarts >= 1


async def test_http_headers_reach_the_server(start_hub, tmp_path: Path):
    """Our fake over Streamable HTTP: the configured headers are on every request."""
    port = _free_port()
    out = tmp_path / "mcp_server.out"
    with out.open("wb") as f:
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "tests.fakes.mcp_server", "http", str(port)],
            cwd=ROOT,
            stdout=f,
            stderr=subprocess.STDOUT,
        )
    try:
        await await_ready(proc, tcp_listens(port), "the MCP fake (HTTP)", output=[out])
        with trio.fail_after(20):
            spec = McpServerSpec(
                "web",
                url=f"http://127.0.0.1:{port}/mcp",
                headers={"Authorization": "Bearer abc", "X-Team": "ikigai"},
            )
            hub = (await start_hub({"web": spec})).hub
            out = await hub.call("web", "headers", {})
            seen = json.loads(out.content)
            assert seen["authorization"] == "Bearer abc" and seen["x-team"] == "ikigai"
            out = await hub.call("web", "echo", {"text": "over http"})
            assert out.content == "over http"
    finally:
        proc.kill()
        with trio.CancelScope(shield=True):
            await proc.wait()
