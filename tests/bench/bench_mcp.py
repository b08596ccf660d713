"""MCP tool calls: what ikigai's tool path adds to a call, beside the same
call made directly with the official SDK, in the same run.

    .venv/bin/python tests/bench/bench_mcp.py [--calls 300] [--json PATH]

  ours        a tool call as an agent's turn runs it: the ToolRegistry (argument
              validation, timeout, output cap) -> the hub's ToolSpec -> the one
              shared session of the server -> result mapping to a ToolResultBlock
  comparison  the official SDK's Client.call_tool on a session of its own to a
              second process of the same server (no registry, no mapping)
Both sides call the same tool of the same server program over stdio, the
same number of times, interleaved call by call (so machine noise falls on
both); the figures are medians. Servers: our fake (tests/fakes/mcp_server.py)
and mcp-server-time (PyPI, written by others).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agents.tools import ToolContext, ToolRegistry  # noqa: E402
from agents.tools.mcp import McpHub, McpServerSpec  # noqa: E402
from providers.types import ToolCallBlock  # noqa: E402

SERVERS = {
    "fake": ((sys.executable, "-m", "tests.fakes.mcp_server"), "echo", {"text": "hello"}),
    "time": ((sys.executable, "-m", "mcp_server_time"), "get_current_time", {"timezone": "UTC"}),
}


async def measure(name: str, calls: int) -> dict:
    from mcp import Client, StdioServerParameters

    argv, tool, args = SERVERS[name]
    spec = McpServerSpec(name, command=argv[0], args=tuple(argv[1:]), cwd=str(ROOT))
    ours: list[float] = []
    direct: list[float] = []
    async with trio.open_nursery() as nursery:
        hub = McpHub({name: spec})
        await nursery.start(hub.run)
        registry = ToolRegistry().with_extra(await hub.tool_specs([name]))
        ctx = ToolContext(agent_uuid="bench", cwd=ROOT)
        exposed = f"{name}__{tool}"
        params = StdioServerParameters(command=argv[0], args=list(argv[1:]), cwd=str(ROOT))
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            for i in range(calls + 10):
                call = ToolCallBlock(id=f"c{i}", name=exposed, arguments=dict(args))
                t0 = time.perf_counter()
                result = await registry.run(call, ctx)
                t1 = time.perf_counter()
                answer = await client.call_tool(tool, dict(args))
                t2 = time.perf_counter()
                if result.is_error or answer.is_error:
                    raise RuntimeError(f"{name}: a call failed: {result.content[:200]}")
                if i >= 10:  # the first calls warm both sides up
                    ours.append(t1 - t0)
                    direct.append(t2 - t1)
        nursery.cancel_scope.cancel()
    o, d = statistics.median(ours) * 1e6, statistics.median(direct) * 1e6
    return {
        "name": f"tool call, {name} server (stdio)",
        "unit": "µs per call (comparison: the SDK's call_tool straight to the server)",
        "ours": o,
        "comparison": d,
        "ratio": o / d,
        "added_us": o - d,
        "calls": calls,
    }


async def run(calls: int) -> list[dict]:
    return [await measure(name, calls) for name in SERVERS]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    import logging

    import structlog

    # the hub's info lines (server ready...) would bury the table
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    rows = trio.run(run, args.calls)
    print(f"{'benchmark':<40} {'unit':<70} {'ours':>10} {'comparison':>11} {'ratio':>8}")
    for r in rows:
        print(f"{r['name']:<40} {r['unit']:<70} {r['ours']:>10,.0f} {r['comparison']:>11,.0f} {r['ratio']:>7.2f}x")
        print(f"{'':<40} added per call: {r['added_us']:,.0f} µs")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
