"""Log-line scrub: what finding pieces of keys cut from anywhere (issue 28)
costs a log line, beside the scrub that found only whole keys and their
prefixes, side by side in the same run.

    .venv/bin/python tests/bench/bench_scrub.py [--lines 1000] [--reps 21] [--json PATH]

  ours        providers.redact.redact(line), as the log's processor runs it on
              every line, with providers.secrets.scrub: registered keys, their
              prefixes of 8+ characters and their pieces of 12+ characters cut
              from anywhere
  comparison  the same redact with BEFORE_scrub (below): a copy of the scrub
              of commit 88c1282, whole keys and prefixes of 8+ only
Lines: the structlog event dicts of turns ("turn started" / "turn ended":
timestamp, level, logger, agent and turn ids, provider, model, usage
numbers), and error lines (a provider's rate-limit error text, a tool
failure's traceback). Three keys shaped like Anthropic's, OpenAI's and
Google's are registered with both; no line holds any of them, the common
case. Each repetition redacts every line once, the log's cache of short texts
emptied first (so it fills as in a daemon: ids and names recur, timestamps
and errors do not). The "scrub() alone" rows call each scrub on every string
of every line, no cache: all that differs between the two sides.
Figures: CPU time of this thread (the machine is shared), per line, medians
of equal, interleaved repetitions (tests/bench/_measure.py).
Not a test: nothing is asserted (it checks that both sides give the same lines).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeAlias

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import providers.redact as log_redact  # noqa: E402
import providers.secrets as secrets  # noqa: E402
from providers.secrets import REDACTED  # noqa: E402
from tests.bench._measure import interleaved, median  # noqa: E402

# ------------------------------------------------------------------ BEFORE: today's scrub, kept to compare
#
# A copy of providers/secrets.py's scrub as of commit 88c1282 (whole keys and
# prefixes of 8+ characters; no pieces from the middle), with a registry of its
# own: the same code, its comments left out, its names prefixed BEFORE_ / _Before.

BEFORE_REDACTED = "[REDACTED]"
BEFORE_MIN_SECRET = 8
_BEFORE_DEPTH = 64


class _BeforeSecrets:
    """An immutable set of secrets and the matchers built from it."""

    __slots__ = ("_children", "_depth", "_fail", "_heads", "_node", "_pattern", "values")

    def __init__(self, values: frozenset[str]) -> None:
        self.values = values
        self._heads = tuple(sorted({v[:BEFORE_MIN_SECRET] for v in values}))
        self._children: list[dict[str, int]] = [{}]
        self._depth = [0]
        self._node: dict[str, int] = {}
        for value in values:
            node = 0
            for i, ch in enumerate(value):
                nxt = self._children[node].get(ch)
                if nxt is None:
                    nxt = self._children[node][ch] = len(self._children)
                    self._children.append({})
                    self._depth.append(i + 1)
                    if i < _BEFORE_DEPTH:
                        self._node[value[: i + 1]] = nxt
                node = nxt
        self._fail = _before_failure_links(self._children)
        self._pattern = (
            re.compile(f"(?=({_before_trie_regex(values)}))", re.DOTALL) if values else None
        )

    def scrub(self, text: str) -> str:
        if self._pattern is None:
            return text
        found = [i for i in map(text.find, self._heads) if i >= 0]
        if not found:
            return text
        children, fail, depth = self._children, self._fail, self._depth
        search = self._pattern.search
        n = len(text)
        out: list[str] = []
        last = 0
        span_start = span_end = -1
        pos = min(found)
        while pos < n:
            m = search(text, pos)
            if m is None:
                break
            prefix = m.group(1)
            start, end, node = m.start(), m.start() + len(prefix), self._node[prefix]
            if start < span_end:
                span_end = max(span_end, end)
            else:
                if span_end >= 0:
                    out.append(text[last:span_start])
                    out.append(BEFORE_REDACTED)
                    last = span_end
                span_start, span_end = start, end
            while end < n:
                ch = text[end]
                while node and ch not in children[node]:
                    node = fail[node]
                node = children[node].get(ch, 0)
                end += 1
                d = depth[node]
                if d < BEFORE_MIN_SECRET:
                    break
                if end - d < span_end:
                    span_end = end
                else:
                    out.append(text[last:span_start])
                    out.append(BEFORE_REDACTED)
                    last = span_end
                    span_start, span_end = end - d, end
            else:
                break
            pos = end - depth[node]
        if span_end >= 0:
            out.append(text[last:span_start])
            out.append(BEFORE_REDACTED)
            last = span_end
        out.append(text[last:])
        return "".join(out)


def _before_failure_links(children: list[dict[str, int]]) -> list[int]:
    fail = [0] * len(children)
    queue = deque(children[0].values())
    while queue:
        node = queue.popleft()
        for ch, child in children[node].items():
            f = fail[node]
            while f and ch not in children[f]:
                f = fail[f]
            fail[child] = children[f].get(ch, 0) if node else 0
            queue.append(child)
    return fail


_BeforeTrie: TypeAlias = dict[str, "_BeforeTrie"]


def _before_trie_regex(values: Iterable[str]) -> str:
    trie: _BeforeTrie = {}
    for value in values:
        node = trie
        for ch in value[:_BEFORE_DEPTH]:
            node = node.setdefault(ch, {})

    def build(node: _BeforeTrie, depth: int) -> str:
        if not node:
            return ""
        branches = [re.escape(ch) + build(child, depth + 1) for ch, child in sorted(node.items())]
        alt = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{alt})?" if depth >= BEFORE_MIN_SECRET else alt

    return build(trie, 0)


_BEFORE_EMPTY = _BeforeSecrets(frozenset())
_before_current = _BEFORE_EMPTY
_before_lock = threading.Lock()


@lru_cache(maxsize=64)
def _before_with(values: frozenset[str]) -> _BeforeSecrets:
    return _BeforeSecrets(values)


def _before_clean(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value if len(value) >= BEFORE_MIN_SECRET else None


def BEFORE_register_secret(value: str | None) -> None:
    global _before_current
    value = _before_clean(value)
    if value is None:
        return
    with _before_lock:
        current = _before_current
        if value not in current.values:
            _before_current = _before_with(current.values | {value})


def BEFORE_scrub(text: str, *also: str | None) -> str:
    secrets_ = _before_current
    extra = {v for v in map(_before_clean, also) if v is not None}
    if extra - secrets_.values:
        secrets_ = _before_with(secrets_.values | extra)
    return secrets_.scrub(text)


# ------------------------------------------------------------------ the lines

KEY_CHARS = string.ascii_letters + string.digits + "-_"
MODELS = [
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-4o-mini"),
    ("google", "gemini-2.5-flash"),
]
RATE_LIMIT = (
    "This request would exceed the rate limit for your organization ({org}) of 50,000 "
    "input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. "
    "You can see the response headers for current usage. Please reduce the prompt length or the "
    "maximum tokens requested, or try again later. request_id={req}"
)
TRACEBACK = """Traceback (most recent call last):
  File "/srv/ikigai/agents/tools/_registry.py", line 188, in run
    out = await spec.handler(args, ctx)
          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/srv/ikigai/agents/tools/_files.py", line 142, in read_file
    data = await trio.Path(path).read_bytes()
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/srv/ikigai/.venv/lib/python3.11/site-packages/trio/_path.py", line 42, in wrapper
    return await run_sync(partial(fn, *args, **kwargs))
