"""docs/benchmarks.md and the README's benchmark section, from one results file.

    .venv/bin/python tests/bench/report.py [bench-results.json]

Both are generated from the same ``bench-results.json`` (written by
tests/bench/run_all.py), so they cannot disagree: docs/benchmarks.md is
written entirely; in README.md only the text between ``<!-- bench:start -->``
and ``<!-- bench:end -->`` is replaced. tests/bench/test_report.py checks that
the committed files are what this script makes of the committed results.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
Results = dict[str, Any]
Row = dict[str, Any]


# ------------------------------------------------------------------ goals (issues 18, 28 and 29)


@dataclass(frozen=True)
class Goal:
    text: str
    row: str  # the row name in bench-results.json
    field: str  # "ratio" or "ours"
    test: Callable[[float], bool]
    bound: str  # the goal's bound as shown
    # another row: the goal is on this row's figure over that row's
    versus: str | None = None

    def check(self, row: Row | None, rows: dict[str, Row] | None = None) -> tuple[str, str]:
        """(figure, status) where status is met, not met or not measured."""
        if row is None or row.get(self.field) is None:
            return "-", "not measured"
        value = float(row[self.field])
        if self.versus is not None:
            other = (rows or {}).get(self.versus)
            if other is None or not other.get(self.field):
                return "-", "not measured"
            base = float(other[self.field])
            value, figure = value / base, f"{fmt(value)} vs {fmt(base)}: {value / base:.2f}x"
        elif self.field == "ratio":
            figure = f"{fmt(row['ours'])} vs {fmt(row['comparison'])}: {value:.2f}x"
        elif row.get("comparison") is not None:
            figure = f"{fmt(value)} (floor {fmt(row['comparison'])})"
        else:
            figure = fmt(value)
        ok = not math.isnan(value) and self.test(value)
        return figure, "met" if ok else "**not met**"


E2E_100 = "100 agents x 50/s"
E2E_1000 = "1,000 agents x 10/s"
TURN_AGENTS = "500"
TRACES_100 = "100 agents"
GOALS = [
    Goal(
        f"daemon CPU per delivered event within 1.5x of the lean relay floor, {E2E_100}",
        f"e2e: daemon CPU per event, {E2E_100}",
        "ratio",
        lambda x: x <= 1.5,
        "<= 1.5x",
    ),
    Goal(
        # issue 18 asked 2x; issue 30 asks 1.5x
        f"added latency p99 within 1.5x of the lean relay's, {E2E_100}",
        f"e2e: added latency p99, {E2E_100}",
        "ratio",
        lambda x: x <= 1.5,
        "<= 1.5x",
    ),
    Goal(
        f"added latency p99 under 100 ms, {E2E_1000}",
        f"e2e: added latency p99, {E2E_1000}",
        "ours",
        lambda x: x < 100,
        "< 100 ms",
    ),
    Goal(
        f"a 2 s stream delivered in under 2.5 s, {E2E_1000}",
        f"e2e: delivery of a 2 s stream, {E2E_1000}",
        "ours",
        lambda x: x < 2.5,
        "< 2.5 s",
    ),
    Goal(
        f"no event lost, {E2E_1000}",
        f"e2e: lost events, {E2E_1000}",
        "ours",
        lambda x: x == 0,
        "0",
    ),
    Goal(
        "OpenAI Chat stream path within 1.3x of the httpx + msgspec floor (CPU, chunked)",
        "openai chat: stream path CPU per event, chunked",
        "ratio",
        lambda x: x <= 1.3,
        "<= 1.3x",
    ),
    Goal(
        "OpenAI Responses stream path within 1.3x of the httpx + msgspec floor (CPU, chunked)",
        "openai responses: stream path CPU per event, chunked",
        "ratio",
        lambda x: x <= 1.3,
        "<= 1.3x",
    ),
    Goal(
        "ikictl starts within 3x of python -c pass (ls, no daemon)",
        "ikictl: ikictl ls --no-autostart (no daemon, exit 3), median",
        "ratio",
        lambda x: x <= 3.0,
        "<= 3x",
    ),
    Goal(
        "50 agents on one limited key finish within 1.3x of the fewest seconds the limit allows",
        "limiter: 50 agents, limiter on: time to the last turn's end vs the fewest the limit allows",
        "ratio",
        lambda x: x <= 1.3,
        "<= 1.3x",
    ),
    Goal(
        "50 agents on one limited key see at most a handful (5) of 429s",
        "limiter: 50 agents, 429s",
        "ours",
        lambda x: x <= 5,
        "<= 5",
    ),
    Goal(
        f"the limiter costs within 5% of daemon CPU per delivered event, {E2E_100}",
        f"e2e: daemon CPU per event, limiter on vs off, {E2E_100}",
        "ratio",
        lambda x: x <= 1.05,
        "<= 1.05x",
    ),
    *[
        Goal(
            f"a log line scrubbed of key pieces no slower than the old scrubber, {kind}",
            f"scrub: log-line scrub, {kind}",
            "ratio",
            lambda x: x <= 1.05,
            "<= 1.05x",
        )
        for kind in ("turn lines", "error lines")
    ],
    # issue 30, the lean turn (the e2e rows: the median of three runs)
    Goal(
        f"added latency p50 within 2x of the floor's, {E2E_1000}",
        f"e2e: added latency p50, {E2E_1000}",
        "ratio",
        lambda x: x <= 2.0,
        "<= 2x",
    ),
    Goal(
        f"daemon CPU per delivered event within 1.5x of the floor, {E2E_1000}",
        f"e2e: daemon CPU per event, {E2E_1000}",
        "ratio",
        lambda x: x <= 1.5,
        "<= 1.5x",
    ),
    Goal(
        "daemon CPU per delivered event within 5x of the floor, bulk bodies, 1,000 agents",
        "e2e: daemon CPU per event, bulk bodies, 1,000 agents",
        "ratio",
        lambda x: x <= 5.0,
        "<= 5x",
    ),
    Goal(
        "daemon CPU per turn (1-delta reply) within 4x of the lean relay's per request",
        f"e2e: daemon CPU per turn, 1-delta reply, {TURN_AGENTS} agents at once",
        "ratio",
        lambda x: x <= 4.0,
        "<= 4x",
    ),
    Goal(
        "1,000 forks with their first prompts acknowledged in 2 s or less",
        "fanout: 1,000 forks with their first prompts, acknowledged",
        "ours",
        lambda x: x <= 2.0,
        "<= 2 s",
    ),
    Goal(
        "agent.list at 10,000 agents in 100 ms or less",
        "fanout: agent.list at 10,000 agents",
        "ours",
        lambda x: x <= 100,
        "<= 100 ms",
    ),
    Goal(
        "RSS per idle agent 4 KiB or less (10,000 agents)",
        "e2e: RSS per idle agent (10,000)",
        "ours",
        lambda x: x <= 4.0,
        "<= 4 KiB",
    ),
    Goal(
        "RSS per streaming agent 24 KiB or less (1,000 agents)",
        "e2e: RSS per streaming agent (1,000)",
        "ours",
        lambda x: x <= 24.0,
        "<= 24 KiB",
    ),
    Goal(
        "the size check per call at 1,100 messages within 5% of a loopback model call",
        "compaction: size check per call, 100k context",
        "ratio",
        lambda x: x <= 0.05,
        "<= 0.05x",
    ),
    Goal(
        "a call's replay at 10,000 messages costs what it costs at 100 (within 1.5x)",
        "compaction: replay per call (convert, cut, measure), 10,000 messages",
        "ours",
        lambda x: x <= 1.5,
        "<= 1.5x",
        versus="compaction: replay per call (convert, cut, measure), 100 messages",
    ),
    # issue 34, traces: the daemon beside itself with opentelemetry not installed
    Goal(
        f"tracing off costs within 2% of daemon CPU per delivered event, {TRACES_100}",
        f"traces: CPU per event, {TRACES_100}, tracing off",
        "ratio",
        lambda x: x <= 1.02,
        "<= 1.02x",
    ),
    Goal(
        f"tracing on (OTLP/HTTP export) within 15% of daemon CPU per delivered event, {TRACES_100}",
        f"traces: CPU per event, {TRACES_100}, tracing on",
        "ratio",
        lambda x: x <= 1.15,
        "<= 1.15x",
    ),
]

# the README's table: these rows, in this order (a missing one shows as not measured)
HEADLINE = [
    f"e2e: daemon CPU per event, {E2E_100}",
    f"e2e: daemon CPU per event, {E2E_1000}",
    "e2e: added latency p50, 1 agent x 100/s",
    "e2e: added latency p99, 1 agent x 100/s",
    f"e2e: added latency p50, {E2E_100}",
    f"e2e: added latency p99, {E2E_100}",
    f"e2e: added latency p50, {E2E_1000}",
    f"e2e: added latency p99, {E2E_1000}",
    f"e2e: delivery of a 2 s stream, {E2E_1000}",
    f"e2e: lost events, {E2E_1000}",
    f"traces: CPU per event, {TRACES_100}, tracing off",
    f"traces: CPU per event, {TRACES_100}, tracing on",
    *[
        f"{api}: {what}"
        for api in ("openai chat", "openai responses", "anthropic", "google")
        for what in ("stream path CPU per event, chunked", "stream vs official SDK, chunked")
    ],
]


# ------------------------------------------------------------------ formatting


def fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:,.1f}"
    return f"{x:.3g}"


def _ratio(r: Row) -> str:
    return "-" if r.get("ratio") is None else f"{r['ratio']:.2f}x"


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def _table(rows: list[Row], missing: list[str] | None = None) -> list[str]:
    out = ["| benchmark | unit | ours | comparison | ratio |", "|---|---|---:|---:|---:|"]
    for r in rows:
        cells = [r["name"], r["unit"], fmt(r["ours"]), fmt(r.get("comparison")), _ratio(r)]
        out.append("| " + " | ".join(_cell(str(c)) for c in cells) + " |")
    out += [f"| {_cell(name)} | | not measured | | |" for name in missing or []]
    return out


def _goals_table(results: Results) -> list[str]:
    by_name = {r["name"]: r for r in results.get("rows", [])}
    out = ["| goal | bound | figure | status |", "|---|---|---|---|"]
    for g in GOALS:
        figure, status = g.check(by_name.get(g.row), by_name)
        out.append(f"| {_cell(g.text)} | {_cell(g.bound)} | {_cell(figure)} | {status} |")
    return out


def goal_status(results: Results) -> dict[str, str]:
    """Goal text -> met / **not met** / not measured."""
    by_name = {r["name"]: r for r in results.get("rows", [])}
    return {g.text: g.check(by_name.get(g.row), by_name)[1] for g in GOALS}


def _commit(results: Results) -> str:
    commit = results.get("commit") or "unknown"
    head, dirty, _ = commit.partition("+")
    return f"`{head[:12]}`" + (" (with uncommitted changes)" if dirty else "")


def _date(results: Results) -> str:
    try:
        return datetime.fromisoformat(results["date"]).strftime("%Y-%m-%d %H:%M UTC")
    except (KeyError, TypeError, ValueError):
        return "unknown date"


def _machine(results: Results) -> str:
    m = results.get("machine") or {}
    mem = f", {m['memory_gib']} GiB" if m.get("memory_gib") else ""
    return (
        f"{m.get('cpu', '?')} with {m.get('cores', '?')} cores{mem}, Python {m.get('python', '?')}"
    )


def _provenance(results: Results, source: str) -> str:
    quick = (
        " A **quick** (smoke) run: small sizes, few repetitions." if results.get("quick") else ""
    )
    store = any(str(r.get("name", "")).startswith("store ") for r in results.get("rows", []))
    pg = " (store rows: " + (
        "SQLite and PostgreSQL)" if results.get("postgres") else "SQLite only)"
    )
    return (
        f"From `{source}`: commit {_commit(results)}, {_date(results)}, {_machine(results)}; "
        f"command `{results.get('command', '?')}`{pg if store else ''}." + quick
    )


# ------------------------------------------------------------------ the README section


def readme_section(results: Results, source: str = "bench-results.json") -> str:
    """What goes between the markers (the markers excluded)."""
    rows = results.get("rows", [])
    by_name = {r["name"]: r for r in rows}
    headline = [by_name[n] for n in HEADLINE if n in by_name]
    missing = [n for n in HEADLINE if n not in by_name]
    lines = [
        "",
        _provenance(results, source),
        "Every row, what it measures and its comparison: [docs/benchmarks.md](docs/benchmarks.md).",
        "",
        *_goals_table(results),
        "",
        *_table(headline, missing),
        "",
    ]
    return "\n".join(lines)


def splice_readme(text: str, section: str) -> str:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start or text.count(START) != 1 or text.count(END) != 1:
        raise ValueError(f"README.md must hold exactly one {START} ... {END} pair, in that order")
    return text[: start + len(START)] + "\n" + section + "\n" + text[end:]


def readme_section_of(text: str) -> str:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README.md holds no {START} ... {END} section")
    return text[start + len(START) + 1 : end - 1]


# ------------------------------------------------------------------ docs/benchmarks.md

_HEAD = """\
# Benchmarks, fault injection and soak

