"""ikictl start-up and round trip beside ``python -c pass``, in one run.

    .venv/bin/python tests/bench/bench_ikictl.py [--runs 40]

hyperfine-style: a few warm-up runs, then many; median and p90 wall time of
each command as a subprocess, and its ratio to ``python -c pass``. A real
daemon is started in a temporary IKIGAI_HOME (no provider needed) for the
"with a daemon" rows, and stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
IKICTL = str(BIN / "ikictl")
ROOT = Path(__file__).resolve().parents[2]


def timed(argv: list[str], env: dict[str, str], runs: int, expect: int) -> list[float]:
    for _ in range(3):
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        code = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        out.append(time.perf_counter() - t)
        if code != expect:
            raise SystemExit(f"{' '.join(argv)} exited {code}, expected {expect}")
    return out


def acp_initialize(env: dict[str, str], runs: int) -> list[float]:
    """``ikictl acp`` from its start to its answer to an editor's ``initialize``
    (what an editor waits for when it opens the agent panel); then stdin closes
    and it exits."""
    line = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    out = []
    for i in range(runs + 3):
        t = time.perf_counter()
        proc = subprocess.Popen([IKICTL, "acp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line)
        proc.stdin.flush()
        answer = proc.stdout.readline()
        took = time.perf_counter() - t
        proc.stdin.close()
        if proc.wait(30) != 0 or b'"protocolVersion":1' not in answer:
            raise SystemExit(f"ikictl acp did not answer initialize: {answer[:200]!r}")
        if i >= 3:  # the first three warm up
            out.append(took)
    return out


def p90(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.9 * (len(s) - 1)))]


def compile_once() -> None:
    """Write the .pyc files a normal install has (PYTHONDONTWRITEBYTECODE may be
    set here, which would make every run compile ikictl from source)."""
    import compileall

    for target in ("ikictl", "daemon"):
        compileall.compile_dir(str(ROOT / target), quiet=1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    compile_once()
    home = Path(tempfile.mkdtemp(prefix="ikbench"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("IKIGAI_")}
    env["IKIGAI_HOME"] = str(home)
    rows: list[tuple[str, list[float]]] = []
    daemon = None
    try:
        rows.append(("python -c pass", timed([sys.executable, "-c", "pass"], env, args.runs, 0)))
        rows.append(("ikictl --version", timed([IKICTL, "--version"], env, args.runs, 0)))
        rows.append(("ikictl ls --no-autostart (no daemon, exit 3)", timed([IKICTL, "ls", "--no-autostart"], env, args.runs, 3)))
        daemon = subprocess.Popen([str(BIN / "ikigaid"), "run"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock = home / "run" / "ikigai.sock"
        deadline = time.monotonic() + 20
        while not sock.exists():
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise SystemExit("ikigaid did not start")
            time.sleep(0.05)
        subprocess.run([IKICTL, "new", "--name", "bench"], env=env, stdout=subprocess.DEVNULL, check=True)
        rows.append(("ikictl ls (daemon, 1 agent)", timed([IKICTL, "ls"], env, args.runs, 0)))
        rows.append(("ikictl ls --json (daemon)", timed([IKICTL, "ls", "--json"], env, args.runs, 0)))
        rows.append(("ikictl acp to its initialize answer (daemon)", acp_initialize(env, args.runs)))
        # the round trip alone, inside one process: connect + agent.list + close
        sys.path.insert(0, str(ROOT))
        os.environ["IKIGAI_HOME"] = str(home)
        from ikictl.client import Client, default_socket

        rt = []
        for _ in range(args.runs * 5):
            t = time.perf_counter()
            with Client.open(default_socket()) as c:
                c.call("agent.list")
            rt.append(time.perf_counter() - t)
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(15)
        shutil.rmtree(home, ignore_errors=True)
    base = statistics.median(rows[0][1])
    print(f"ikictl start-up, {args.runs} runs each (wall time of the whole process)")
    print(f"{'command':<46} {'median':>9} {'p90':>9} {'vs python -c pass':>18}")
    for name, xs in rows:
        med = statistics.median(xs)
        print(f"{name:<46} {med * 1000:>7.1f}ms {p90(xs) * 1000:>7.1f}ms {med / base:>17.2f}x")
    print(f"{'ls round trip in-process (connect+agent.list)':<46} {statistics.median(rt) * 1000:>7.2f}ms {p90(rt) * 1000:>7.2f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
