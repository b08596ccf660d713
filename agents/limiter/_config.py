"""What one limiter is told: its cap and its configured rates, checked once
here so a bad value is refused with the field's name before anything runs."""

from __future__ import annotations

import math
from dataclasses import dataclass

# Calls of one key in flight at once when config says nothing. The buckets
# (configured or learned from the provider's headers) are what really pace a
# key; the cap only stops a fan-out from opening every connection at once, so
# it is set a little above what the provider's lowest paid tier sustains:
# - anthropic: tier 1 is 50 requests/min (and 30k-50k input tokens/min); a
#   streamed turn lasts ~10-20 s, so 50/min is ~8-16 calls in flight; the
#   input-token bucket binds long before that.
# - openai: tier 1 is 500 requests/min (TPM binds first): 16.
# - google: the free tier is 5-15 requests/min per model: 4.
# - local servers serve a few sequences at once and queue the rest themselves:
#   ollama's OLLAMA_NUM_PARALLEL auto-selects 4 or 1 by memory, llama-server
#   starts 4 slots; vLLM batches, so more in flight is throughput for it.
# - any other (OpenAI-compatible cloud services): 8.
DEFAULT_MAX_CONCURRENT: dict[str, int] = {
    "anthropic": 8,
    "openai": 16,
    "google": 4,
    "ollama": 4,
    "llamacpp": 4,
    "vllm": 32,
}
FALLBACK_MAX_CONCURRENT = 8


def default_max_concurrent(provider: str) -> int:
    """The cap of ``provider``'s keys when config sets none (see above)."""
    return DEFAULT_MAX_CONCURRENT.get(provider, FALLBACK_MAX_CONCURRENT)


def _positive(name: str, value: float | None, *, integral: bool = False) -> None:
    if value is None:
        return
    # bool is an int: `true` from a JSON config is not a limit
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, not {type(value).__name__}")
    if integral and not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be above 0, not {value!r}")


@dataclass(frozen=True, slots=True)
class LimiterConfig:
    """One provider's limits from config; None is unlimited (rates) or the
    provider's default (``max_concurrent``)."""

    max_concurrent: int | None = None
    requests_per_minute: float | None = None
    input_tokens_per_minute: float | None = None
    output_tokens_per_minute: float | None = None

    def __post_init__(self) -> None:
        _positive("max_concurrent", self.max_concurrent, integral=True)
        _positive("requests_per_minute", self.requests_per_minute)
        _positive("input_tokens_per_minute", self.input_tokens_per_minute)
        _positive("output_tokens_per_minute", self.output_tokens_per_minute)
