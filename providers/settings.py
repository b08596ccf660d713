"""How to reach one provider service: URL, key, headers, timeouts, dialect.

Keys come from the provider's usual environment variables first, then the
credentials mapping (credentials.json, loaded by the daemon). A missing key is
not an error until a request needs it; then the error names the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from .catalog import Catalog, ProviderEntry, WireApi, default_catalog
from .types import ProviderError, ProviderFailure


@dataclass(frozen=True, kw_only=True)
class ProviderSettings:
    name: str
    api: WireApi
    base_url: str
    # repr=False: settings get logged; the key must never be.
    api_key: str | None = field(default=None, repr=False)
    key_env: tuple[str, ...] = ()
    extra_headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    dialect: frozenset[str] = frozenset()
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    label: str = ""

    def require_key(self) -> str:
        """The API key, or ProviderFailure naming where to put one."""
        if self.api_key:
            return self.api_key
        if not self.key_env:
            return ""
        where = " or ".join(self.key_env)
        raise ProviderFailure(
            ProviderError(
                category="auth",
                message=(
                    f"no API key for {self.name}: set {where} "
                    f'or add "{self.name}" to credentials.json'
                ),
                provider=self.name,
            )
        )

    def with_api(self, api: WireApi) -> ProviderSettings:
        return replace(self, api=api)


def settings_for(
    provider: str,
    *,
    catalog: Catalog | None = None,
    env: Mapping[str, str] | None = None,
    credentials: Mapping[str, str] | None = None,
    base_url: str | None = None,
    api: WireApi | None = None,
    extra_headers: Mapping[str, str] | None = None,
    connect_timeout: float | None = None,
    read_timeout: float | None = None,
) -> ProviderSettings:
    """Settings of a catalog provider, with overrides from config."""
    catalog = catalog or default_catalog()
    entry: ProviderEntry | None = catalog.providers.get(provider)
    if entry is None:
        raise ValueError(
            f"unknown provider {provider!r} (providers: {', '.join(catalog.providers)})"
        )
    env = os.environ if env is None else env
    key = next((env[v] for v in entry.key_env if env.get(v)), None)
    if key is None and credentials:
        key = credentials.get(provider) or next(
            (credentials[v] for v in entry.key_env if credentials.get(v)), None
        )
    url = (
        base_url or (env.get(entry.base_url_env) if entry.base_url_env else None) or entry.base_url
    )
    return ProviderSettings(
        name=provider,
        api=api or entry.api,
        base_url=url.rstrip("/"),
        api_key=key,
        key_env=tuple(entry.key_env),
        extra_headers=dict(extra_headers or {}),
        dialect=frozenset(entry.dialect),
        connect_timeout=connect_timeout if connect_timeout is not None else 10.0,
        read_timeout=read_timeout if read_timeout is not None else 120.0,
        label=entry.label,
    )