<!-- Generated by tests/bench/report.py from bench-results.json: edit the script, not this file. -->

## Running the benchmarks

```sh
./scripts/bench                      # every benchmark; then this file and the README section
./scripts/bench --quick              # a smoke run
./scripts/bench --only store,ikictl  # a subset; codec = openai,anthropic,google; daemon = agents,compaction,mcp,e2e,traces
./scripts/bench --only codec --report  # a subset, and still rewrite this file and the README section
./scripts/bench --report-only        # only rewrite them, from bench-results.json
./scripts/bench --profile [PATH]     # also a py-spy flame graph of the daemon under the 100-agent load
./scripts/bench --out /tmp/r.json    # where the results go (default: bench-results.json)
```

`scripts/bench` makes `.venv` with `ikigai[test,bench]` (the official
`openai`, `anthropic` and `google-genai` SDKs are comparisons; `py-spy` draws
the flame graph), starts a throwaway PostgreSQL server for the store rows
(`IKIGAI_TEST_PG_URL` names your own, `IKIGAI_TEST_PG=skip` for SQLite only)
and runs `tests/bench/run_all.py`: each `tests/bench/bench_*.py` as its own
subprocess, one after the other, then one table

    benchmark  unit  ours  comparison  ratio

The rows go to `bench-results.json` (date, command, git commit, machine,
seconds per script, every row). After a run of every benchmark (or with
`--report`), `tests/bench/report.py` writes this file and the README's
benchmark section from it: both always show the same run.
`tests/bench/test_report.py`, in the normal test suite, fails when either
is not what the script makes of the committed `bench-results.json`.
No figure is a pass/fail; the command exits non-zero only when a benchmark
crashed (non-zero exit, time limit, no rows).

