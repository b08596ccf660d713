"""ikigaid's start-up: from spawning it to its first answer, beside the floor
of importing the stack it runs on, in one run.

    .venv/bin/python tests/bench/bench_startup.py [--runs 20] [--json PATH]

  ours        ``ikigaid run`` in the foreground in a fresh IKIGAI_HOME (a new
              temporary folder each run: its SQLite file made and migrated, no
              provider configured), timed from the spawn until its socket
              answers ``daemon.status``
  comparison  ``python -c "import sqlalchemy, trio, httpx"`` with the same
              interpreter, timed from the spawn to its exit
Both run the same number of times, interleaved (tests/bench/_measure.py)
after one warm-up each; the figures are medians of wall time. For ours, each
run also notes when its socket file appeared and when its log said it was
migrating and ready, to show where the time goes. Not a test: nothing is
asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests._ready import READY_TIMEOUT, daemon_answers  # noqa: E402
from tests.bench._measure import interleaved, median, pct  # noqa: E402

BIN = Path(sys.executable).parent
IKIGAID = [str(BIN / "ikigaid")] if (BIN / "ikigaid").exists() else [sys.executable, "-m", "daemon"]
FLOOR = [sys.executable, "-c", "import sqlalchemy, trio, httpx"]
POLL = 0.002  # seconds between two looks at the socket: small beside a start


def compile_once() -> None:
    """Write the .pyc files a normal install has (PYTHONDONTWRITEBYTECODE may be
    set here, which would make every run compile the daemon from source)."""
    import compileall

    for target in ("daemon", "agents", "store", "providers", "protocol", "migrations"):
        if (ROOT / target).is_dir():
            compileall.compile_dir(str(ROOT / target), quiet=1)


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("IKIGAI_") and not k.endswith("_API_KEY")}


def _log_times(log: Path) -> dict[str, float]:
    """Wall-clock times (epoch seconds) of the log lines that mark the phases."""
    out: dict[str, float] = {}
    if not log.exists():
        return out
    for line in log.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
            at = datetime.fromisoformat(rec["timestamp"]).timestamp()
        except (ValueError, KeyError, TypeError):
            continue
        out.setdefault("first_log", at)
        if rec.get("logger", "").startswith("alembic") and "upgrade" in rec.get("event", ""):
            out.setdefault("migrating", at)
        if rec.get("event") == "ikigaid ready":
            out.setdefault("ready", at)
    return out


def start_once(kept: Path | None = None) -> dict[str, float]:
    """One start, in a fresh home or in ``kept`` (a restart: its database is
    already at the newest schema): milliseconds from the spawn to the socket
    file, to its first answer, and to the log's phases."""
    home = kept or Path(tempfile.mkdtemp(prefix="ikbs-", dir="/tmp"))  # short: socket paths are limited
    sock = home / "run" / "ikigai.sock"
    log = home / "logs" / "ikigaid.log"
    if kept is not None:
        log.unlink(missing_ok=True)  # this start's phases only
    answers = daemon_answers(sock, probe_timeout=READY_TIMEOUT)
    err = home / "ikigaid.err"
    try:
        with err.open("wb") as f:
            wall0 = time.time()
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                [*IKIGAID, "run"], env={**clean_env(), "IKIGAI_HOME": str(home)},
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=f,
            )
        try:
            bound = None
            while True:
                if proc.poll() is not None:
                    raise SystemExit(f"ikigaid exited with {proc.returncode}: {err.read_text()[-2000:]}")
                if bound is None and sock.exists():
                    bound = time.perf_counter() - t0
                # once bound, a probe waits in the listen queue until the daemon serves it
                if bound is not None and answers():
                    answered = time.perf_counter() - t0
                    break
                if time.perf_counter() - t0 > READY_TIMEOUT:
                    raise SystemExit(f"ikigaid did not answer within {READY_TIMEOUT:g} s: {err.read_text()[-2000:]}")
                time.sleep(POLL)
        finally:
            proc.terminate()
            proc.wait(60)
        marks = _log_times(log)
        row = {"answered": answered * 1000, "socket": bound * 1000}
        row.update({k: (v - wall0) * 1000 for k, v in marks.items()})
        return row
    finally:
        if kept is None:
            shutil.rmtree(home, ignore_errors=True)


def floor_once() -> dict[str, float]:
    t0 = time.perf_counter()
    subprocess.run(FLOOR, env=clean_env(), stdin=subprocess.DEVNULL, check=True)
    return {"answered": (time.perf_counter() - t0) * 1000}


def measure(runs: int, kept: Path | None = None) -> dict[str, Any]:
    ours_once = start_once if kept is None else (lambda: start_once(kept))
    got = interleaved(runs, {"ours": ours_once, "floor": floor_once}, warmup=1)
    ours = [r["answered"] for r in got["ours"]]
    floor = [r["answered"] for r in got["floor"]]

    def phase(name: str) -> float | None:
        xs = [r[name] for r in got["ours"] if name in r]
        return round(median(xs), 1) if len(xs) == runs else None

    o, c = median(ours), median(floor)
    return {
        "name": "ikigaid start to first answer "
        + ("(fresh IKIGAI_HOME)" if kept is None else "(restart, database at the newest schema)"),
        "unit": 'ms wall, spawn to daemon.status answered (comparison: python -c "import sqlalchemy, trio, httpx")',
        "ours": o,
        "comparison": c,
        "ratio": o / c,
        "runs": runs,
        "p90": pct(ours, 0.9),
        "comparison_p90": pct(floor, 0.9),
        # medians of when, after the spawn, each run's log or socket showed a phase
        "first_log_ms": phase("first_log"),
        "migrating_ms": phase("migrating"),
        "socket_ms": phase("socket"),
        "ready_ms": phase("ready"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    compile_once()
    kept = Path(tempfile.mkdtemp(prefix="ikbr-", dir="/tmp"))
    try:
        start_once(kept)  # made and migrated once: each measured start is a restart
        rows = [measure(args.runs), measure(args.runs, kept)]
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    print(f"ikigaid start-up, {args.runs} runs each, interleaved (median wall time)")
    print(f"{'benchmark':<72} {'ours':>9} {'comparison':>11} {'ratio':>7}")
    for r in rows:
        print(f"{r['name']:<72} {r['ours']:>7.0f}ms {r['comparison']:>9.0f}ms {r['ratio']:>6.2f}x")
        print(f"{'  p90':<72} {r['p90']:>7.0f}ms {r['comparison_p90']:>9.0f}ms")
        print(
            "  phases after the spawn (medians): first log line "
            f"{r['first_log_ms']} ms, migrating {r['migrating_ms']} ms, socket file {r['socket_ms']} ms, "
            f"'ikigaid ready' {r['ready_ms']} ms, answered {r['ours']:.0f} ms"
        )
    print(f"  comparison: {' '.join(FLOOR[1:])!r} (the floor of importing its stack)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
