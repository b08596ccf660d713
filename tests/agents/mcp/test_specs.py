"""The hub's tools as the turn loop sees them: ToolSpecs SERVER__TOOL run
through the real ToolRegistry, progress reported with the call id, the
resource tool, a server that cannot start left out; and the daemon's hub
imports nothing of the SDK until a server is used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import trio

from agents.tools import ToolContext, ToolRegistry
from agents.tools.mcp import READ_RESOURCE
from providers.types import ToolCallBlock

from .conftest import ROOT, fake_spec, python_spec


async def test_tool_specs_run_through_the_registry(start_hub, tmp_path: Path):
    box = await start_hub(
        {"fake": fake_spec(), "broken": python_spec("broken", "import sys; sys.exit(1)")}
    )
    hub = box.hub
    with trio.fail_after(20):
        specs = await hub.tool_specs(["fake", "broken", "unknown"])  # never raises for those
    names = {s.name for s in specs}
    assert {"fake__echo", "fake__progress", READ_RESOURCE} <= names
    assert not any(n.startswith("broken__") for n in names)
    assert hub.state("broken").state in ("failed", "starting")

    registry = ToolRegistry(specs)
    reports = []
    ctx = ToolContext(
        agent_uuid="a1",
        cwd=tmp_path,
        progress=lambda call_id, p, total, msg: reports.append((call_id, p, total, msg)),
    )
    with trio.fail_after(20):
        result = await registry.run(
            ToolCallBlock(id="c1", name="fake__echo", arguments={"text": "via registry"}), ctx
        )
        assert (result.content, result.is_error) == ("via registry", False)
        result = await registry.run(
            ToolCallBlock(id="c2", name="fake__progress", arguments={"steps": 3, "interval": 0.05}),
            ctx,
        )
        assert result.content == "done 3"
        assert sorted(reports) == [("c2", float(i), 3.0, f"step {i}") for i in (1, 2, 3)]
        # the schema is the server's: the registry checks the arguments
        result = await registry.run(
            ToolCallBlock(id="c3", name="fake__add", arguments={"a": "two"}), ctx
        )
        assert result.is_error and "invalid arguments" in result.content
        result = await registry.run(
            ToolCallBlock(
                id="c4", name=READ_RESOURCE, arguments={"server": "fake", "uri": "fake://readme"}
            ),
            ctx,
        )
        assert "the readme of the fake server" in result.content
    read = next(s for s in specs if s.name == READ_RESOURCE)
    assert read.parameters["properties"]["server"]["enum"] == ["fake"]
    assert "fake://readme" in read.description


async def test_tool_specs_without_resources_have_no_resource_tool(start_hub):
    hub = (await start_hub({"time": _time_spec()})).hub
    with trio.fail_after(20):
        specs = await hub.tool_specs(["time"])
    assert {s.name for s in specs} == {"time__get_current_time", "time__convert_time"}


def _time_spec():
    from agents.tools.mcp import McpServerSpec

    return McpServerSpec("time", command=sys.executable, args=("-m", "mcp_server_time"))


def test_the_hub_imports_no_sdk_until_a_server_is_used():
    code = """
import sys, trio
from agents.tools.mcp import McpHub, McpServerSpec
async def main():
    hub = McpHub({"x": McpServerSpec("x", command="true")})
    async with trio.open_nursery() as n:
        await n.start(hub.run)
        hub.states(); hub.names(); hub.defaults()
        n.cancel_scope.cancel()
    empty = McpHub({})
    async with trio.open_nursery() as n:
        await n.start(empty.run)
        assert await empty.tool_specs([]) == []
        n.cancel_scope.cancel()
trio.run(main)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types", "httpx2", "pydantic"))
print(loaded)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
