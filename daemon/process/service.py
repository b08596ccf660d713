"""The daemon process: open the store, start the supervisor and the control
socket, report readiness, and stop gracefully.

    SIGTERM / SIGINT   graceful shutdown within the configured grace period:
                       running turns are cancelled and marked interrupted,
                       the store is closed, the socket removed
    SIGHUP             read config and credentials again
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import stat
import time
from pathlib import Path
from typing import NamedTuple

import structlog
import trio

from agents import AgentConfig, AsyncStore, ProviderPool, RetryPolicy, Supervisor
from agents.tools import (
    Guard,
    Protected,
    ToolEnv,
    ToolRegistry,
    agent_tools,
    builtin_tools,
    discover_external_tools,
)
from agents.tools.mcp import McpHub, McpServerSpec, ServerState
from daemon.cluster import Membership, daemon_id
from daemon.cluster.listen import Listener
from daemon.cluster.peers import Peers
from daemon.cluster.startup import CLUSTER_SECRET, joining, listen_for_peers, open_store
from daemon.cluster.tcp import serve_peers
from daemon.config import (
    Config,
    ConfigError,
    build_catalog,
    build_permissions,
    daily_limits,
    limiter_configs,
    load_config,
    settings_factory,
    tool_env,
)
from daemon.config.mcp import mcp_specs
from daemon.methods.api import Api, DaemonInfo
from daemon.methods.mcp import server_event
from daemon.process.lock import hold_database
from daemon.process.logs import register_secrets
from daemon.process.sockets import (
    AlreadyRunning,
    StartupError,
    activated_socket,
    bind_socket,
    sd_notify,
    socket_in_use,
)
from daemon.process.traces import start_traces, stop_traces
from daemon.server import ControlServer
from daemon.server.events import DaemonEvents
from protocol.credentials import load_credentials, secret_values
from protocol.paths import Paths
from store import display_url, sqlite_file

log = structlog.get_logger("ikigai.daemon")


GC_THRESHOLDS = (10_000, 20, 100)  # set once the daemon is ready: why in Daemon.run


def _keys(config: Config, credentials: dict[str, str], env: dict[str, str]) -> list[str]:
    key_env = [v for p in build_catalog(config).providers.values() for v in p.key_env]
    return secret_values(credentials, env, key_env)


class _Loaded(NamedTuple):
    config: Config
    credentials: dict[str, str]
    mcp: dict[str, McpServerSpec]  # the MCP servers, their $NAMEs replaced
    keys: list[str]  # every secret: provider keys and the MCP servers' (no tool gets one)


def _load(paths: Paths, env: dict[str, str]) -> _Loaded:
    config = load_config(paths.config_file)
    credentials = load_credentials(paths.credentials_file)
    keys = _keys(config, credentials, env)
    register_secrets(keys)
    specs, mcp_keys = mcp_specs(
        config.mcp_servers, credentials, env, str(paths.config_file), error=ConfigError
    )
    register_secrets(mcp_keys)  # before anything could log them
    return _Loaded(config, credentials, specs, list(dict.fromkeys([*keys, *mcp_keys])))


def _transient_retries(config: Config) -> dict[str, int]:
    return {
        name: p.max_retries
        for name, p in config.providers.items()
        if isinstance(p.max_retries, int)
    }


def _folders(config: Config) -> list[Path]:
    return [Path(f).expanduser() for f in config.tool_folders]


async def _tools(config: Config, env: ToolEnv, guard: Guard) -> ToolRegistry:
    specs = [*builtin_tools(), *agent_tools()]
    folders = _folders(config)
    external, warnings = await discover_external_tools(
        folders, reserved=[s.name for s in specs], env=env
    )
    for w in warnings:
        log.warning("external tool skipped", reason=w)
    specs.extend(external)
    enabled = set(config.tools.enabled) if config.tools.enabled is not None else None
    disabled = set(config.tools.disabled)
    reg = ToolRegistry(env=env, guard=guard)
    for spec in specs:
        if (enabled is None or spec.name in enabled) and spec.name not in disabled:
            reg.register(spec)
    return reg


def _sandbox_available() -> bool:
    """Can bubblewrap confine tool processes here (runs it once: blocking)."""
    try:
        from agents.tools._sandbox import sandbox_available
    except ImportError:  # no sandbox module: nothing can confine a process
        return False
    return sandbox_available()


def _guard(paths: Paths, url: str) -> Guard:
    """What no tool may open, and what every sandbox hides with its folder: the
    keys, the database (every agent's history) and the control socket (a tool
    that reached it could answer its own approval)."""
    protected = [
        Protected(paths.credentials_file),
        Protected(paths.socket, reason="is ikigai's control socket"),
    ]
    db = sqlite_file(url)
    if db is not None:
        protected.append(Protected(db, reason="is ikigai's database"))
    return Guard(protected)


class Daemon:
    def __init__(self, paths: Paths, env: dict[str, str] | None = None) -> None:
        self.paths = paths
        self.env = dict(os.environ if env is None else env)
        self.started_at = time.time()
        self._cancel: trio.CancelScope | None = None
        self._stopping = trio.Event()
        self.sup: Supervisor | None = None
        self.pool: ProviderPool | None = None
        self.server: ControlServer | None = None
        self.config: Config | None = None
        self.info: DaemonInfo | None = None
        self.keys: list[str] = []  # the configured API keys: no tool process gets one
        self.sandbox_ok = False  # bubblewrap works here (checked once at start)
        self.hub: McpHub | None = None  # the MCP servers (none configured: an empty hub)
        self.events = DaemonEvents()  # for daemon.subscribe
        self.membership: Membership | None = None  # among the database's daemons

    def request_shutdown(self) -> None:
        self._stopping.set()

    def reload(self) -> str | None:
        """Read config and credentials again; None when done, else why it was
        refused (the running config is kept)."""
        try:
            loaded = _load(self.paths, self.env)
            config, credentials = loaded.config, loaded.credentials
            catalog = build_catalog(config)
        except (ValueError, OSError) as e:
            log.error("reload refused; keeping the running config", reason=str(e))
            return str(e)
        self.keys = loaded.keys
        assert self.pool is not None and self.sup is not None
        # one catalog for everyone who reads it: the pool (wire APIs, pricing of
        # turns), model texts (through the pool) and the Api (through the pool)
        self.pool.reset(
            settings_factory(config, credentials, self.env, catalog),
            catalog=catalog,
            limits=limiter_configs(config),
        )
        self.config = config
        # what a reload changes: keys, providers and their settings, the default
        # model and the agents' limits; tools and the database are read at start only
        self.sup.config.max_tool_turns = config.max_tool_turns
        self.sup.config.max_output_tokens = config.max_output_tokens
        self.sup.config.fallbacks = list(config.fallback_models)
        self.sup.config.approval_timeout = config.approval_timeout
        self.sup.config.compact_at = config.context.compact_at
        self.sup.config.summary_model = config.context.summary_model
        self.sup.config.tool_result_share = config.context.tool_result_share
        self.sup.config.daily = daily_limits(config)  # the next model call is checked by it
        self.sup.config.retry.transient_retries = _transient_retries(config)
        # every actor shares sup.deps: the next tool call is checked by the new rules
        self.sup.deps.permissions = build_permissions(config, sandbox_available=self.sandbox_ok)
        if self.server is not None:
            self.server.flush_interval = config.stream.flush_interval
        if self.hub is not None:  # servers added start, removed ones stop, changed ones restart
            self.hub.configure(loaded.mcp)
        if self.info is not None:
            self.info.default_model = config.default_model
        log.info("config reloaded", config=str(self.paths.config_file))
        return None

    async def run(self, *, task_status: trio.TaskStatus[Daemon] = trio.TASK_STATUS_IGNORED) -> None:
        loaded = _load(self.paths, self.env)
        config, credentials = loaded.config, loaded.credentials
        self.config = config
        catalog = build_catalog(config)
        self.keys = loaded.keys
        settings = settings_factory(config, credentials, self.env, catalog)
        url = self.env.get("IKIGAI_DB_URL") or config.database_url or self.paths.db_url
        home = self.paths.home or self.paths.config_file.parent
        my_id = daemon_id(home, config.cluster.id)
        # one daemon per SQLite file, one per daemon id on PostgreSQL: locked
        # before the store touches a row
        db_lock = await trio.to_thread.run_sync(hold_database, url, self.paths.socket, my_id)
        secret = credentials.get(CLUSTER_SECRET)
        peer_sock, port = listen_for_peers(config.cluster, secret)
        try:
            store = await trio.to_thread.run_sync(open_store, url)
            me = joining(my_id, config.cluster, home, self.paths.socket, store.revision, port)
            self.membership = Membership(store, config.cluster, me)
            restore_only = await trio.to_thread.run_sync(self.membership.join)
        except BaseException:
            if "store" in locals():
                store.close()
            if peer_sock is not None:
                peer_sock.close()
            db_lock.release()
            raise
        try:
            listener = activated_socket() or bind_socket(self.paths.socket)
        except BaseException:
            store.close()
            db_lock.release()
            raise
        try:
            self.pool = ProviderPool(
                catalog=catalog,
                settings=settings,
                limits=limiter_configs(config),
                limit=config.provider_limiter,
            )
            # tools never see a key: not in their environment, not through the file tools
            tools = await _tools(
                config,
                tool_env(config, self.env, lambda: self.keys, catalog),
                _guard(self.paths, url),
            )
            agent_config = AgentConfig(
                max_tool_turns=config.max_tool_turns,
                max_output_tokens=config.max_output_tokens,
                retry=RetryPolicy(transient_retries=_transient_retries(config)),
                fallbacks=list(config.fallback_models),
                approval_timeout=config.approval_timeout,
                compact_at=config.context.compact_at,
                summary_model=config.context.summary_model,
                tool_result_share=config.context.tool_result_share,
                daily=daily_limits(config),
                worktrees=self.paths.worktrees,
            )
            self.sandbox_ok = await trio.to_thread.run_sync(_sandbox_available)
            if not self.sandbox_ok:
                log.warning(
                    "bubblewrap not found: shell commands will be asked before they run "
                    "(apt install bubblewrap)"
                )
            # always a hub, empty when no server is configured (the SDK is then never imported)
            self.hub = McpHub(loaded.mcp, on_state=self._mcp_state)
            self.sup = Supervisor(
                AsyncStore(store),
                self.pool,
                tools,
                agent_config,
                build_permissions(config, sandbox_available=self.sandbox_ok),
                mcp=self.hub,
            )
            # before the agents are restored: a turn resumed at start is traced too
            self.sup.deps.tracer, traces = start_traces(config.traces)
            self.sup.restore_only = restore_only
            self.sup.shared = store.shared
            self.sup.deps.lease_held = self.membership.lease_held
            self.membership.sup = self.sup
            async with trio.open_nursery() as nursery:
                # before the supervisor: restored agents may use their servers at once.
                # Cancelled with the nursery once the supervisor has stopped; it
                # shuts its servers down cleanly
                await nursery.start(self.hub.run)
                self.sup.scheduler.publish = self.events.publish
                await nursery.start(self.sup.run)
                await nursery.start(self.membership.run)
                if store.shared:  # the other daemons' mail and turn ends
                    await nursery.start(Listener(store, self.sup).run)
                info = self.info = DaemonInfo(
                    socket=str(self.paths.socket),
                    database=display_url(url),
                    started_at=self.started_at,
                    default_model=config.default_model,
                    connections=lambda: len(self.server.connections) if self.server else 0,
                    shutdown=self.request_shutdown,
                    reload=self.reload,
                    settings=lambda name: self.pool._settings(name),  # type: ignore[union-attr]
                    max_line_bytes=config.max_line_bytes,
                    membership=self.membership,
                    traces=traces,
                )
                api = Api(self.sup, catalog, info)
                self.server = ControlServer(
                    api.handlers(),
                    max_line=config.max_line_bytes,
                    flush_interval=config.stream.flush_interval,
                )
                self.events.server = self.server
                peers = Peers(store, my_id, me.host, secret)
                await nursery.start(peers.run)
                if peer_sock is not None:  # daemons of other hosts, authenticated
                    assert secret is not None
                    await nursery.start(serve_peers, self.server, peer_sock, secret, my_id)
                self.server.forwarder = peers
                self.membership.peers = peers
                trio_sock = trio.socket.from_stdlib_socket(listener)
                await nursery.start(self.server.serve, trio_sock)
                # signals are handled before readiness is announced: a SIGTERM
                # right after READY=1 must shut down gracefully, not kill us
                await nursery.start(self._signals)
                sd_notify("READY=1")
                # what start-up made (modules, the catalog, restored agents) lives
                # as long as the daemon: out of the collector's sight, a full
                # collection scans only newer objects. And full collections come
                # rarely: with the default thresholds a thousand streaming agents
                # caused one every second or two, each stopping every stream for
                # 100-300 ms; a young generation of 10,000 lets most short-lived
                # objects die before they are promoted at all.
                gc.freeze()
                gc.set_threshold(*GC_THRESHOLDS)
                log.info(
                    "ikigaid ready",
                    socket=str(self.paths.socket),
                    database=display_url(url),
                    pid=os.getpid(),
                )
                task_status.started(self)
                await self._stopping.wait()
                sd_notify("STOPPING=1")
                log.info("shutting down", grace=config.shutdown_grace)
                if config.cluster.drain and store.shared:  # a rolling restart loses nothing
                    await self.membership.drain(config.shutdown_grace)
                await self.sup.shutdown(config.shutdown_grace)
                await self.membership.leave()
                with trio.move_on_after(2):
                    await self.server.drain()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                if self.sup is not None:
                    await stop_traces(self.sup.deps.tracer)
                if self.pool is not None:
                    await self.pool.aclose()
                await trio.to_thread.run_sync(store.close)
            listener.close()
            if peer_sock is not None:
                peer_sock.close()
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(self.paths.socket.lstat().st_mode):
                    self.paths.socket.unlink()
            with trio.CancelScope(shield=True):
                # last: once the store is closed and the socket gone, the next daemon may start
                await trio.to_thread.run_sync(db_lock.release)
            log.info("ikigaid stopped")

    def _mcp_state(self, state: ServerState) -> None:
        """An MCP server changed state: logged, and a daemon event for subscribers."""
        log.info(
            "mcp server " + state.state,
            server=state.name,
            pid=state.pid,
            tools=state.tools,
            error=state.last_error,
        )
        self.events.publish(server_event(state))

    async def _signals(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            task_status.started()
            async for signum in signals:
                if signum == signal.SIGHUP:
                    self.reload()
                else:
                    log.info("signal received", signal=signal.Signals(signum).name)
                    self.request_shutdown()


__all__ = ["AlreadyRunning", "Daemon", "StartupError", "bind_socket", "sd_notify", "socket_in_use"]
