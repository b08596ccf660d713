"""The daemon's own methods: ``daemon.status``, ``daemon.shutdown``,
``daemon.reload``, ``daemon.subscribe`` / ``daemon.unsubscribe`` (the events
themselves: daemon/server/events.py), ``models.list``, ``providers.list`` and
``providers.check``. See docs/protocol.md."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

import httpx

import protocol as p
from daemon.methods.cluster import cluster_state
from daemon.methods.shapes import Family
from protocol import params as P
from protocol import results as R
from protocol.rows import model_row
from protocol.version import __version__

if TYPE_CHECKING:
    from daemon.server import Connection, Handler

# a daemon whose service did not say (tests that build the API by hand)
_TRACES_OFF = {"enabled": False, "endpoint": None, "content": False, "why": "not started"}


class DaemonApi(Family):
    """The daemon-wide methods."""

    def handlers(self) -> dict[str, Handler]:
        return {
            p.DAEMON_STATUS: self.status,
            p.DAEMON_SHUTDOWN: self.shutdown,
            p.DAEMON_RELOAD: self.reload,
            p.MODELS_LIST: self.models,
            p.PROVIDERS_LIST: self.providers,
            p.PROVIDERS_CHECK: self.check_provider,
            **event_handlers(),
        }

    async def status(self, conn: Connection, params: P.NoParams) -> R.Status:
        # from memory: status is what scripts poll, it must not wait on the database
        return {
            "version": __version__,
            "pid": os.getpid(),
            "started_at": datetime.fromtimestamp(self.host.info.started_at, UTC).isoformat(),
            "uptime": round(time.time() - self.host.info.started_at, 3),
            "socket": self.host.info.socket,
            "database": self.host.info.database,
            "agents": {"running": self.sup.running_count, "dead": self.sup.dead_count},
            "connections": self.host.info.connections(),
            "default_model": self.host.info.default_model,
            "max_line_bytes": self.host.info.max_line_bytes,
            "protocol_version": p.PROTOCOL_VERSION,
            "cluster": cluster_state(self.host.info.membership),
            "policies": self.sup.deps.permissions.known(),
            "default_policy": self.sup.deps.permissions.default,
            "traces": cast(R.TracesState, self.host.info.traces or _TRACES_OFF),
        }

    async def shutdown(self, conn: Connection, params: P.NoParams) -> R.Ok:
        self.host.info.shutdown()
        return {"ok": True}

    async def reload(self, conn: Connection, params: P.NoParams) -> R.Ok:
        refused = self.host.info.reload()
        if refused is not None:
            raise p.RpcError(p.REFUSED, f"reload refused, the running config is kept: {refused}")
        return {"ok": True}

    async def models(self, conn: Connection, params: P.ModelsList) -> list[R.ModelRow]:
        if params.provider is not None and params.provider not in self.host.catalog.providers:
            known = ", ".join(self.host.catalog.providers)
            raise p.RpcError(
                p.REFUSED, f"unknown provider {params.provider!r} (providers: {known})"
            )
        catalog = self.host.catalog
        return [model_row(m, catalog) for m in catalog.models_of(params.provider)]

    async def providers(self, conn: Connection, params: P.NoParams) -> list[R.ProviderRow]:
        out: list[R.ProviderRow] = []
        for entry in self.host.catalog.providers.values():
            settings = self.host.info.settings(entry.name)
            out.append(
                {
                    "name": entry.name,
                    "label": entry.label,
                    "api": settings.api,
                    "base_url": settings.base_url,
                    "key_env": list(entry.key_env),
                    "key_set": bool(settings.api_key) or not entry.key_env,
                }
            )
        return out

    async def check_provider(self, conn: Connection, params: P.ProvidersCheck) -> R.ProviderCheck:
        if params.provider not in self.host.catalog.providers:
            raise p.RpcError(p.REFUSED, f"unknown provider {params.provider!r}")
        settings = self.host.info.settings(params.provider)
        name = params.provider
        if settings.key_env and not settings.api_key:
            return {
                "provider": name,
                "ok": False,
                "error": f"no API key: set {' or '.join(settings.key_env)}",
            }
        try:
            async with httpx.AsyncClient(timeout=5) as client:
                r = await client.get(settings.base_url)
            return {"provider": name, "ok": True, "status": r.status_code}
        except httpx.HTTPError as e:
            return {
                "provider": name,
                "ok": False,
                "error": f"{settings.base_url} did not answer: {type(e).__name__}",
            }


def event_handlers() -> dict[str, Handler]:
    """``daemon.subscribe`` / ``daemon.unsubscribe``: they need nothing but the connection."""
    return {p.DAEMON_SUBSCRIBE: _subscribe, p.DAEMON_UNSUBSCRIBE: _unsubscribe}


async def _subscribe(conn: Connection, params: P.NoParams) -> R.DaemonSubscribed:
    conn.daemon_events = True
    return {"subscribed": True}


async def _unsubscribe(conn: Connection, params: P.NoParams) -> R.Ok:
    was = conn.daemon_events
    conn.daemon_events = False
    return {"ok": was}
