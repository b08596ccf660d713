"""How many input tokens a request will take, before it is sent.

The estimate (providers/tokens.py, characters / 4) is calibrated per agent
and provider by what the provider reported for the previous call: the ratio
reported / estimated of that request scales the next estimate. So the size of
the next request is the previous call's reported input plus the calibrated
estimate of what was appended since, and the estimate converges to the real
tokenizer as the agent talks. Near the limit, a provider with a counting
endpoint (Anthropic, Gemini) gives the exact figure instead.

Each message is estimated once: the meter keeps the size of every message it
has seen (by identity, holding a reference so ids are never reused). The
replay a turn sends is kept too, converted and measured (``prefix``,
agents/_prefix.py): a call costs what was appended since the last one, not
one look-up per message of the history.
"""

from __future__ import annotations

from collections.abc import Sequence

from providers.tokens import estimate_message, estimate_system, estimate_tools
from providers.types import Message, Request

from ._prefix import ContextPrefix

_MIN_RATIO, _MAX_RATIO = 0.25, 4.0


class ContextMeter:
    def __init__(self) -> None:
        self._sizes: dict[int, tuple[Message, int]] = {}
        self._fixed: dict[tuple[int, int], tuple[object, object, int]] = {}
        self.ratio: dict[str, float] = {}  # provider -> reported / estimated
        self.last: dict[str, int] = {}  # provider -> input tokens of its last request
        self.exact_unavailable: set[str] = set()  # providers whose count failed
        # (provider, model) -> the window a context-length refusal revealed,
        # smaller than the catalog's: believed from then on
        self.windows: dict[tuple[str, str], int] = {}
        # the replay last sent, converted, cut and measured (for turns' requests)
        self.prefix = ContextPrefix()

    def prepared(self, context: list[Message], provider: str, max_tokens: int) -> list[Message]:
        """``context`` as sent to ``provider``, tool results cut to
        ``max_tokens``: only what was appended since the last call is walked."""
        return self.prefix.prepare(context, provider, max_tokens, self)

    def sizes(
        self, messages: Sequence[Message], *, within: Sequence[Message] | None = None
    ) -> list[int]:
        """The raw estimate of each message (cached). ``within``: the whole
        list ``messages`` are the new end of, whose sizes the cache keeps."""
        cache = self._sizes
        out: list[int] = []
        for msg in messages:
            hit = cache.get(id(msg))
            if hit is None or hit[0] is not msg:
                hit = cache[id(msg)] = (msg, estimate_message(msg))
            out.append(hit[1])
        whole = messages if within is None else within
        if len(cache) > 2 * len(whole) + 256:
            # messages of replaced contexts (a reload, a compaction): keep the current ones only
            # (amortized: it takes len(whole) + 256 new ones to come back here)
            self._sizes = {id(m): hit for m in whole if (hit := cache.get(id(m))) is not None}
        return out

    def fixed(self, request: Request) -> int:
        """The raw estimate of the system prompt and tool definitions."""
        key = (id(request.system), id(request.tools))
        hit = self._fixed.get(key)
        if hit is None or hit[0] is not request.system or hit[1] is not request.tools:
            size = estimate_system(request.system) + estimate_tools(request.tools)
            if len(self._fixed) > 8:
                self._fixed.clear()
            hit = self._fixed[key] = (request.system, request.tools, size)
        return hit[2]

    def raw(self, request: Request) -> int:
        total = self.prefix.total_of(request.messages)
        if total is None:
            total = sum(self.sizes(request.messages))
        return self.fixed(request) + total

    def scale(self, provider: str, raw: int) -> int:
        """A raw estimate in the provider's tokens, as far as it has told us."""
        return int(raw * self.ratio.get(provider, 1.0)) + 1

    def learn(self, provider: str, raw: int, reported: int) -> None:
        """The provider reported (or counted) ``reported`` tokens for a
        request estimated at ``raw``."""
        if raw <= 0 or reported <= 0:
            return
        self.ratio[provider] = min(_MAX_RATIO, max(_MIN_RATIO, reported / raw))
        self.last[provider] = reported

    def at_least(self, provider: str, raw: int, tokens: int) -> None:
        """The provider refused a request estimated at ``raw`` as longer than
        ``tokens``: the estimate was too low. Scale up so it is at least that."""
        if raw > 0 and self.ratio.get(provider, 1.0) * raw < tokens:
            self.ratio[provider] = min(_MAX_RATIO, tokens / raw * 1.1)
