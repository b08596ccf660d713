"""One MCP server's supervisor: a task that owns the connection (the SDK's
Client must be entered and left in one task), lists the tools, re-lists them
on list_changed, notices a death and restarts with backoff. Agents call the
shared Client from their own tasks through ``call``: the SDK matches answers
to requests, and a caller's cancel becomes notifications/cancelled.

The SDK is imported here only when a connection is made.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

import structlog
import trio

from providers.secrets import scrub

from .._api import ToolOutput
from .._text import clip
from ._results import call_output, resource_output
from ._spec import McpError, McpServerSpec, McpToolInfo, ServerState, State
from ._tools import tool_infos

log = structlog.get_logger("ikigai.mcp")

BACKOFF_MIN = 0.5
BACKOFF_MAX = 30.0
HEALTHY = 60.0  # seconds of a good connection after which the backoff starts over
_MAX_PAGES = 50  # pages of tools/list followed
_MAX_TOOLS = 1000
_RESOURCES_SHOWN = 20
_BAD_LINES_LOGGED = 5
_ERROR_TEXT = 2000


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ikigai")
    except PackageNotFoundError:
        return "0"


class ServerRunner:
    """The state and the supervisor task of one server."""

    def __init__(self, spec: McpServerSpec, notify: Callable[[ServerState], None]) -> None:
        self.spec = spec
        self._notify = notify
        self.state: State = "stopped"
        self.pid: int | None = None
        self.tools: list[McpToolInfo] = []
        self.last_error: str | None = None
        self.restarts = 0
        self.since = time.time()
        self.attempts = 0  # connections tried
        self.client: Any = None
        self.has_resources = False
        self.resources: list[tuple[str, str]] = []  # (uri, name) of the first few
        self.changed = trio.Event()  # set (and replaced) at each state change
        self._wanted = trio.Event()
        self._wake = trio.Event()  # ends a backoff early (restart)
        self._restart_asked = False
        self._conn_scope: trio.CancelScope | None = None
        self._down = trio.Event()  # the current connection is known dead
        self._relist = trio.Event()
        self._bad_lines = 0
        self.alive = False  # the supervisor task runs (False once stopped for good)
        self.stopping = False  # removed, or the hub is shutting down

    # ------------------------------------------------------------ state

    def snapshot(self) -> ServerState:
        return ServerState(
            name=self.spec.name,
            transport=self.spec.transport,
            target=self.scrub(self.spec.target),
            state=self.state,
            pid=self.pid,
            tools=len(self.tools) if self.state == "ready" else 0,
            last_error=self.last_error,
            restarts=self.restarts,
            since=self.since,
        )

    def scrub(self, text: str) -> str:
        """``text`` without the registered secrets, nor any value of the
        server's env or headers (a server may print its token)."""
        spec = self.spec
        values = [*spec.env.values(), *spec.headers.values()]
        values += [part for v in spec.headers.values() for part in v.split()]  # "Bearer X"
        return scrub(text, *values)

    def _set(self, state: State, **fields: Any) -> None:
        self.state = state
        self.since = time.time()
        for key, value in fields.items():
            setattr(self, key, value)
        self.changed.set()
        self.changed = trio.Event()
        try:
            self._notify(self.snapshot())
        except Exception as exc:  # a listener's bug must not stop the server
            log.warning("mcp.on_state_failed", server=self.spec.name, error=repr(exc))

    def want(self) -> None:
        """Start the server if it is not started (lazy servers wait for this)."""
        self._wanted.set()

    def restart(self) -> None:
        """Drop the connection (if any) and connect again now."""
        self._restart_asked = True
        self.want()
        if self._conn_scope is not None:
            self._conn_scope.cancel()
        self._wake.set()

    def stop(self, scope: trio.CancelScope | None) -> None:
        """Stop for good (the supervisor's scope is cancelled by the owner)."""
        self.stopping = True
        if scope is not None:
            scope.cancel()

    def connection_lost(self, client: Any) -> None:
        """A call saw the connection close: do not wait to notice it otherwise."""
        if client is not None and client is self.client:
            self.client = None  # no new call goes to it while the supervisor catches up
            self._down.set()

    # ------------------------------------------------------------ supervisor

    async def run(self) -> None:
        backoff = BACKOFF_MIN
        self.alive = True
        try:
            await self._wanted.wait()
            while True:
                if self.attempts:
                    self.restarts += 1
                self.attempts += 1
                self._restart_asked = False
                self._wake = trio.Event()  # a restart asked before now is this attempt
                self._set("starting", pid=None)
                ready_at, error = await self._connection()
                if self._restart_asked:
                    backoff = BACKOFF_MIN
                    continue
                if ready_at is not None and trio.current_time() - ready_at >= HEALTHY:
                    backoff = BACKOFF_MIN
                error = error or "the connection ended"
                log.warning(
                    "mcp.server_down", server=self.spec.name, error=error, retry_in=backoff
                )
                state: State = "restarting" if ready_at is not None else "failed"
                self._set(state, last_error=error, tools=[], pid=None)
                with trio.move_on_after(backoff):
                    await self._wake.wait()
                backoff = min(backoff * 2, BACKOFF_MAX)
        finally:
            self.alive = False
            self.client = None
            self._set("stopped", pid=None, tools=[])

    async def _connection(self) -> tuple[float | None, str | None]:
        """One connection, from spawn to death; returns when it was ready (or
        None) and why it ended."""
        import mcp_types as types
        from mcp import Client

        from ._transport import StdioTransport, http_transport, server_env

        spec = self.spec
        stdio: StdioTransport | None = None
        transport: Any
        if spec.command is not None:
            stdio = StdioTransport(
                [spec.command, *spec.args],
                env=server_env(spec.env),
                cwd=_expand(spec.cwd),
                on_stderr=self._stderr,
                on_spawn=self._spawned,
                on_bad_line=self._bad_line,
            )
            transport = stdio.open()
        else:
            transport = http_transport(spec.url or "", spec.headers)
        self._down = trio.Event()
        ready_at: float | None = None
        error: str | None = None
        try:
            # The connect deadline is on a scope around the whole `async with`,
            # disarmed once connected: a deadline around __aenter__ alone
            # breaks trio's scope nesting (the Client's task groups outlive it).
            with trio.CancelScope() as scope:
                self._conn_scope = scope
                scope.deadline = trio.current_time() + spec.connect_timeout
                async with Client(
                    transport,
                    mode=spec.mode,
                    message_handler=self._on_message,
                    client_info=types.Implementation(name="ikigai", version=_version()),
                    cache=None,
                ) as client:
                    await self._catalogue(client)
                    scope.deadline = math.inf
                    self.client = client
                    ready_at = trio.current_time()
                    self._set("ready", last_error=None)
                    log.info("mcp.server_ready", server=spec.name, tools=len(self.tools))
                    await self._serve(client, stdio)
            if scope.cancelled_caught and ready_at is None and not self._restart_asked:
                error = f"no answer within {spec.connect_timeout:g} s (connect_timeout)"
        except* Exception as group:
            error = self.scrub(_describe(group))
            log.info("mcp.connection_error", server=spec.name, error=error)
        finally:
            self.client = None
            self._conn_scope = None
        if stdio is not None and stdio.died:
            error = stdio.reason or stdio.exit_text()
        return ready_at, self.scrub(clip(error, _ERROR_TEXT)) if error else None

    async def _catalogue(self, client: Any) -> None:
        """List the tools (every page) and the first resources."""
        tools: list[Any] = []
        cursor: str | None = None
        # a server of resources or prompts only has no tools/list at all
        pages = _MAX_PAGES if client.server_capabilities.tools is not None else 0
        for _ in range(pages):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or len(tools) >= _MAX_TOOLS:
                break
        infos = tool_infos(self.spec.name, tools[:_MAX_TOOLS])
        for info in infos:
            if info.rejected:
                log.warning(
                    "mcp.tool_rejected", server=self.spec.name, tool=info.name, why=info.rejected
                )
        self.tools = infos
        # Servers built on the Python SDK claim the capability with no
        # resource at all: offer the resource tool only for some.
        self.has_resources, self.resources = False, []
        if client.server_capabilities.resources is not None:
            try:
                listing = await client.list_resources()
                self.resources = [
                    (clip(str(r.uri), 300), clip(str(r.name or ""), 100))
                    for r in listing.resources[:_RESOURCES_SHOWN]
                ]
                self.has_resources = bool(listing.resources)
                if not self.has_resources:
                    templates = await client.list_resource_templates()
                    self.has_resources = bool(templates.resource_templates)
            except Exception as exc:  # resources are a nicety: the tools still work
                log.info("mcp.resources_failed", server=self.spec.name, error=repr(exc)[:300])

    async def _serve(self, client: Any, stdio: Any) -> None:
        """Until the connection dies: re-list on list_changed. A stdio death
        shows as the end of its output (the SDK would notice only at the next
        request); an HTTP failure cancels this body from the transport."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._relister, client)
            if self.spec.mode == "auto":
                nursery.start_soon(self._listener, client)
            if stdio is not None:
                nursery.start_soon(_set_when, stdio.closed, self._down)
            await self._down.wait()
            nursery.cancel_scope.cancel()

    async def _relister(self, client: Any) -> None:
        while True:
            await self._relist.wait()
            self._relist = trio.Event()
            try:
                with trio.fail_after(self.spec.connect_timeout):
                    await self._catalogue(client)
            except Exception as exc:
                log.warning("mcp.relist_failed", server=self.spec.name, error=repr(exc)[:300])
                continue
            log.info("mcp.tools_changed", server=self.spec.name, tools=len(self.tools))
            self._set("ready")

    async def _listener(self, client: Any) -> None:
        """On 2026-07-28 connections changes come through subscriptions/listen."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return
        try:
            async with client.listen(tools_list_changed=True, resources_list_changed=True) as sub:
                # a change between the first listing and the subscription
                # would be missed: list once more now that we listen
                self._relist.set()
                async for _event in sub:
                    self._relist.set()
        except Exception as exc:
            log.info("mcp.listen_ended", server=self.spec.name, error=repr(exc)[:300])

    async def _on_message(self, message: Any) -> None:
        # runs in the SDK's tasks: keep it short
        if isinstance(message, Exception):
            self._bad_line(message)
            return
        method = getattr(message, "method", "")
        if method in ("notifications/tools/list_changed", "notifications/resources/list_changed"):
            self._relist.set()

    def _spawned(self, pid: int) -> None:
        self.pid = pid

    def _stderr(self, line: str) -> None:
        log.info("mcp.stderr", server=self.spec.name, line=self.scrub(line))

    def _bad_line(self, exc: Exception) -> None:
        self._bad_lines += 1
        n = self._bad_lines
        if n <= _BAD_LINES_LOGGED or n % 1000 == 0:
            log.warning(
                "mcp.bad_output",
                server=self.spec.name,
                count=n,
                error=self.scrub(clip(str(exc).splitlines()[0] if str(exc) else repr(exc), 300)),
            )

    # ------------------------------------------------------------ callers

    async def ready_client(self) -> Any:
        """The connected Client, starting the server if needed; McpError if it
        failed or is not ready within connect_timeout."""
        self.want()
        with trio.move_on_after(self.spec.connect_timeout):
            while True:
                if self.state == "ready" and self.client is not None and not self._down.is_set():
                    return self.client
                if self.state == "failed":
                    raise McpError(self.unavailable(self.last_error or "it failed to start"))
                if not self.alive and self.attempts:
                    raise McpError(self.unavailable("it was stopped"))
                await self.changed.wait()
        raise McpError(
            self.unavailable(f"it was not ready within {self.spec.connect_timeout:g} s")
        )

    def unavailable(self, why: str) -> str:
        return f"the MCP server {self.spec.name} is not available: {why}"

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Callable[[float, float | None, str | None], None] | None,
    ) -> ToolOutput:
        try:
            client = await self.ready_client()
        except McpError as exc:
            return ToolOutput(str(exc), is_error=True)
        idle = self.spec.call_timeout
        with trio.CancelScope() as scope:
            scope.deadline = trio.current_time() + idle

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                scope.deadline = trio.current_time() + idle  # progress is not silence
                if progress is not None:
                    try:
                        progress(done, total, message)
                    except Exception as exc:
                        log.warning("mcp.progress_failed", server=self.spec.name, error=repr(exc))

            try:
                result = await client.call_tool(tool, arguments, progress_callback=on_progress)
            except Exception as exc:
                return self._failed(client, f"the call to {tool}", exc)
            return call_output(result)
        return ToolOutput(
            f"the MCP tool {tool} of the server {self.spec.name} timed out after {idle:g} s "
            "without an answer or progress",
            is_error=True,
        )

    async def read_resource(self, uri: str) -> ToolOutput:
        try:
            client = await self.ready_client()
        except McpError as exc:
            return ToolOutput(str(exc), is_error=True)
        with trio.move_on_after(self.spec.call_timeout):
            try:
                result = await client.read_resource(uri)
            except Exception as exc:
                return self._failed(client, f"reading {clip(uri, 200)}", exc)
            return resource_output(result)
        return ToolOutput(
            f"reading {clip(uri, 200)} from the MCP server {self.spec.name} timed out after "
            f"{self.spec.call_timeout:g} s",
            is_error=True,
        )

    async def prompts(self) -> list[dict[str, Any]]:
        client = await self.ready_client()
        try:
            with trio.fail_after(self.spec.call_timeout):
                listing = await client.list_prompts()
        except trio.TooSlowError:
            raise McpError(self.unavailable("it did not list its prompts in time")) from None
        except Exception as exc:
            raise McpError(self._failed(client, "listing prompts", exc).content) from None
        return [
            {
                "name": p.name,
                "description": p.description or "",
                "arguments": [
                    {
                        "name": a.name,
                        "description": a.description or "",
                        "required": bool(a.required),
                    }
                    for a in (p.arguments or [])
                ],
            }
            for p in listing.prompts
        ]

    def _failed(self, client: Any, what: str, exc: Exception) -> ToolOutput:
        """An error of a request as a ToolOutput for the model."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        from ._transport import UnreadableAnswer

        name = self.spec.name
        if isinstance(exc, MCPError):
            if isinstance(exc.data, UnreadableAnswer):  # the transport's, not the server's
                text = (
                    f"the MCP server {name} answered {what} (request {exc.data.id!r}) "
                    f"with a line that is not valid JSON-RPC: {exc.data.fault}"
                )
            elif exc.code == CONNECTION_CLOSED:
                self.connection_lost(client)
                text = f"the MCP server {name} stopped during the call" + (
                    "" if self.stopping or not self.alive else "; it is being restarted"
                )
            else:
                text = f"the MCP server {name} refused {what}: {exc.message} (error {exc.code})"
        elif client is not self.client:  # the connection went away under the call
            text = f"the MCP server {name} stopped during the call; it is being restarted"
        elif isinstance(exc, ValueError):  # pydantic: an answer that is not MCP
            text = f"the MCP server {name} answered {what} with something that is not MCP"
            log.warning("mcp.bad_answer", server=name, error=repr(exc)[:500])
        else:
            text = f"{what} on the MCP server {name} failed: {exc}"
            log.warning("mcp.request_failed", server=name, error=repr(exc)[:500])
        return ToolOutput(self.scrub(clip(text, _ERROR_TEXT)), is_error=True)


def _expand(cwd: str | None) -> str | None:
    # no I/O: expanduser reads only the environment
    return os.path.expanduser(cwd) if cwd else None


async def _set_when(source: trio.Event, target: trio.Event) -> None:
    await source.wait()
    target.set()


def _describe(group: BaseExceptionGroup[Exception]) -> str:
    """The leaves of an exception group, for a person."""
    texts: list[str] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(exc.exceptions)
            continue
        if isinstance(exc, FileNotFoundError | PermissionError):
            texts.append(f"cannot start the server: {exc.strerror}: {exc.filename}")
        else:
            message = str(exc) or exc.__class__.__name__
            texts.append(f"{exc.__class__.__name__}: {message}" if len(message) < 40 else message)
    return "; ".join(dict.fromkeys(texts))
