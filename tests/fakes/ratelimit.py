"""A real rate limit for the fake provider, per key, as the real APIs keep one.

``FakeProvider(limit=KeyLimit(requests_per_minute=R, input_tokens_per_minute=M))``:
two token buckets, each holding a minute's worth and refilled continuously
(Anthropic documents its limits as such buckets; OpenAI's behave alike). A
request that finds either bucket short gets the wire's 429 with
``retry-after`` (whole seconds, rounded up, as Anthropic sends it) and is not
counted; any other takes one request and its input tokens (the fake's count,
``window.fake_tokens``) and is answered. Every answer, 429s included, carries
the wire's real rate-limit headers:

- Anthropic: ``anthropic-ratelimit-{requests,input-tokens}-{limit,remaining,reset}``,
  the reset an RFC 3339 time (when the bucket would be full again);
- OpenAI Chat and Responses: ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``,
  the reset a Go duration (``1.5s``, ``2m3s``);
- Gemini sends none (its 429 body says when to come back).

Its clock is trio's, so it runs under the autojump clock; ``refused`` and
``admitted`` count what it did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import trio

from .recorded import RecordedRequest
from .script import HttpError
from .window import fake_tokens


@dataclass
class _Bucket:
    per_minute: float
    level: float = -1.0
    at: float = 0.0

    def refill(self, now: float) -> None:
        if self.level < 0:
            self.level, self.at = self.per_minute, now
        self.level = min(self.per_minute, self.level + (now - self.at) * self.per_minute / 60.0)
        self.at = now

    def short_by(self, amount: float) -> float:
        """Seconds until ``amount`` fits (0: it does now)."""
        missing = amount - self.level
        return 0.0 if missing <= 0 else missing * 60.0 / self.per_minute

    def full_in(self) -> float:
        return (self.per_minute - self.level) * 60.0 / self.per_minute


@dataclass
class KeyLimit:
    requests_per_minute: float
    input_tokens_per_minute: float
    refused: int = 0
    admitted: int = 0
    _requests: _Bucket = field(init=False)
    _tokens: _Bucket = field(init=False)

    def __post_init__(self) -> None:
        self._requests = _Bucket(self.requests_per_minute)
        self._tokens = _Bucket(self.input_tokens_per_minute)

    def admit(self, request: RecordedRequest, wire: str) -> tuple[HttpError | None, dict[str, str]]:
        """(the 429 to answer, or None to answer as scripted; the headers)."""
        now = trio.current_time()
        if request.tokens is None:  # reported as the answer's input usage, as a real API would
            request.tokens = fake_tokens(request)
        tokens = request.tokens
        self._requests.refill(now)
        self._tokens.refill(now)
        wait = max(self._requests.short_by(1), self._tokens.short_by(tokens))
        if wait > 0:
            self.refused += 1
            headers = {"retry-after": str(max(1, math.ceil(wait))), **self._headers(wire)}
            return HttpError(429, "rate limit exceeded", code=_code(wire), headers=headers), {}
        self.admitted += 1
        self._requests.level -= 1
        self._tokens.level -= tokens
        return None, self._headers(wire)

    def _headers(self, wire: str) -> dict[str, str]:
        r, t = self._requests, self._tokens
        if wire == "anthropic":
            wall = datetime.now(UTC)

            def at(seconds: float) -> str:
                return (wall + timedelta(seconds=math.ceil(seconds))).strftime("%Y-%m-%dT%H:%M:%SZ")

            return {
                "anthropic-ratelimit-requests-limit": str(int(r.per_minute)),
                "anthropic-ratelimit-requests-remaining": str(max(0, int(r.level))),
                "anthropic-ratelimit-requests-reset": at(r.full_in()),
                "anthropic-ratelimit-input-tokens-limit": str(int(t.per_minute)),
                "anthropic-ratelimit-input-tokens-remaining": str(max(0, int(t.level))),
                "anthropic-ratelimit-input-tokens-reset": at(t.full_in()),
            }
        if wire.startswith("openai"):
            return {
                "x-ratelimit-limit-requests": str(int(r.per_minute)),
                "x-ratelimit-remaining-requests": str(max(0, int(r.level))),
                "x-ratelimit-reset-requests": _go_duration(r.full_in()),
                "x-ratelimit-limit-tokens": str(int(t.per_minute)),
                "x-ratelimit-remaining-tokens": str(max(0, int(t.level))),
                "x-ratelimit-reset-tokens": _go_duration(t.full_in()),
            }
        return {}


def _code(wire: str) -> str | None:
    return {"anthropic": "rate_limit_error", "openai_chat": "rate_limit_exceeded"}.get(wire)


def _go_duration(seconds: float) -> str:
    minutes, rest = divmod(max(0.0, seconds), 60.0)
    return f"{int(minutes)}m{rest:.3g}s" if minutes else f"{rest:.3g}s"