FileNotFoundError: [Errno 2] No such file or directory: '{path}'"""


def keys(rng: random.Random) -> list[str]:
    """Keys shaped like Anthropic's, OpenAI's and Google's."""
    pick = lambda n: "".join(rng.choice(KEY_CHARS) for _ in range(n))  # noqa: E731
    return [f"sk-ant-api03-{pick(93)}AA", f"sk-proj-{pick(156)}", f"AIzaSy{pick(33)}"]


def turn_lines(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """The lines of turns: started, ended with its usage, now and then a retry."""
    # the store's ids are uuid7s: the same shape (36 characters, hex and hyphens)
    agents = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(20)]
    clock = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    lines: list[dict[str, Any]] = []
    while len(lines) < n:
        agent = rng.choice(agents)
        turn = f"{agent[-8:]}-{rng.getrandbits(32):08x}"
        provider, model = rng.choice(MODELS)

        def head(event: str, agent: str = agent, turn: str = turn) -> dict[str, Any]:
            nonlocal clock
            clock += timedelta(microseconds=rng.randrange(1, 2_000_000))
            return {
                "event": event,
                "level": "info",
                "logger": "agents.turn",
                "timestamp": clock.isoformat().replace("+00:00", "Z"),
                "agent": agent,
                "turn": turn,
            }

        lines.append(
            {**head("turn started"), "provider": provider, "model": model, "thinking": "medium"}
        )
        lines.append(
            {
                **head("turn ended"),
                "status": "completed",
                "model_calls": rng.randrange(1, 6),
                "duration_s": round(rng.uniform(0.5, 40), 3),
                "input_tokens": rng.randrange(500, 90_000),
                "output_tokens": rng.randrange(10, 4_000),
                "thinking_tokens": rng.randrange(0, 2_000),
                "cached_tokens": rng.randrange(0, 60_000),
            }
        )
    return lines[:n]


