"""When to retry a failed provider call, and after how long.

rate_limit and overloaded: exponential backoff with jitter, honoring the
provider's retry-after; timeout, network and server: a bounded number of
times; everything else (auth, billing, invalid_request, context_length,
content_filter, not_found, unknown): never.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from providers.types import ProviderError

_PATIENT = frozenset({"rate_limit", "overloaded"})
_TRANSIENT = frozenset({"timeout", "network", "server"})


@dataclass
class RetryPolicy:
    max_attempts_patient: int = 6  # attempts in all for rate_limit / overloaded
    max_attempts_transient: int = 3  # for timeout / network / server
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 300.0  # a longer wait than this is not worth holding a turn for
    jitter: float = 0.25  # +- fraction of the backoff
    rng: random.Random = field(default_factory=random.Random)
    # provider -> retries after a transient failure (config providers.NAME.max_retries)
    transient_retries: dict[str, int] = field(default_factory=dict)

    def delay(self, error: ProviderError, attempt: int) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None to give up.

        ``attempt`` is the number of the attempt that just failed (from 1).
        """
        if error.category in _PATIENT:
            limit = self.max_attempts_patient
        elif error.category in _TRANSIENT:
            limit = self.max_attempts_transient
            if error.provider in self.transient_retries:
                limit = self.transient_retries[error.provider] + 1
        else:
            return None
        if attempt >= limit:
            return None
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        backoff *= 1 + self.rng.uniform(-self.jitter, self.jitter)
        if error.retry_after is not None:
            if error.retry_after > self.max_retry_after:
                return None
            return max(error.retry_after, backoff if error.category not in _PATIENT else 0.0)
        return backoff