`--profile PATH` (default `bench-profile.svg`) has `bench_e2e.py` record the
daemon with py-spy while 100 agents stream 50 deltas/s each, and write the
flame graph there: where the daemon's time goes under load.

## How everything is measured

- The comparison is measured **in the same run, on the same machine**; ratio
  = ours / comparison, so read it with the unit (for a time or CPU figure
  lower is better, for a rate higher is better).
- Every contender runs **the same number of repetitions, interleaved**
  (A B C A B C ...), and the **median** is reported, never a best-of
  (`tests/bench/_measure.py`).
- The fake provider (`tests/fakes/server.py`) is a real HTTP/1.1 server on
  loopback. A stream is served **chunked, one event per write** (one HTTP
  chunk and one `send` per SSE event, as real providers flush); the codec
  rows also show the old **bulk** mode (the whole body in one write, with a
  content-length) as a second row.

## The floor (codec rows)

One definition for every API, in `tests/bench/_floor.py`:

    raw bytes -> SSE split -> msgspec.json.decode of each data payload

The split is minimal: lines (LF or CRLF), the `data:` fields of an event
joined, an event ends at a blank line; no `event:`/`id:` handling, no
normalization, no objects beyond what msgspec decodes (OpenAI's `[DONE]`
counts as an event, it is not JSON). In memory it is fed the body in the
same pieces as the wire sends (one per event). Over loopback it is fed
httpx's `aiter_raw()` of the very response our provider reads (same server,
same bytes, same chunking), in the same trio loop, on a warm connection.