def error_lines(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Lines with an error text: a provider's rate-limit refusal, a tool's traceback."""
    lines: list[dict[str, Any]] = []
    for i, line in enumerate(turn_lines(rng, n)):
        base = {k: line[k] for k in ("level", "logger", "timestamp", "agent", "turn")}
        if i % 2:
            org = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            req = f"req_011CV{rng.getrandbits(80):020x}"
            lines.append(
                {
                    **base,
                    "event": "retrying model call",
                    "level": "warning",
                    "attempt": 2,
                    "category": "rate_limit",
                    "http_status": 429,
                    "wait_s": 4.0,
                    "model": "claude-sonnet-4-5",
                    "error": "anthropic 429 rate_limit_error: "
                    + RATE_LIMIT.format(org=org, req=req),
                }
            )
        else:
            path = f"/home/dev/project/src/module_{rng.getrandbits(24):06x}.py"
            lines.append(
                {
                    **base,
                    "event": "tool.failed",
                    "level": "warning",
                    "logger": "agents.tools._registry",
                    "tool": "read_file",
                    "error": f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'",
                    "exception": TRACEBACK.format(path=path),
                }
            )
    return lines


def strings_of(lines: list[dict[str, Any]]) -> list[str]:
    return [s for line in lines for kv in line.items() for s in kv if isinstance(s, str)]


# ------------------------------------------------------------------ measuring

SCRUBS: dict[str, Callable[..., str]] = {"ours": secrets.scrub, "before": BEFORE_scrub}


def _BEFORE_keep_name(m: re.Match[str]) -> str:
    if m.group("value") == REDACTED or m.group("value").startswith("[REDACTED"):
        return m.group(0)
    return f"{m.group('name')}{m.group('sep')}{REDACTED}"


def BEFORE_scrub_now(text: str) -> str:
    """The redaction chain of one text before: the old scrub, then each
    pattern replacing in turn (the same patterns as ours)."""
    r = log_redact
    text = BEFORE_scrub(text)
    text = r._JWT.sub(lambda m: f"{m.group('pre')}{REDACTED}", text)
    text = r._KEY_SHAPES.sub(REDACTED, text)
    text = r._AUTH_SCHEME.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = r._URL_PASSWORD.sub(lambda m: f"{m.group('pre')}{REDACTED}", text)
    text = r._NAMED_PASSWORD.sub(_BEFORE_keep_name, text)
    return r._NAMED_TOKEN.sub(_BEFORE_keep_name, text)


CHAINS: dict[str, Callable[[str], str]] = {
    "ours": log_redact._scrub_now,
    "before": BEFORE_scrub_now,
}


def redact_all(chain: Callable[[str], str], lines: list[dict[str, Any]]) -> float:
    """µs per line to redact every line once, the log's cache emptied first."""
    log_redact._scrub_now = chain
    log_redact._reset_cache()
    redact = log_redact.redact
    t0 = time.thread_time()
    for line in lines:
        redact(line)
    return (time.thread_time() - t0) / len(lines) * 1e6


def scrub_all(scrub: Callable[..., str], lines: list[dict[str, Any]], texts: list[str]) -> float:
    """µs per line to scrub() every string of every line (no cache)."""
    t0 = time.thread_time()
    for text in texts:
        scrub(text)
    return (time.thread_time() - t0) / len(lines) * 1e6


def same_output(lines: list[dict[str, Any]]) -> None:
    """Both sides redact these lines alike (no key is in them): the same work is timed."""
    outs = []
    for chain in CHAINS.values():
        log_redact._scrub_now = chain
        log_redact._reset_cache()
        outs.append([log_redact.redact(line) for line in lines])
    if outs[0] != outs[1]:
        raise RuntimeError("ours and before redact the bench's lines differently")


UNIT = "µs CPU per line (comparison: the scrub before, whole keys and prefixes only)"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lines", type=int, default=1000, help="lines of each kind")
    ap.add_argument("--reps", type=int, default=21, help="repetitions per contender, interleaved")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rng = random.Random(28)
    for key in keys(rng):
        secrets.register_secret(key)
        BEFORE_register_secret(key)
    kinds = {"turn lines": turn_lines(rng, args.lines), "error lines": error_lines(rng, args.lines)}
    original = log_redact._scrub_now
    rows: list[dict[str, Any]] = []
    try:
        for kind, lines in kinds.items():
            same_output(lines)
            got = interleaved(
                args.reps, {n: (lambda s=s, ls=lines: redact_all(s, ls)) for n, s in CHAINS.items()}
            )
            rows.append(_row(f"log-line scrub, {kind}", got, args))
        for kind, lines in kinds.items():
            texts = strings_of(lines)
            got = interleaved(
                args.reps,
                {
                    n: (lambda s=s, ls=lines, ts=texts: scrub_all(s, ls, ts))
                    for n, s in SCRUBS.items()
                },
            )
            rows.append(_row(f"scrub() alone, {kind}", got, args))
    finally:
        log_redact._scrub_now = original
        log_redact._reset_cache()
    print(f"{'benchmark':<32} {'ours':>8} {'before':>8} {'ratio':>7}")
    for r in rows:
        print(f"{r['name']:<32} {r['ours']:>8.2f} {r['comparison']:>8.2f} {r['ratio']:>6.2f}x")
    print(f"{UNIT}; medians of {args.reps} interleaved repetitions of {args.lines} lines")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


def _row(name: str, got: dict[str, list[float]], args: argparse.Namespace) -> dict[str, Any]:
    ours, before = median(got["ours"]), median(got["before"])
    return {
        "name": name,
        "unit": UNIT,
        "ours": ours,
        "comparison": before,
        "ratio": ours / before,
        "lines": args.lines,
        "repetitions": args.reps,
    }


if __name__ == "__main__":
    sys.exit(main())
