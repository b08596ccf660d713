"""Helpers for the MCP hub's tests: real server processes (our fake, and
servers written by others), a hub started in the test's nursery, and a log
of every state it reported."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from agents.tools.mcp import McpHub, McpServerSpec, ServerState
from tests._ready import READY_TIMEOUT

ROOT = Path(__file__).resolve().parents[3]
EVERYTHING_FALLBACK = "/tmp/mcpnpm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def fake_spec(name: str = "fake", **kw: Any) -> McpServerSpec:
    """Our fake server (tests/fakes/mcp_server.py) over stdio."""
    return McpServerSpec(
        name, command=sys.executable, args=("-m", "tests.fakes.mcp_server"), cwd=str(ROOT), **kw
    )


def python_spec(name: str, code: str, **kw: Any) -> McpServerSpec:
    """A 'server' that is a few lines of Python (one that fails at start...)."""
    return McpServerSpec(name, command=sys.executable, args=("-c", code), **kw)


def everything_js() -> str:
    """The path of server-everything's dist/index.js: $IKIGAI_MCP_EVERYTHING,
    else where the research installed it. Missing: the test fails (no skip)."""
    path = os.environ.get("IKIGAI_MCP_EVERYTHING") or EVERYTHING_FALLBACK
    if not Path(path).is_file():
        pytest.fail(
            "server-everything is not installed: run `npm install --prefix /tmp/mcpnpm "
            "@modelcontextprotocol/server-everything` (or install it elsewhere and set "
            "IKIGAI_MCP_EVERYTHING to the path of its dist/index.js)"
        )
    return path


def alive(pid: int) -> bool:
    """Is ``pid`` a live (not zombie) process?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@dataclass
class Hub:
    hub: McpHub
    seen: list[ServerState] = field(default_factory=list)

    def states_of(self, name: str) -> list[str]:
        return [s.state for s in self.seen if s.name == name]

    async def wait_for(
        self, name: str, check: Callable[[ServerState], bool], within: float | None = None
    ) -> ServerState:
        """Wait until the server's state passes ``check``; by default within the
        suite's start-up bound (tests/_ready.py): what is waited for is mostly a
        server process (re)started and ready."""
        within = READY_TIMEOUT if within is None else within
        with trio.fail_after(within):
            await until(lambda: check(self.hub.state(name)))
        return self.hub.state(name)


async def until(check: Callable[[], bool]) -> None:
    """Poll ``check`` (what it looks at is another process, or the hub's
    state: no event to wait on from here); bound it with trio.fail_after."""
    while not check():  # noqa: ASYNC110 - polling state outside this task
        await trio.sleep(0.02)


@pytest.fixture
async def start_hub(nursery: trio.Nursery) -> Callable[..., Any]:
    """``hub = await start_hub({name: spec...})``: a hub running in the test's
    nursery (stopped with it), recording every state it reports."""

    async def start(specs: dict[str, McpServerSpec]) -> Hub:
        seen: list[ServerState] = []
        hub = McpHub(specs, on_state=seen.append)
        await nursery.start(hub.run)
        return Hub(hub, seen)

    return start