The floor's read path is httpx's, as the issue's goal names it ("within 1.3x
of the httpx + msgspec floor"). Our stream path reads with its own HTTP/1.1
reader (`providers/h1/`), so it can cost less than this floor: a ratio below
1 says how much cheaper than reading with httpx it is, not that it beats the
least possible work (the lean relay of the e2e rows is that floor).

## What each row means

- **`<api>: stream path CPU per event, chunked`** (`openai chat`, `openai
  responses`, `anthropic`, `google`): CPU time of the client thread
  (`time.thread_time()`) to stream one long response in the recorded payload
  shapes (thousands of deltas, reasoning, tool calls in pieces, usage) through
  `make_provider(...).stream`, every event consumed, per SSE event.
  The fake runs in its own thread, so its CPU is not counted and waiting on
  the socket costs nothing. Comparison: the floor over loopback, same
  response. `floor_reads_per_event` in the results file is about 1 here: one
  read per event, the case real providers produce.
- **`..., bulk`**: the same with the body sent in one write (reads then carry
  many events each): the codec's share shows, the read path's hardly.
- **`<api>: decoder vs floor, in memory`**: our pure stream decoder fed the
  body one event at a time, CPU per SSE event. Comparison: the floor in
  memory, same pieces.
- **`<api>: stream vs official SDK, chunked`**: SSE events per second of
  client-thread CPU, ours (the chunked row's runs) and the official SDK's
  streaming client (`openai` 3, `anthropic`, `google-genai`) reading the same
  chunked response, interleaved with them. `anthropic: stream folded vs SDK
  messages.stream(), chunked` folds our events into a message with
  `providers.accumulate.Accumulator`, beside the SDK's accumulating stream.
- **`e2e: ...`** (`bench_e2e.py`): the real `ikigaid` process against the
  fake provider, subscribers on its Unix socket, beside **the lean relay
  floor** (`tests/bench/lean_relay.py`): its own process doing only what the
  daemon's event path must (trio socket read, incremental chunked parse, our
  decoder, one encode, one send per read to each subscriber), measured in the
  same run under the same load.
  - *daemon CPU per event*: the daemon's CPU (utime+stime) per delivered
    event; comparison: the lean relay's CPU per delivered event.
  - *added latency p50/p99*: fake write -> subscriber receipt of each text
    delta (same process, same clock), at 1 agent x 100/s, 100 agents x 50/s,
    1,000 agents x 10/s; comparison: the same through the lean relay.
  - *delivery of a 2 s stream*: first write -> last delta received for the
    slowest agent at 1,000 agents x 10/s (real time: 2 s).
  - *lost events*: deltas sent minus deltas received.
  - *daemon CPU per turn*: 500 agents prompted at once, each answered with
    a one-delta reply (the turn's whole cost in the daemon process: the
    prompt, its store writes, the request, the stream, the events, the log
    lines); comparison: the lean relay's CPU per request of the same load.
  - A full run runs `bench_e2e.py` three times; each e2e row is the median
    of the three runs (ours, comparison and ratio each; every run's ratio is
    kept in the results file as `runs`), since one run on shared cores is
    noisy.
  - 1,000 agents was exactly the old provider connection pool's cap (httpx:
    1,000 connections, 100 kept alive, so busy agents reconnected every
    turn). Streamed calls now run on `providers/h1`, whose keep-alive pool
    has no cap; the same rows at 2,000 agents x 5/s measure beyond the old one.
