"""``providers.NAME.*`` of config.json: overrides of a catalog provider or a
custom provider on any wire API, checked beyond their types; the model
catalog the daemon runs with (build_catalog), the provider settings the pool
makes clients from (settings_factory) and the model text a request names
(model_text). ``providers.NAME.models.*`` (per-model limits) is checked in
context.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Annotated, Any, Protocol

import msgspec
from msgspec import UNSET, Meta, UnsetType

from agents.limiter import LimiterConfig
from daemon.config._messages import CHOICES, ConfigError, convert, type_words
from daemon.config.context import ModelLimitsConfig
from protocol.jsontext import json_kind
from providers.catalog import Catalog, WireApi, default_catalog
from providers.configured import configured_catalog
from providers.modelspec import ModelSpecError, parse_model_spec
from providers.openai import DIALECT_FLAGS
from providers.secrets import register_secret
from providers.settings import ProviderSettings, settings_for
from providers.types import THINKING_LEVELS

__all__ = [
    "HasProviders",
    "ProviderConfig",
    "build_catalog",
    "check_model",
    "check_providers",
    "limiter_configs",
    "model_text",
    "providers_one_by_one",
    "settings_factory",
]

Positive = Annotated[float, Meta(gt=0)]
PositiveInt = Annotated[int, Meta(ge=1)]
NonNegativeInt = Annotated[int, Meta(ge=0)]


class ProviderConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Settings of one provider: overrides of a catalog provider, or a custom
    service on any wire API (a name not in the catalog). ``api`` on a catalog
    provider pins every one of its models to that API."""

    base_url: str | None = None
    api: WireApi | None = None
    # UNSET: the catalog's variables; null or []: the service takes no key
    key_env: str | list[str] | UnsetType | None = UNSET
    default_model: str | None = None  # used when a model text names only this provider
    extra_headers: dict[str, str] = msgspec.field(default_factory=dict)
    connect_timeout: Positive | UnsetType = UNSET
    read_timeout: Positive | UnsetType = UNSET
    max_retries: NonNegativeInt | UnsetType = UNSET
    dialect: list[str] | UnsetType = UNSET
    models: dict[str, ModelLimitsConfig] = msgspec.field(default_factory=dict)
    # the provider limiter (agents/limiter) of each of its keys: calls in
    # flight (UNSET: the provider's default) and rates (UNSET: only what the
    # provider's own headers say)
    max_concurrent: PositiveInt | UnsetType = UNSET
    requests_per_minute: Positive | UnsetType = UNSET
    input_tokens_per_minute: Positive | UnsetType = UNSET
    output_tokens_per_minute: Positive | UnsetType = UNSET
    # US dollars its calls may cost per UTC day (agents/budget.py); UNSET: no limit
    daily_budget_usd: Positive | UnsetType = UNSET

    def limiter_config(self) -> LimiterConfig:
        """What this provider's limiters are told (checked by msgspec already)."""

        def given(value: Any) -> Any:
            return None if value is UNSET else value

        return LimiterConfig(
            max_concurrent=given(self.max_concurrent),
            requests_per_minute=given(self.requests_per_minute),
            input_tokens_per_minute=given(self.input_tokens_per_minute),
            output_tokens_per_minute=given(self.output_tokens_per_minute),
        )

    @property
    def key_env_list(self) -> list[str] | None:
        """The key variables as a list; None when not set (keep the catalog's)."""
        if self.key_env is UNSET:
            return None
        if self.key_env is None:
            return []
        return [self.key_env] if isinstance(self.key_env, str) else list(self.key_env)


class HasProviders(Protocol):
    """What of a Config this module reads (file.py's Config imports this
    module, so it is named by its shape here)."""

    @property
    def default_model(self) -> str: ...

    @property
    def providers(self) -> Mapping[str, ProviderConfig]: ...


def providers_one_by_one(data: dict[str, Any], where: str) -> dict[str, Any]:
    """``providers`` converted provider by provider and model by model, so a
    message can name them (msgspec writes "[...]" for a dict key)."""
    providers_raw = data.get("providers", {})
    if not isinstance(providers_raw, dict):
        return data
    providers: dict[str, ProviderConfig] = {}
    for name, value in providers_raw.items():
        prefix = f"providers.{name}"
        if isinstance(value, dict) and isinstance(value.get("extra_headers"), dict):
            for h, hv in value["extra_headers"].items():
                if not isinstance(hv, str):
                    got = type_words(json_kind(hv))
                    raise ConfigError(
                        f"{where}: {prefix}.extra_headers.{h}: Expected str, got {got}"
                    )
        if isinstance(value, dict) and isinstance(value.get("models"), dict):
            models = {
                m: convert(v, ModelLimitsConfig, where, f"{prefix}.models.{m}")
                for m, v in value["models"].items()
            }
            value = {**value, "models": models}
        providers[name] = convert(value, ProviderConfig, where, prefix)
    return {**data, "providers": providers}


