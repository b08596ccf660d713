"""Every limiter of the daemon, one per provider and key.

Keyed by (provider, key id), never by the secret: a registry is printed by
``ikictl top`` and may be logged. ``key_id`` turns a secret into a short
hash; the name of the variable the key came from does as well.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from ._config import LimiterConfig, default_max_concurrent
from ._limiter import LimiterSnapshot, ProviderLimiter


def key_id(secret: str | None) -> str:
    """A short stable name for an API key: 12 hex digits of its SHA-256 (48
    bits: no two keys of one daemon collide, and nothing of the key is
    learned from it). "" for no key (a local server)."""
    if not secret:
        return ""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()[:12]


def shared(config: LimiterConfig, provider: str, daemons: int) -> LimiterConfig:
    """This daemon's share of a key's limits when ``daemons`` daemons use the
    key (several on one database: docs/cluster.md). Each gets 1/N of every
    configured rate and of the cap, so together they never pass the key's
    limit; what the provider's headers say is learned by each as it is."""
    if daemons <= 1:
        return config
    cap = config.max_concurrent or default_max_concurrent(provider)

    def part(rate: float | None) -> float | None:
        return None if rate is None else rate / daemons

    return LimiterConfig(
        max_concurrent=max(1, cap // daemons),
        requests_per_minute=part(config.requests_per_minute),
        input_tokens_per_minute=part(config.input_tokens_per_minute),
        output_tokens_per_minute=part(config.output_tokens_per_minute),
    )


class Limiters:
    def __init__(self, configs: Mapping[str, LimiterConfig] | None = None):
        self._configs: dict[str, LimiterConfig] = dict(configs or {})
        self._limiters: dict[tuple[str, str], ProviderLimiter] = {}
        self.daemons = 1  # daemons sharing the keys (set by daemon/cluster each heartbeat)

    def _config(self, provider: str) -> LimiterConfig:
        return shared(self._configs.get(provider) or LimiterConfig(), provider, self.daemons)

    def set_daemons(self, daemons: int) -> None:
        """How many daemons now share every key: each live limiter takes its share."""
        daemons = max(1, daemons)
        if daemons == self.daemons:
            return
        self.daemons = daemons
        for (name, _), limiter in self._limiters.items():
            limiter.configure(self._config(name))

    def get(self, provider: str, key: str = "") -> ProviderLimiter:
        """The limiter of ``provider`` with the key named ``key`` (a
        ``key_id`` or a variable name), made on first use."""
        limiter = self._limiters.get((provider, key))
        if limiter is None:
            config = self._config(provider)
            limiter = self._limiters[provider, key] = ProviderLimiter(provider, key, config)
        return limiter

    def configure(self, provider: str, config: LimiterConfig | None) -> None:
        """New limits for ``provider`` (config reload), applied to its live
        limiters too; None goes back to the defaults."""
        if config is None:
            self._configs.pop(provider, None)
        else:
            self._configs[provider] = config
        for (name, _), limiter in self._limiters.items():
            if name == provider:
                limiter.configure(self._config(name))

    def configured(self) -> list[str]:
        """The providers whose limits config sets."""
        return list(self._configs)

    def snapshot(self) -> list[LimiterSnapshot]:
        return [self._limiters[k].snapshot() for k in sorted(self._limiters)]
