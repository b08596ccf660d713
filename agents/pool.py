"""One Provider per (provider, wire api), built on demand and shared by agents.

Agents name providers ("anthropic", "deepseek", a custom one); the pool turns
that name into an HttpProvider with the right settings, and keeps one httpx
client (whole calls) and one StreamClient (streamed calls) per provider, sharing
one TLS context, so connections are reused across agents and wire APIs. Both
keep alive as many connections as they may open: a busy agent reconnecting
every turn pays a TLS handshake each time.

The pool also owns the provider limiters (agents/limiter), one per provider
and key: every model call of every agent on that key waits in the same one.
``limit=False`` turns them off (a benchmark's baseline).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx

from providers.base import Provider
from providers.catalog import Catalog, WireApi, default_catalog
from providers.h1 import StreamClient
from providers.registry import make_provider
from providers.settings import ProviderSettings, settings_for

from .limiter import LimiterConfig, Limiters, ProviderLimiter, key_id

SettingsFactory = Callable[[str], ProviderSettings]


class ProviderPool:
    def __init__(
        self,
        *,
        catalog: Catalog | None = None,
        settings: SettingsFactory | None = None,
        max_connections: int = 1000,
        limits: Mapping[str, LimiterConfig] | None = None,
        limit: bool = True,
    ) -> None:
        self.catalog = catalog or default_catalog()
        self._settings = settings or (lambda name: settings_for(name, catalog=self.catalog))
        self._providers: dict[tuple[str, str], Provider] = {}
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._streamers: dict[str, StreamClient] = {}
        self._limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self.limiters = Limiters(limits)
        self.limit = limit
        self._keys: dict[str, str] = {}  # provider -> key id of its current key
        # provider -> reported / estimated input tokens of its last call, any
        # agent's: the limiter's estimate for an agent whose own meter has not
        # heard from that provider yet (a fan-out's first calls)
        self.token_ratio: dict[str, float] = {}

    def limiter(self, provider: str) -> ProviderLimiter | None:
        """The limiter of ``provider``'s current key (None: limiting is off).
        A new key (a reload) gets its own: its limits are its own."""
        if not self.limit:
            return None
        key = self._keys.get(provider)
        if key is None:
            key = self._keys[provider] = key_id(self._settings(provider).api_key)
        return self.limiters.get(provider, key)

    def api_for(self, provider: str, model: str) -> WireApi:
        # a provider's `api` pin in config lives in the catalog (Catalog.pin_api)
        return self.catalog.wire_api(provider, model)

    def get(self, provider: str, model: str) -> Provider:
        api = self.api_for(provider, model)
        key = (provider, api)
        found = self._providers.get(key)
        if found is None:
            settings = self._settings(provider)
            client = self._clients.get(provider)
            streamer = self._streamers.get(provider)
            if client is None or streamer is None:
                ssl_context = httpx.create_ssl_context()
                client = self._clients[provider] = httpx.AsyncClient(
                    limits=self._limits, verify=ssl_context
                )
                streamer = self._streamers[provider] = StreamClient(ssl_context=ssl_context)
            found = self._providers[key] = make_provider(
                settings, api=api, client=client, streamer=streamer, catalog=self.catalog
            )
        return found

    def reset(
        self,
        settings: SettingsFactory | None = None,
        *,
        catalog: Catalog | None = None,
        limits: Mapping[str, LimiterConfig] | None = None,
    ) -> None:
        """New settings, catalog and limits (a config reload): providers are
        rebuilt on next use; a turn already streaming keeps the Provider it
        holds; the live limiters take the new limits and keep their waiters."""
        if settings is not None:
            self._settings = settings
        if catalog is not None:
            self.catalog = catalog
        if limits is not None:
            for name in {*self.limiters.configured(), *limits}:
                self.limiters.configure(name, limits.get(name))
        self._providers.clear()
        self._keys.clear()

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        for streamer in self._streamers.values():
            await streamer.aclose()
        self._clients.clear()
        self._streamers.clear()
        self._providers.clear()