def check_providers(providers: Mapping[str, ProviderConfig], catalog: Catalog, where: str) -> None:
    """What the types cannot say: names, base URLs, dialect flags, custom
    providers' needs and default models (``catalog``: build_catalog's)."""
    base = default_catalog()  # only read: which names are catalog providers
    for name, pc in providers.items():
        at = f"{where}: providers.{name}"
        if not name or "/" in name:
            raise ConfigError(f"{at}: a provider name must be non-empty and contain no '/'")
        if pc.base_url is not None and not pc.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{at}.base_url: must start with http:// or https://")
        try:
            pc.limiter_config()
        except ValueError as e:  # what msgspec lets through: an infinite rate
            raise ConfigError(f"{at}.{e}") from None
        if pc.dialect is not UNSET:
            unknown = sorted(set(pc.dialect) - DIALECT_FLAGS)
            if unknown:
                raise ConfigError(
                    f"{at}.dialect: unknown flag(s) {', '.join(unknown)} "
                    f"(known: {', '.join(sorted(DIALECT_FLAGS))})"
                )
        if name not in base.providers and (pc.base_url is None or pc.api is None):
            raise ConfigError(
                f"{at}: {name!r} is not a catalog provider, so it needs base_url and "
                f"api ({', '.join(CHOICES['api'])}) to be a custom one "
                f"(catalog providers: {', '.join(base.providers)})"
            )
    for name, pc in providers.items():
        if pc.default_model is not None:
            check_model(
                f"{name}/{pc.default_model}", catalog, f"{where}: providers.{name}.default_model"
            )


def limiter_configs(config: HasProviders) -> dict[str, LimiterConfig]:
    """provider name -> its limiters' config, for every provider config names
    (the others run with the defaults)."""
    return {name: pc.limiter_config() for name, pc in config.providers.items()}


def check_model(text: str, catalog: Catalog, at: str) -> None:
    """ConfigError at ``at`` when ``text`` names no model of ``catalog``."""
    try:
        parse_model_spec(text, catalog)
    except ModelSpecError as e:
        raise ConfigError(f"{at}: {e}") from None


def build_catalog(config: HasProviders) -> Catalog:
    """A fresh catalog (never the cached default one) with the config's
    provider overrides, custom providers, default models and model limits:
    the one builder ``ikictl models --offline`` uses too, given the same
    JSON shapes the file holds (UNSET keys are left out, as in the file)."""
    return configured_catalog(msgspec.to_builtins(dict(config.providers)))


def model_text(config: HasProviders, text: str | None = None) -> str:
    """The model text to resolve for a request: the config's ``default_model``
    when none is given; ``PROVIDER`` or ``PROVIDER/THINKING`` alone become
    ``PROVIDER/<that provider's default_model>[/THINKING]`` when the config
    sets one; anything else is returned as is (for ``resolve_model``)."""
    if text is None or not text.strip():
        return config.default_model
    text = text.strip()
    provider, _, rest = text.partition("/")
    pc = config.providers.get(provider)
    if pc is None or pc.default_model is None or "/" in rest:
        return text
    if not rest:
        return f"{provider}/{pc.default_model}"
    level = {"medium": "med", "off": "none"}.get(rest.lower(), rest.lower())
    if level in THINKING_LEVELS:
        return f"{provider}/{pc.default_model}/{level}"
    return text


def settings_factory(
    config: HasProviders,
    credentials: Mapping[str, str],
    env: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
) -> Callable[[str], ProviderSettings]:
    """provider name -> ProviderSettings, for agents.pool.ProviderPool.

    base_url, api, key_env and dialect come from ``catalog`` (which must be
    ``build_catalog(config)``; built here when None), extra headers and timeouts
    from the config. The key: the provider's environment variables first, then
    credentials.json by provider name, then by variable name. A provider's
    ``base_url_env`` variable (e.g. XAI_BASE_URL) wins over the config's base_url.
    Every key handed out is registered with the log redactor.
    """
    env = os.environ if env is None else env
    catalog = catalog if catalog is not None else build_catalog(config)
    creds = dict(credentials)

    def make(name: str) -> ProviderSettings:
        pc = config.providers.get(name) or ProviderConfig()
        settings = settings_for(
            name,
            catalog=catalog,
            env=env,
            credentials=creds,
            extra_headers=pc.extra_headers,
            connect_timeout=None if pc.connect_timeout is UNSET else pc.connect_timeout,
            read_timeout=None if pc.read_timeout is UNSET else pc.read_timeout,
            api=pc.api,
        )
        if pc.dialect is not UNSET:
            settings = replace(settings, dialect=frozenset(pc.dialect))
        register_secret(settings.api_key)
        return settings

    return make