- **Other scripts**: `bench_store.py` (append, replay, fork chains, fork cost
  at 10,000 rows on SQLite and PostgreSQL; comparison: bare SQLAlchemy Core
  on the same engine), `bench_ikictl.py` (`ikictl` start-up and `ls`, whole
  process; comparison: `python -c pass`), `bench_agents.py` (actor
  throughput, idle agent memory, restore, daemon start, control round trip;
  comparison: the provider stream alone, a bare trio task, reading the rows,
  an empty database, a bare trio echo server), `bench_compaction.py`
  (compaction of a 100k-token context; comparison: the same summary calls
  straight to the provider; the size check before each call; comparison: one
  model call), `bench_mcp.py` (one MCP tool call over stdio through the
  ToolRegistry; comparison: the official SDK's `call_tool` to the same
  server program, calls interleaved one for one), `bench_startup.py`
  (`ikigaid` from spawn to its first answer to `daemon.status`, in a fresh
  IKIGAI_HOME and restarted on a database at the newest schema; comparison: `python -c "import sqlalchemy, trio, httpx"`, the
  floor of importing its stack), `bench_scrub.py` (a log line through the
  redaction chain and `scrub()` alone, CPU per line; comparison: a copy of
  the scrubber before it caught pieces cut from the middle of a key, on the
  same lines, repetitions interleaved), `bench_logging.py` (a turn's log
  line, the log going to a file: CPU of the thread that logs it, and of the
  whole process until it is on disk; comparison: a copy of the setup that
  formatted and wrote each line in the calling thread, before the writer
  thread), `bench_limiter.py` (50 agents at once
  on one key the fake provider limits, with each wire API's real rate-limit
  headers and 429s, in one process on the mock clock; comparison: the same
  load with the provider limiter off: 429s, retries, turns completed,
  provider requests and time, and the time against the fewest seconds the
  limit allows), `bench_fanout.py` (through a real `ikigaid`: 1,000 forks
  with their first prompts made by one `agent.fork {count}`, from send to
  answer; comparison: the same 1,000 children by 1,000 `agent.fork` calls
  pipelined on one connection, the parent the same, runs interleaved; and
  `agent.list` at 10,000 agents restored from a prepared database;
  comparison: the agents table read with sqlite3 in the bench process),
  `bench_worktree.py` (one `agent.fork {worktree: true}` through a real
  `ikigaid` on a repository of 10,000 files, the worktree removed between
  runs; comparison: `git worktree add -b` alone on the same repository, run
  as a process by the bench: the cost ikigai adds),
  `bench_cluster.py` (two `ikigaid` on one PostgreSQL database, issue 32;
  needs `IKIGAI_TEST_PG_URL`, else skipped: `agent.show` and `agent.history
  limit 1` of an agent asked of the other daemon, forwarded, vs of its
  owner; event latency from the fake's write of a subscriber on the other
  daemon, through the relay, vs one on the owner, and the relay's extra
  latency per event; failover after kill -9, median and max of 10 kills
  until the survivor answers as the owner; comparison: the configured bound,
  lease + heartbeat; delivered events/s of 20 agents streaming back to back
  split over 2 daemons vs all on 1, on the same cores).
  `bench_e2e.py` also runs its 100-agent load through a second
  daemon with `provider_limiter: false`: the limiter's own CPU per event.
