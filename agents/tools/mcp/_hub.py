"""The hub: every configured MCP server, each a supervised task, and what
agents and the daemon ask of them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog
import trio

from .._api import ToolOutput, ToolSpec
from ._server import ServerRunner
from ._spec import McpError, McpServerSpec, McpToolInfo, ServerState
from ._tools import read_resource_spec, tool_spec

log = structlog.get_logger("ikigai.mcp")

_STOP_GRACE = 10.0  # seconds a restart may spend stopping the old process


class McpHub:
    """One connection per server, shared by every agent allowed to use it.

    Start it with ``nursery.start(hub.run)``; it owns every server task and
    stops the servers when cancelled. Constructing and running it imports
    nothing of the MCP SDK: that happens when a server first starts.
    """

    def __init__(
        self,
        specs: Mapping[str, McpServerSpec],
        *,
        on_state: Callable[[ServerState], None] | None = None,
    ) -> None:
        self._on_state = on_state
        self._runners: dict[str, ServerRunner] = {}
        self._scopes: dict[str, trio.CancelScope] = {}
        self._nursery: trio.Nursery | None = None
        for name, spec in specs.items():
            self._runners[name] = ServerRunner(_named(name, spec), self._notify)

    def _notify(self, state: ServerState) -> None:
        if self._on_state is not None:
            self._on_state(state)

    # ------------------------------------------------------------ lifetime

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the servers' tasks until cancelled; eager servers start now."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                for runner in self._runners.values():
                    self._launch(runner)
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._nursery = None
                for name, runner in self._runners.items():
                    runner.stop(self._scopes.get(name))

    def _launch(self, runner: ServerRunner) -> None:
        assert self._nursery is not None
        scope = trio.CancelScope()
        self._scopes[runner.spec.name] = scope

        async def supervise() -> None:
            with scope:
                await runner.run()

        self._nursery.start_soon(supervise)
        if runner.spec.start == "eager":
            runner.want()

    def configure(self, specs: Mapping[str, McpServerSpec]) -> None:
        """Reload: new servers are added (eager ones started), removed ones
        stopped, changed ones restarted with their new spec."""
        for name in list(self._runners):
            if name not in specs:
                self._runners.pop(name).stop(self._scopes.pop(name, None))
                log.info("mcp.server_removed", server=name)
        for name, spec in specs.items():
            spec = _named(name, spec)
            runner = self._runners.get(name)
            if runner is None:
                runner = self._runners[name] = ServerRunner(spec, self._notify)
                if self._nursery is not None:
                    self._launch(runner)
            elif runner.spec != spec:
                was_wanted = runner.state != "stopped"
                runner.spec = spec
                log.info("mcp.server_changed", server=name)
                if was_wanted:
                    runner.restart()
                elif spec.start == "eager" and self._nursery is not None:
                    runner.want()

    # ------------------------------------------------------------ looking

    def names(self) -> list[str]:
        return sorted(self._runners)

    def defaults(self) -> list[str]:
        """The servers an agent created without a list of its own gets."""
        return sorted(n for n, r in self._runners.items() if r.spec.default)

    def states(self) -> list[ServerState]:
        return [self._runners[n].snapshot() for n in self.names()]

    def state(self, name: str) -> ServerState:
        return self._get(name).snapshot()

    def _get(self, name: str) -> ServerRunner:
        runner = self._runners.get(name)
        if runner is None:
            known = ", ".join(self.names()) or "none"
            raise McpError(f"unknown MCP server {name!r}; the servers configured are: {known}")
        return runner

    def _running(self, name: str) -> ServerRunner:
        runner = self._get(name)
        if self._nursery is None:
            raise McpError(runner.unavailable("the MCP hub is not running"))
        return runner

    # ------------------------------------------------------------ using

    async def tools(self, name: str) -> list[McpToolInfo]:
        """The server's tools (rejected ones included, with the reason); starts
        a lazy server and waits for it, at most its connect_timeout."""
        runner = self._running(name)
        await runner.ready_client()
        return list(runner.tools)

    async def tool_specs(self, servers: Sequence[str]) -> list[ToolSpec]:
        """ToolSpecs SERVER__TOOL of the offered tools of ``servers``, and
        ``mcp_read_resource`` when one of them has resources. A server that
        is unknown or cannot start is left out (its state says why)."""
        found: dict[str, list[McpToolInfo]] = {}

        async def collect(name: str) -> None:
            runner = self._runners.get(name)
            if runner is not None and runner.state != "ready" and runner.last_error is not None:
                # it failed before and is still not back: a turn does not wait on
                # it (up to connect_timeout each model call); offered once ready
                log.info("mcp.server_left_out", server=name, error=runner.last_error)
                return
            try:
                found[name] = await self.tools(name)
            except McpError as exc:
                log.info("mcp.server_left_out", server=name, error=str(exc))

        async with trio.open_nursery() as nursery:
            for name in dict.fromkeys(servers):
                nursery.start_soon(collect, name)
        specs: list[ToolSpec] = []
        with_resources: list[str] = []
        listing: list[str] = []
        for name in dict.fromkeys(servers):
            if name not in found:
                continue
            specs.extend(tool_spec(self, info) for info in found[name] if info.rejected is None)
            runner = self._runners.get(name)
            if runner is not None and runner.has_resources:
                with_resources.append(name)
                listing.extend(
                    f"- {name}: {uri}" + (f" ({title})" if title else "")
                    for uri, title in runner.resources
                )
        if with_resources:
            specs.append(read_resource_spec(self, with_resources, "\n".join(listing)))
        return specs

    async def call(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> ToolOutput:
        """Call ``tool`` of ``server``. Every failure of the server (not
        available, stopped during the call, silent longer than call_timeout,
        an error answer) is an error ToolOutput; McpError only for an unknown
        server. Cancelling the caller cancels the call on the server."""
        runner = self._get(server)
        if self._nursery is None:
            return ToolOutput(runner.unavailable("the MCP hub is not running"), is_error=True)
        return await runner.call(tool, arguments, progress)

    async def read_resource(self, server: str, uri: str) -> ToolOutput:
        """A resource's contents; an error ToolOutput when the server is
        unknown or unavailable (this is a tool the model calls)."""
        try:
            runner = self._running(server)
        except McpError as exc:
            return ToolOutput(str(exc), is_error=True)
        return await runner.read_resource(uri)

    async def prompts(self, name: str) -> list[dict[str, Any]]:
        """[{name, description, arguments: [{name, description, required}]}]"""
        return await self._running(name).prompts()

    async def restart(self, name: str) -> ServerState:
        """Stop the server and start it again; returns its state once the new
        connection is ready or has failed (or after connect_timeout)."""
        runner = self._running(name)
        before = runner.attempts
        runner.restart()
        with trio.move_on_after(runner.spec.connect_timeout + _STOP_GRACE):
            while not (runner.attempts > before and runner.state in ("ready", "failed")):
                await runner.changed.wait()
        return runner.snapshot()


def _named(name: str, spec: McpServerSpec) -> McpServerSpec:
    """The spec under its key's name (the config's key is the name)."""
    if spec.name == name:
        return spec
    import dataclasses

    return dataclasses.replace(spec, name=name)
