"""Run every benchmark and print one table: benchmark, unit, ours, comparison, ratio.

    .venv/bin/python tests/bench/run_all.py [--quick] [--only store,ikictl] [--out PATH] [--markdown]
                                            [--report] [--report-only] [--profile [PATH]]

(``scripts/bench`` sets up the virtualenv with the official SDKs and a
throwaway PostgreSQL server, then calls this.)

Each ``tests/bench/bench_*.py`` runs as its own subprocess, one after the
other (they measure; they must not share the CPU). Scripts that take
``--json PATH`` write their rows there; for those that only print a table
(bench_store.py, bench_ikictl.py) the table is parsed. The merged rows go to
one JSON file (default: bench-results.json at the repository root) with the
date, the git commit and the machine, so runs can be compared across commits.

After a run of every benchmark (or with ``--report``) tests/bench/report.py
writes docs/benchmarks.md and the README's benchmark section from that file;
``--report-only`` does only that, from an existing file. ``--profile PATH``
asks bench_e2e.py for a py-spy flame graph of the daemon under the 100-agent
load.

The exit status is non-zero only when a benchmark crashed (non-zero exit,
time limit, or no rows); a slow figure is never a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = Path(__file__).resolve().parent
Row = dict[str, Any]

# name -> (arguments for a full run, arguments for --quick); the order is the run order
PLAN: dict[str, tuple[list[str], list[str]]] = {
    "openai": ([], ["--reps", "3"]),
    "anthropic": ([], ["--reps", "3", "--text-deltas", "1000"]),
    "google": ([], ["--reps", "3", "--text-parts", "1000", "--thought-parts", "100"]),
    "store": (
        [],
        [
            "--appends",
            "100",
            "--history",
            "2000",
            "--depth",
            "10",
            "--chain-rows",
            "500",
            "--forks",
            "5",
        ],
    ),
    "ikictl": (["--runs", "30"], ["--runs", "5"]),
    "startup": (["--runs", "20"], ["--runs", "5"]),
    "agents": ([], ["--agents", "1000", "--deltas", "1000"]),
    "compaction": ([], ["--rounds", "3", "--checks", "50"]),
    "mcp": ([], ["--calls", "50"]),
    "scrub": ([], ["--lines", "300", "--reps", "9"]),
    "logging": ([], ["--lines", "500", "--reps", "9"]),
    "e2e": ([], ["--quick"]),
    "traces": ([], ["--quick"]),
    "fanout": ([], ["--quick"]),
    "worktree": ([], ["--quick"]),
    "cluster": ([], ["--quick"]),
    "limiter": ([], ["--agents", "20", "--tpm", "24000"]),
}
ALIASES = {
    "codec": ["openai", "anthropic", "google"],
    "daemon": ["agents", "compaction", "mcp", "e2e", "traces"],
}
TIME_LIMIT = {"full": 600, "quick": 240}
# scripts run more than once in a full run, their rows the median of the runs:
# one run of the e2e rows on shared cores is noisy (issue 30 asks for three)
REPEAT = {"e2e": 3}


def merge_runs(runs: list[list[Row]]) -> list[Row]:
    """One row per name: the median ours, comparison and ratio of the runs
    (each run's ratio kept in ``runs``), in the first run's order."""
    by_name: dict[str, list[Row]] = {}
    for rows in runs:
        for r in rows:
            by_name.setdefault(r["name"], []).append(r)

    def median(xs: list[float]) -> float | None:
        xs = sorted(x for x in xs if x is not None)
        if not xs:
            return None
        mid = len(xs) // 2
        return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2

    out = []
    for r in runs[0]:
        seen = by_name[r["name"]]
        merged = dict(r)
        merged["ours"] = median([x["ours"] for x in seen])
        merged["comparison"] = median([x["comparison"] for x in seen])
        merged["ratio"] = median([x["ratio"] for x in seen])
        merged["runs"] = [x["ratio"] if x["ratio"] is not None else x["ours"] for x in seen]
        out.append(merged)
    return out


# ------------------------------------------------------------------ adapters: a script's output -> rows


def _row(
    name: str, unit: str, ours: float, comparison: float | None, ratio: float | None = None
) -> Row:
    if ratio is None and comparison:
        ratio = ours / comparison
    return {"name": name, "unit": unit, "ours": ours, "comparison": comparison, "ratio": ratio}


def from_rows(prefix: str) -> Callable[[Any, str], list[Row]]:
    """Rows a script wrote as JSON (name, unit, ours, comparison, ratio); any
    further field (events, repetitions...) is kept in the results file."""

    def adapt(data: list[dict], _: str) -> list[Row]:
        rows = []
        for r in data:
            row = _row(
                f"{prefix}{r['name']}", r["unit"], r["ours"], r["comparison"], r.get("ratio")
            )
            row.update({k: v for k, v in r.items() if k not in row})
            rows.append(row)
        return rows

    return adapt


_STORE_LINE = re.compile(
    r"^(?P<engine>\S+)\s+(?P<what>.+?)\s+(?P<ours>[\d.]+)\s+(?P<theirs>[\d.]+)\s+(?P<ratio>[\d.]+)x$"
)
_STORE_COMPARED = {
    "append": "a bare SQL INSERT + COMMIT loop",
    "append_many": "a bare executemany",
    "replay": "a plain SELECT of its rows",
    "chain": "replay of as many rows in one agent",
    "fork": "a fork of a 10-row agent",
}


def from_store_table(_: None, stdout: str) -> list[Row]:
    """bench_store.py prints: engine, measure ("..., unit"), ikigai, compared, ratio."""
    rows: list[Row] = []
    for line in stdout.splitlines():
        if line.startswith("engine "):
            continue
        m = _STORE_LINE.match(line.strip())
        if not m:
            continue
        engine, what = m["engine"], m["what"]
        if what.startswith("same,"):  # "same, first call after restart, ms": the chain row again
            what = "replay 50-deep chain" + what[len("same") :]
        measure, _, unit = what.rpartition(", ")
        key = (
            "chain"
            if "chain" in measure
            else "fork"
            if measure.startswith("fork")
            else measure.split()[0]
        )
        unit = f"{unit} (comparison: {_STORE_COMPARED.get(key, 'see bench_store.py')})"
        rows.append(_row(f"store {engine}: {measure}", unit, float(m["ours"]), float(m["theirs"])))
    return rows


_IKICTL_LINE = re.compile(
    r"^(?P<name>.+?)\s+(?P<med>[\d.]+)ms\s+(?P<p90>[\d.]+)ms(?:\s+(?P<ratio>[\d.]+)x)?$"
)


def from_ikictl_table(_: None, stdout: str) -> list[Row]:
    """bench_ikictl.py prints: command, median, p90, ratio to python -c pass."""
    found = [m for m in map(_IKICTL_LINE.match, stdout.splitlines()) if m]
    base = next((float(m["med"]) for m in found if m["name"].strip() == "python -c pass"), None)
    rows: list[Row] = []
    for m in found:
        name = m["name"].strip()
        if name == "python -c pass":
            continue
        if m["ratio"] is None:  # the in-process round trip: no process start to compare with
            rows.append(_row(f"ikictl: {name}, median", "ms", float(m["med"]), None))
        else:
            rows.append(
                _row(
                    f"ikictl: {name}, median",
                    "ms wall, whole process (comparison: python -c pass)",
                    float(m["med"]),
                    base,
                )
            )
            rows.append(
                _row(
                    f"ikictl: {name}, p90",
                    "ms wall, whole process (comparison: python -c pass)",
                    float(m["p90"]),
                    base,
                )
            )
    return rows


_COMPACTION_FIELDS = (
    "summary_calls",
    "tokens_in",
    "tokens_before",
    "tokens_after",
    "messages",
    "same_requests",
)


def from_compaction(data: list[dict], _: str) -> list[Row]:
    """bench_compaction.py's rows; a compaction's row keeps its details (summary
    calls, tokens in, tokens before/after...) as extra fields in the results file."""
    rows: list[Row] = []
    for r in data:
        row = _row(
            f"compaction: {r['name']}", r["unit"], r["ours"], r["comparison"], r.get("ratio")
        )
        row.update({k: r[k] for k in _COMPACTION_FIELDS if k in r})
        rows.append(row)
    return rows


# name -> (takes --json?, adapter)
ADAPTERS: dict[str, tuple[bool, Callable[[Any, str], list[Row]]]] = {
    "openai": (True, from_rows("openai ")),  # its rows are "chat: ..." and "responses: ..."
    "anthropic": (True, from_rows("anthropic: ")),
    "google": (True, from_rows("google: ")),
    "store": (False, from_store_table),
    "ikictl": (False, from_ikictl_table),
    "agents": (True, from_rows("agents: ")),
    "compaction": (True, from_compaction),
    "mcp": (True, from_rows("mcp: ")),
    "e2e": (True, from_rows("e2e: ")),
    "traces": (True, from_rows("traces: ")),
}


# ------------------------------------------------------------------ running


def discover() -> list[str]:
    found = sorted(p.stem.removeprefix("bench_") for p in BENCH.glob("bench_*.py"))
    order = list(PLAN)
    return sorted(found, key=lambda n: (order.index(n) if n in order else len(order), n))


def run_one(
    name: str, quick: bool, extra: list[str] | None = None
) -> tuple[list[Row], dict[str, Any]]:
    script = BENCH / f"bench_{name}.py"
    full, fast = PLAN.get(name, ([], []))
    args = [*(fast if quick else full), *(extra or [])]
    takes_json, adapt = ADAPTERS.get(name, (True, from_rows(f"{name}: ")))
    with tempfile.TemporaryDirectory(prefix="ikbench-") as tmp:
        out = Path(tmp) / "rows.json"
        argv = [sys.executable, str(script), *args, *(["--json", str(out)] if takes_json else [])]
        limit = TIME_LIMIT["quick" if quick else "full"]
        print(
            f"== {name}: {' '.join(shlex.quote(a) for a in argv[1:])}", file=sys.stderr, flush=True
        )
        t0 = time.perf_counter()
        info: dict[str, Any] = {"argv": argv[1:], "ok": False}
        try:
            proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired as e:
            info.update(seconds=time.perf_counter() - t0, error=f"no result within {limit} s")
            sys.stderr.write(
                (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            )
            return [], info
        info["seconds"] = round(time.perf_counter() - t0, 1)
        sys.stderr.write(proc.stdout)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-4000:])
            info["error"] = (
                f"exited with {proc.returncode}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''}"
            )
            return [], info
        try:
            data = json.loads(out.read_text()) if takes_json else None
            rows = adapt(data, proc.stdout)
        except (OSError, ValueError, KeyError, TypeError) as e:
            info["error"] = f"could not read its results: {type(e).__name__}: {e}"
            return [], info
        if not rows:
            # a script that cannot run here (bench_cluster.py without PostgreSQL)
            # says "skipped: why" and writes no rows: not a crash
            why = [ln for ln in proc.stdout.splitlines() if ln.startswith("skipped: ")]
            if why:
                info.update(ok=True, skipped=why[0].removeprefix("skipped: "))
                return [], info
            info["error"] = "no rows in its output"
            return [], info
        for r in rows:
            r["benchmark"] = name
        info["ok"] = True
        return rows, info


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "system": f"{platform.system()} {platform.release()}",
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "python": platform.python_version(),
    }


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:,.1f}"
    return f"{x:,.3g}" if x else "0"


def table(rows: list[Row], markdown: bool = False) -> str:
    head = ("benchmark", "unit", "ours", "comparison", "ratio")
    body = [
        (
            r["name"],
            r["unit"],
            fmt(r["ours"]),
            fmt(r["comparison"]),
            "-" if r["ratio"] is None else f"{r['ratio']:.2f}x",
        )
        for r in rows
    ]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|---|---|---:|---:|---:|"]
        lines += ["| " + " | ".join(b) + " |" for b in body]
        return "\n".join(lines)
    w = [max(len(x[i]) for x in [head, *body]) for i in range(5)]
    out = [
        f"{head[0]:<{w[0]}}  {head[1]:<{w[1]}}  {head[2]:>{w[2]}}  {head[3]:>{w[3]}}  {head[4]:>{w[4]}}"
    ]
    out += [
        f"{b[0]:<{w[0]}}  {b[1]:<{w[1]}}  {b[2]:>{w[2]}}  {b[3]:>{w[3]}}  {b[4]:>{w[4]}}"
        for b in body
    ]
    return "\n".join(out)


def write_report(path: Path) -> int:
    """docs/benchmarks.md and the README section from the results file (tests/bench/report.py)."""
    sys.path.insert(0, str(BENCH))
    import report

    try:
        written = report.write(path)
    except (OSError, ValueError, KeyError) as e:
        print(f"the report was not written: {e}", file=sys.stderr)
        return 1
    print("wrote " + ", ".join(str(p.relative_to(ROOT)) for p in written))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--quick", action="store_true", help="a smoke run: fewer rounds, agents and rows"
    )
    ap.add_argument(
        "--only", help="comma-separated benchmarks (" + ", ".join([*PLAN, *ALIASES]) + ")"
    )
    ap.add_argument(
        "--out", type=Path, default=ROOT / "bench-results.json", help="the JSON results file"
    )
    ap.add_argument("--markdown", action="store_true", help="print the final table as Markdown")
    ap.add_argument(
        "--report",
        action="store_true",
        help="write docs/benchmarks.md and the README section even after --only",
    )
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: write the docs and README section from --out",
    )
    ap.add_argument(
        "--profile",
        nargs="?",
        const=ROOT / "bench-profile.svg",
        type=Path,
        metavar="PATH",
        help="bench_e2e.py writes a py-spy flame graph of the daemon under the 100-agent load here (default bench-profile.svg)",
    )
    args = ap.parse_args()
    if args.report_only:
        return write_report(args.out)

    names = discover()
    if args.only:
        wanted: list[str] = []
        for w in args.only.split(","):
            w = w.strip().removeprefix("bench_").removesuffix(".py")
            wanted += ALIASES.get(w, [w])
        unknown = [w for w in wanted if w not in names]
        if unknown:
            ap.error(f"no such benchmark: {', '.join(unknown)} (there are: {', '.join(names)})")
        names = [n for n in names if n in wanted]

    started = datetime.now(UTC)
    t0 = time.perf_counter()
    rows: list[Row] = []
    scripts: dict[str, Any] = {}
    if args.profile is not None and "e2e" not in names:
        print(
            "--profile: the flame graph comes from bench_e2e.py, which this run leaves out",
            file=sys.stderr,
        )
    for name in names:
        extra = (
            ["--profile", str(args.profile.resolve())]
            if name == "e2e" and args.profile is not None
            else []
        )
        times = 1 if args.quick else REPEAT.get(name, 1)
        runs: list[list[Row]] = []
        for i in range(times):
            # the flame graph once: from the first run
            got, info = run_one(name, args.quick, extra if i == 0 else [])
            if not info["ok"]:
                break
            runs.append(got)
        if info["ok"] and times > 1:
            got = merge_runs(runs)
            info["runs"] = times
        rows += got
        scripts[name] = info
    crashed = [n for n, i in scripts.items() if not i["ok"]]
    result = {
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join(["scripts/bench", *sys.argv[1:]]),
        "commit": git_commit(),
        "quick": args.quick,
        "machine": machine(),
        "postgres": bool(os.environ.get("IKIGAI_TEST_PG_URL")),
        "seconds": round(time.perf_counter() - t0, 1),
        "scripts": scripts,
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print()
    print(
        f"ikigai benchmarks, {started:%Y-%m-%d %H:%M} UTC, commit {result['commit']}, "
        f"{result['machine']['cpu']} x{result['machine']['cores']}, Python {result['machine']['python']}"
        f"{' (quick)' if args.quick else ''}; {result['seconds']:.0f} s"
    )
    print(table(rows, markdown=args.markdown))
    print(f"\nresults: {args.out}")
    if not args.only or args.report:
        write_report(args.out)
    if crashed:
        for n in crashed:
            print(f"CRASHED: {n}: {scripts[n].get('error')}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
