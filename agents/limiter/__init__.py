"""The provider limiter: every model call of one provider key waits here for
its turn, so many agents sharing a key go at the pace the key allows instead
of all at once into a 429 (issue 29).

One ``ProviderLimiter`` per provider and key (``Limiters`` keeps them, keyed
by ``key_id``, never the secret). ``async with limiter.slot(tree=, agent=,
priority=, input_tokens=, max_output_tokens=) as slot`` waits until the call
may go and holds a slot; ``slot.done(input, output)`` corrects the token
buckets by the real usage. What holds a call back:

- the cap on calls in flight, ``max_concurrent``; by default per provider
  (``DEFAULT_MAX_CONCURRENT``: anthropic 8, openai 16, google 4, ollama and
  llamacpp 4, vllm 32, others 8; why in ``_config.py``: each a little above
  what the provider's lowest paid tier sustains, e.g. Anthropic's tier 1 is
  50 requests/min, ~8-16 streamed calls in flight);
- request and token buckets: configured (``requests_per_minute``,
  ``input_tokens_per_minute``, ``output_tokens_per_minute``; unlimited
  unless set) and learned (``learn(facts)``: each response's limit /
  remaining / reset per kind tightens them before the provider's wall). A
  call reserves its input estimate and its output cap (as Anthropic counts
  output tokens against the limit at a request's start) and is corrected
  when it ends;
- a pause (``pause(seconds, reason)``) after a 429 or 529: nobody starts
  into a known wall;
- the fair queue (``_queue.py``): interactive before background, round-robin
  across trees, oldest first within a tree.

A waiting call's position, expected wait and reason (concurrency, rate,
paused) go to its ``on_wait`` callback when they change; ``snapshot()`` is
the state ``ikictl top`` shows. A call cancelled while waiting leaves the
queue; one cancelled after being let in gives its slot and reservation back.
"""

from ._config import (
    DEFAULT_MAX_CONCURRENT,
    FALLBACK_MAX_CONCURRENT,
    LimiterConfig,
    default_max_concurrent,
)
from ._facts import RateFacts, RateFactsLike, RateWindow, RateWindowLike
from ._limiter import (
    MAX_PAUSE_S,
    BucketState,
    LimiterSnapshot,
    ProviderLimiter,
    Reason,
    Slot,
    WaitInfo,
)
from ._queue import PRIORITIES
from ._registry import Limiters, key_id

__all__ = [
    "DEFAULT_MAX_CONCURRENT",
    "FALLBACK_MAX_CONCURRENT",
    "MAX_PAUSE_S",
    "PRIORITIES",
    "BucketState",
    "LimiterConfig",
    "LimiterSnapshot",
    "Limiters",
    "ProviderLimiter",
    "RateFacts",
    "RateFactsLike",
    "RateWindow",
    "RateWindowLike",
    "Reason",
    "Slot",
    "WaitInfo",
    "default_max_concurrent",
    "key_id",
]