- **`traces: CPU per event, 100 agents, tracing off` / `tracing on`**
  (`bench_traces.py`, issue 34): what OpenTelemetry tracing costs the
  daemon. Three `ikigaid` processes under `bench_e2e.py`'s 100-agent load
  (100 agents x 50 text deltas/s, 2 s streams), several turns of every
  agent per repetition, repetitions interleaved: *off* (no OTLP endpoint),
  *on* (`OTEL_EXPORTER_OTLP_ENDPOINT` names a sink in the bench process
  answering 200 to every POST; batch processor delay 500 ms, metric
  interval 5 s, so each repetition's spans and a metric export are sent
  inside it), and the comparison, *not installed* (a folder first on
  `PYTHONPATH` shadows `opentelemetry` with a package that raises
  ImportError; the bench checks it cannot be imported there, and that the
  *on* daemon's spans reached the sink). Figure: the daemon's CPU
  (utime+stime) over a repetition, 1.5 s after its last turn included, per
  text delta delivered; the median of the repetitions.
"""

_TAIL = """\
## The fault-injection suite

`tests/faults/` is part of the normal test run (`./scripts/test`, or
`.venv/bin/python -m pytest tests/faults -q`). Each test starts the real
`ikigaid` process with `IKIGAI_HOME` in a temporary folder, pointed at the
fake provider (read timeout 0.5 s), and runs several cases at once, one agent
each; the fake tells the cases apart by a tag in the prompt, so each case
counts exactly its own requests. Covered: 429 storms with `retry-after`
(recovered on the 6th attempt, and given up after exactly 6), 529/503 bursts,
Gemini `RetryInfo`, 500s (3 attempts in all, 1 s then 2 s backoff), an HTTP 200
with an error body (retryable and not), an SSE `error` event mid-stream,
disconnects at random byte offsets on every wire format
(`IKIGAI_FAULT_SEED` replays an offset choice) including mid tool call, stalls
past the read timeout, a server that accepts and never answers, connection
refused, a host that does not resolve, malformed SSE on every wire format,
invalid JSON in a tool call's arguments, 400/401/402/403/404/content filter/
context length and a too-long `retry-after` (each exactly one request), and a
cancel during the retry wait. Each asserts the turn's final status, the
`error`/`retry` events (attempt numbers, delays honoring retry-after,
`discarded_output` exactly when partial output was shown), the number of
requests the fake saw, the history over the socket (every completed message,
no partial one) and that the daemon's log holds no traceback.

## The soak test (opt-in)

```sh
IKIGAI_SOAK=1 .venv/bin/python -m pytest tests/soak -q -s   # IKIGAI_SOAK_SECONDS=180 by default
```

200 agents on four wire formats in tool-using loops with random faults
(429/529/503 with retry-after, disconnects, malformed SSE, stalls, invalid
tool arguments), and eight concurrent clients prompting, cancelling (now and
at a boundary), forking and killing at random. At the end: RSS of the last
third of the run within 30 % + 32 MiB of the first third after warm-up, open
file descriptors back near the start, one connection and exactly the live
agents counted by the daemon, every agent's replayed history valid for its
provider (tool calls and results pair up, roles alternate, the codec encodes
it), every live agent completes one more turn, no traceback in the log.
"""


def _group(row: Row) -> str:
    if row.get("benchmark"):
        return str(row["benchmark"])
    return str(row["name"]).split(":", 1)[0].split()[0]


def _scripts(results: Results) -> list[str]:
    scripts = results.get("scripts") or {}
    if not scripts:
        return []
    out = ["| script | seconds | status |", "|---|---:|---|"]
    for name, info in scripts.items():
        status = "ok" if info.get("ok") else f"**failed**: {_cell(str(info.get('error', '?')))}"
        if info.get("ok") and info.get("skipped"):
            status = f"skipped: {_cell(str(info['skipped']))}"
        out.append(f"| `bench_{name}.py` | {fmt(info.get('seconds'))} | {status} |")
    return out


def docs(results: Results, source: str = "bench-results.json") -> str:
    rows = results.get("rows", [])
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(_group(r), []).append(r)
    lines = [
        _HEAD,
        "## Results",
        "",
        _provenance(results, source),
        "",
        "### Goals",
        "",
        *_goals_table(results),
        "",
    ]
    scripts = _scripts(results)
    if scripts:
        lines += ["### Scripts of this run", "", *scripts, ""]
    if not rows:
        lines += ["No rows: nothing was measured in this run.", ""]
    for group, grows in groups.items():
        lines += [f"### {group}", "", *_table(grows), ""]
    lines.append(_TAIL)
    return "\n".join(lines)


# ------------------------------------------------------------------ files


def load(path: Path) -> Results:
    data = msgspec.json.decode(path.read_bytes())
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ValueError(f"{path} is not a bench-results file (no rows)")
    return data


def write(path: Path = ROOT / "bench-results.json") -> list[Path]:
    """Write docs/benchmarks.md and the README section from ``path``."""
    results = load(path)
    source = path.name
    readme = splice_readme(README.read_text(), readme_section(results, source))
    DOCS.write_text(docs(results, source))
    README.write_text(readme)
    return [DOCS, README]


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else ROOT / "bench-results.json"
    try:
        written = write(path)
    except (OSError, ValueError, msgspec.DecodeError) as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
