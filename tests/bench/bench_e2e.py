"""End to end through the real ikigaid process, like for like with a lean-relay floor.

    .venv/bin/python tests/bench/bench_e2e.py [--quick] [--json PATH] [--profile PATH]

Two contenders, each its own process on the same machine, driven by the same
harness in this process, one after the other, with the same load and the same
repetitions (interleaved, alternating which goes first; a warm-up run each):

  ours    ``python -m daemon run`` (IKIGAI_HOME in a temporary folder)
  floor   tests/bench/lean_relay.py: trio socket read, incremental chunked
          parse, our Anthropic decoder, one msgspec encode per event, one
          Unix-socket send per read (no store, actors or event log; its
          docstring says what it does and does not do)

Both are pointed at the same fast fake provider (tests/bench/_loadgen.py) in
this process: real chunked SSE, one chunk and one write per event, each text
delta a marker ``|RAAAAIIIII|`` (run, agent, index), deltas at a steady rate
per stream. The fake notes perf_counter_ns() just before the write holding a
marker; a subscriber (one Unix socket per agent, subscribed to it) notes it
when the read that completes the ``agent.event`` line holding it returns.
Same process, same clock.

Loads: 1 agent x 100 deltas/s, 100 agents x 50/s, 1,000 agents x 10/s and
2,000 agents x 5/s (2 s streams), every agent prompted at once. The 2,000 run
is beyond the daemon's old 1,000-connection provider pool cap.

  CPU per event          the process's utime+stime (/proc/PID/stat) over the
                         run / text deltas delivered to subscribers (the same
                         denominator for both: a contender that sends more
                         notifications per turn gets no discount for it)
  added latency p50/p99  fake write -> subscriber receipt; the percentile is
                         taken per run, and the median of the runs reported
  delivery of a 2 s      slowest agent: the fake's first write of its reply
  stream                 -> its last delta received; median of the runs
  first prompt -> last   every agent prompted at once: the first prompt sent
  turn ended             -> the last turn_ended received (shows how long a
                         contender takes to start 1,000 turns); median of runs
  lost events            markers written - markers received, summed over runs
  bulk throughput        text deltas/s delivered with 1,000 agents when the
                         fake sends each whole body in one write
                         (content-length), first prompt -> last turn ended
  memory                 VmRSS of the idle daemon beside a bare Python with the
                         same libraries imported; per idle agent (10,000 agents
                         in a prepared database) beside a bare trio task per
                         agent; per streaming agent (the 1,000-agent run's peak
                         vs idle) beside the per idle agent figure

``--profile PATH``: an extra 100-agent run of the daemon (not counted in the
figures, since sampling slows it) with ``py-spy record --rate 250 --format
flamegraph`` attached for its duration; the svg is written to PATH.

Not a test: nothing is asserted; it exits non-zero only if something crashed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import trio  # noqa: E402

from tests.bench._loadgen import LoadFake, Rpc, RunResult, drive  # noqa: E402
from tests.bench._measure import median, pct  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
MODEL = "claude-sonnet-4-5"
CAP_NOTE = "; beyond the old 1,000-connection pool cap"


# ------------------------------------------------------------------ /proc


def rss_kib(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


# ------------------------------------------------------------------ the contenders


def _clean_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("IKIGAI_") and not k.endswith("_API_KEY")
    }


class Contender:
    """A process speaking the control protocol on a Unix socket."""

    name = ""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="ikb-", dir="/tmp"))
        self.sock = self.home / "run" / "ikigai.sock"
        self.proc: trio.Process | None = None
        self.log = self.home / "stderr.log"

    def command(self) -> list[str]:
        raise NotImplementedError

    def _open_log(self) -> Any:
        return open(self.log, "wb")  # closed by start() once the child has it

    def env(self) -> dict[str, str]:
        return _clean_env()

    async def start(self) -> None:
        self.sock.parent.mkdir(parents=True, exist_ok=True)
        err = self._open_log()
        try:
            self.proc = await trio.lowlevel.open_process(
                self.command(), env=self.env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err
            )
        finally:
            err.close()  # the child has its own copy
        with trio.fail_after(180):
            while True:
                if self.proc.poll() is not None:
                    tail = self.log.read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {tail}")
                try:
                    rpc = await Rpc.connect(self.sock)
                except OSError:
                    await trio.sleep(0.02)
                    continue
                try:
                    await rpc.call("daemon.status")
                finally:
                    rpc.close()
                return

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            with trio.move_on_after(30):
                await self.proc.wait()
            if self.proc.poll() is None:
                self.proc.kill()
                await self.proc.wait()

    def complaints(self) -> list[str]:
        """Warning and error lines the process logged (its stderr, and the daemon's log files)."""
        found: list[str] = []
        for path in [self.log, *sorted((self.home / "logs").glob("*"))]:
            if not path.is_file():
                continue
            for line in path.read_text(errors="replace").splitlines():
                low = line.lower()
                if any(w in low for w in ("warning", "error", "traceback", "exception")):
                    found.append(line[:300])
        return found

    def cleanup(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


class Daemon(Contender):
    name = "ikigaid"

    def __init__(self, base_url: str, db_url: str | None = None, *, limiter: bool = True) -> None:
        super().__init__()
        self.db_url = db_url
        if not limiter:
            self.name = "no limiter"
        cfg = {
            "default_model": MODEL,
            # the fake takes any load: a cap that never binds, so the rows
            # measure the event path (and the limiter's cost), not its waits
            "provider_limiter": limiter,
            "providers": {
                "anthropic": {
                    "base_url": base_url,
                    "read_timeout": 120,
                    "connect_timeout": 60,
                    "max_concurrent": 1_000_000,
                }
            },
        }
        (self.home / "config.json").write_text(json.dumps(cfg))
        creds = self.home / "credentials.json"
        creds.write_text(json.dumps({"anthropic": "sk-ant-bench"}))
        creds.chmod(0o600)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "daemon", "run"]

    def env(self) -> dict[str, str]:
        env = _clean_env()
        env["IKIGAI_HOME"] = str(self.home)
        if self.db_url:
            env["IKIGAI_DB_URL"] = self.db_url
        return env


class LeanRelay(Contender):
    name = "lean relay"

    def __init__(self, base_url: str) -> None:
        super().__init__()
        self.base_url = base_url

    def command(self) -> list[str]:
        script = str(Path(__file__).with_name("lean_relay.py"))
        return [sys.executable, script, "--socket", str(self.sock), "--base-url", self.base_url]


# ------------------------------------------------------------------ loads


@dataclass
class Load:
    agents: int
    rate: float  # deltas/s per agent
    deltas: int

    @property
    def label(self) -> str:
        return f"{self.agents:,} agent{'s' if self.agents > 1 else ''} x {self.rate:g}/s"


def full_plan() -> dict[str, Any]:
    return {
        "loads": [Load(1, 100, 300), Load(100, 50, 100), Load(1000, 10, 20), Load(2000, 5, 10)],
        "bulk": Load(1000, 0, 40),
        "turns": Load(500, 0, 1),
        "reps": 3,
        "idle_agents": 10_000,
        "warmup": Load(20, 50, 20),
    }


def quick_plan() -> dict[str, Any]:
    return {
        "loads": [Load(1, 100, 100), Load(20, 50, 50), Load(100, 10, 10), Load(200, 5, 5)],
        "bulk": Load(100, 0, 20),
        "turns": Load(100, 0, 1),
        "reps": 3,
        "idle_agents": 1000,
        "warmup": Load(5, 50, 5),
    }


async def create_agents(sock: Path, count: int) -> list[str]:
    """Pipelined agent.create: names b0000..., uuids in order."""
    admin = await Rpc.connect(sock)
    uuids: list[str] = []
    try:
        for lo in range(0, count, 200):
            hi = min(count, lo + 200)
            for i in range(lo, hi):
                await admin.send("agent.create", name=f"b{i:04d}", model=MODEL)
            for _ in range(lo, hi):
                uuids.append((await admin.answer())["agent"]["uuid"])
    finally:
        admin.close()
    return uuids


def find_py_spy() -> str | None:
    here = Path(sys.executable).with_name("py-spy")
    return str(here) if here.exists() else shutil.which("py-spy")


class Profiler:
    """py-spy attached to a process for the length of one run."""

    def __init__(self, exe: str, pid: int, out: Path) -> None:
        self.cmd = [exe, "record", "--pid", str(pid), "--rate", "250", "--format", "flamegraph"]
        self.cmd += ["-o", str(out)]
        self.out = out
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)  # attached before the first prompt

    def stop(self) -> str | None:
        """Stop it (SIGINT makes py-spy write its output); None if it wrote
        the flame graph, else its stderr."""
        if self.proc is None:
            return "py-spy never started"
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return None if self.out.exists() else err.decode(errors="replace").strip()


# ------------------------------------------------------------------ main


class Table:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def row(self, name: str, unit: str, ours: float, comparison: float | None, better: str) -> None:
        ratio = ours / comparison if comparison else None
        self.rows.append(
            {
                "name": name,
                "unit": unit,
                "ours": ours,
                "comparison": comparison,
                "ratio": ratio,
                "better": better,
            }
        )
        comp = "n/a" if comparison is None else f"{comparison:,.3f}"
        print(f"  {name}: {ours:,.3f} vs {comp} ({unit})", file=sys.stderr, flush=True)


def _note(label: str, who: str, r: RunResult) -> None:
    extra = []
    if r.lost:
        extra.append(f"{r.lost} lost")
    if r.lagged:
        extra.append(f"{r.lagged} lagged")
    if r.turn_errors:
        extra.append(f"{r.turn_errors} turns in error")
    if r.fake_errors:
        extra.append(f"fake: {r.fake_errors[:3]}")
    print(
        f"    {label:<20} {who:<10} {r.elapsed:6.2f} s  cpu {r.cpu:5.2f} s "
        f"(harness {r.harness_cpu:5.2f})  {r.concurrent:>5} at once  "
        f"{r.received:>6}/{r.expected} deltas  {r.notes:>6} notes  "
        f"p50 {pct(r.latency_ms, 0.5):7.2f} ms  p99 {pct(r.latency_ms, 0.99):8.2f} ms  "
        f"delivery {r.delivery:5.2f} s  {'  '.join(extra)}",
        file=sys.stderr,
        flush=True,
    )


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    plan = quick_plan() if args.quick else full_plan()
    if args.load:
        plan["loads"] = args.load
    if args.reps:
        plan["reps"] = args.reps
    loads: list[Load] = plan["loads"]
    reps: int = plan["reps"]
    most = max(ld.agents for ld in [*loads, plan["bulk"]])
    table = Table()
    counter = iter(range(1, 1 << 30))

    async with trio.open_nursery() as nursery:
        fake = await nursery.start(LoadFake(MODEL).serve)
        daemon = Daemon(fake.base_url)
        relay = LeanRelay(fake.base_url)
        contenders: list[Contender] = [daemon, relay]
        try:
            await daemon.start()
            await relay.start()
            await trio.sleep(1.0)
            idle_rss = rss_kib(daemon.pid)
            table.row(
                "idle daemon RSS",
                "MiB (comparison: python + the same imports)",
                idle_rss / 1024,
                await bare_python_rss() / 1024,
                "lower",
            )
            uuids = await create_agents(daemon.sock, most)
            await trio.sleep(1.0)
            rss_idle_n = rss_kib(daemon.pid)
            agents_of: dict[str, list[str]] = {}  # a contender's own agents, where not uuids

            async def one(
                c: Contender,
                load: Load,
                mode: str = "chunked",
                rss: list[int] | None = None,
                **kw: Any,
            ) -> RunResult:
                async with trio.open_nursery() as inner:
                    if rss is not None:
                        inner.start_soon(sample_rss, c.pid, rss)
                    r = await drive(
                        c.sock,
                        c.pid,
                        fake,
                        agents_of.get(c.name, uuids)[: load.agents],
                        next(counter),
                        deltas=load.deltas,
                        rate=load.rate,
                        mode=mode,
                        cpu_seconds=cpu_seconds,
                        **kw,
                    )
                    inner.cancel_scope.cancel()
                _note(load.label if mode == "chunked" else f"bulk {load.agents:,}", c.name, r)
                return r

            async def both(load: Load, mode: str = "chunked") -> dict[str, list[RunResult]]:
                """reps runs each, interleaved, alternating which contender goes first."""
                out: dict[str, list[RunResult]] = {c.name: [] for c in contenders}
                for rep in range(reps):
                    order = contenders if rep % 2 == 0 else contenders[::-1]
                    for c in order:
                        rss = peak if c is daemon and load.agents == streaming_n else None
                        out[c.name].append(await one(c, load, mode, rss))
                return out

            for c in contenders:  # warm-up: imports, first connections, caches
                await one(c, plan["warmup"])

            # memory while streaming: the daemon's RSS sampled over its runs of this load
            streaming_n = max(ld.agents for ld in loads if ld.agents <= 1000)
            peak: list[int] = []
            for load in loads:
                results = await both(load)
                report(table, load, results[daemon.name], results[relay.name])
            streaming_kib = (max(peak) - rss_idle_n) / streaming_n if peak else None

            # a turn's whole cost: many agents, each a one-delta reply, back to back
            turns: Load = plan["turns"]
            results = await both(turns)
            table.row(
                f"daemon CPU per turn, 1-delta reply, {turns.agents:,} agents at once",
                "us CPU per turn (comparison: lean relay floor, CPU per request)",
                median([r.cpu / turns.agents * 1e6 for r in results[daemon.name]]),
                median([r.cpu / turns.agents * 1e6 for r in results[relay.name]]),
                "lower",
            )

            bulk: Load = plan["bulk"]
            results = await both(bulk, "bulk")
            ours, floor = results[daemon.name], results[relay.name]
            table.row(
                f"throughput, bulk bodies, {bulk.agents:,} agents",
                "text deltas/s delivered (comparison: lean relay floor; whole body in one write)",
                median([r.received / r.elapsed for r in ours]),
                median([r.received / r.elapsed for r in floor]),
                "higher",
            )
            table.row(
                f"daemon CPU per event, bulk bodies, {bulk.agents:,} agents",
                "us CPU per delivered event (comparison: lean relay floor, own process)",
                median([r.cpu / max(1, r.received) * 1e6 for r in ours]),
                median([r.cpu / max(1, r.received) * 1e6 for r in floor]),
                "lower",
            )

            # the limiter's own cost: the same load through a daemon without it
            lim_load = next((ld for ld in loads if ld.agents == 100), loads[len(loads) // 2])
            off = Daemon(fake.base_url, limiter=False)
            contenders.append(off)  # stopped and cleaned up with the others
            await off.start()
            agents_of[off.name] = await create_agents(off.sock, lim_load.agents)
            await one(off, plan["warmup"])
            on_runs: list[RunResult] = []
            off_runs: list[RunResult] = []
            for rep in range(reps):
                pair = [(daemon, on_runs), (off, off_runs)]
                for c, into in pair if rep % 2 == 0 else pair[::-1]:
                    into.append(await one(c, lim_load))
            table.row(
                f"daemon CPU per event, limiter on vs off, {lim_load.label}",
                "us CPU per delivered event (comparison: the same daemon with provider_limiter false)",
                median([r.cpu / max(1, r.received) * 1e6 for r in on_runs]),
                median([r.cpu / max(1, r.received) * 1e6 for r in off_runs]),
                "lower",
            )

            if args.profile:
                await profile(args.profile, daemon, loads, one)

            for c in contenders:
                lines = c.complaints()
                if lines:
                    print(
                        f"  {c.name} logged {len(lines)} warning/error lines, e.g.:",
                        file=sys.stderr,
                    )
                    for line in lines[:5]:
                        print(f"    {line}", file=sys.stderr)
        finally:
            for c in contenders:
                await c.stop()
                c.cleanup()

        # ---- per idle agent: a daemon restoring N agents from a prepared database
        n_idle = plan["idle_agents"]
        url, tmp = prepared_db(n_idle)
        big = Daemon(fake.base_url, db_url=url)
        try:
            await big.start()
            await trio.sleep(1.0)
            many_rss = rss_kib(big.pid)
        finally:
            await big.stop()
            big.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)
        per_idle = (many_rss - idle_rss) / n_idle
        table.row(
            f"RSS per idle agent ({n_idle:,})",
            "KiB (comparison: a bare trio task)",
            per_idle,
            await bare_task_kib(n_idle),
            "lower",
        )
        if streaming_kib is not None:
            table.row(
                f"RSS per streaming agent ({streaming_n:,})",
                "KiB while streaming (comparison: per idle agent)",
                streaming_kib,
                per_idle,
                "lower",
            )
        nursery.cancel_scope.cancel()
    return table.rows


def report(table: Table, load: Load, ours: list[RunResult], floor: list[RunResult]) -> None:
    label = load.label
    beyond = CAP_NOTE if load.agents > 1000 else ""

    def med(runs: list[RunResult], f: Callable[[RunResult], float]) -> float:
        return median([f(r) for r in runs])

    if load.agents >= 100:
        table.row(
            f"daemon CPU per event, {label}",
            "us CPU per delivered event (comparison: lean relay floor, own process)" + beyond,
            med(ours, lambda r: r.cpu / max(1, r.received) * 1e6),
            med(floor, lambda r: r.cpu / max(1, r.received) * 1e6),
            "lower",
        )
    for q, name in ((0.5, "p50"), (0.99, "p99")):
        table.row(
            f"added latency {name}, {label}",
            "ms fake write -> subscriber (comparison: lean relay floor)" + beyond,
            med(ours, lambda r, q=q: pct(r.latency_ms, q)),
            med(floor, lambda r, q=q: pct(r.latency_ms, q)),
            "lower",
        )
    if load.agents >= 100:
        seconds = load.deltas / load.rate
        table.row(
            f"delivery of a {seconds:g} s stream, {label}",
            "s, slowest agent: first write -> last delta received "
            "(comparison: lean relay floor)" + beyond,
            med(ours, lambda r: r.delivery),
            med(floor, lambda r: r.delivery),
            "lower",
        )
        table.row(
            f"first prompt -> last turn ended, {label}",
            "s, every agent prompted at once (comparison: lean relay floor)" + beyond,
            med(ours, lambda r: r.elapsed),
            med(floor, lambda r: r.elapsed),
            "lower",
        )
        total = sum(r.expected for r in ours)
        table.row(
            f"lost events, {label}",
            f"of {total:,} deltas over {len(ours)} runs (comparison: lean relay floor)" + beyond,
            float(sum(r.lost for r in ours)),
            float(sum(r.lost for r in floor)),
            "lower",
        )


async def sample_rss(pid: int, into: list[int]) -> None:
    while True:
        into.append(rss_kib(pid))
        await trio.sleep(0.1)


async def profile(out: Path, daemon: Daemon, loads: list[Load], one: Any) -> None:
    exe = find_py_spy()
    if exe is None:
        print(
            "  --profile: py-spy is not installed (pip install py-spy, or the bench extra);"
            " no flame graph written",
            file=sys.stderr,
        )
        return
    load = next((ld for ld in loads if ld.agents == 100), max(loads, key=lambda ld: ld.agents))
    out.parent.mkdir(parents=True, exist_ok=True)
    spy = Profiler(exe, daemon.pid, out)
    try:
        await one(daemon, load, on_start=spy.start)
    finally:
        err = spy.stop()
    if err is None:
        print(f"  profile of the daemon under {load.label}: {out}", file=sys.stderr)
    else:
        print(f"  --profile: py-spy wrote nothing to {out}: {(err or '')[-500:]}", file=sys.stderr)


# ------------------------------------------------------------------ memory


def prepared_db(count: int) -> tuple[str, Path]:
    from datetime import UTC, datetime

    from store import Store
    from store._ids import uuid7
    from store._schema import agents

    tmp = Path(tempfile.mkdtemp(prefix="ikbdb-"))
    url = f"sqlite:///{tmp / 'many.db'}"
    store = Store(url, sqlite_synchronous="OFF")
    now = datetime.now(UTC)
    with store.engine.begin() as conn:
        conn.execute(
            agents.insert(),
            [
                {
                    "uuid": uuid7(),
                    "name": f"idle{i}",
                    "provider": "anthropic",
                    "model": MODEL,
                    "thinking_level": "none",
                    "system_prompt": "",
                    "status": "running",
                    "created_at": now,
                }
                for i in range(count)
            ],
        )
    store.close()
    return url, tmp


async def bare_python_rss() -> int:
    code = (
        "import sys, trio, httpx, sqlalchemy, msgspec, structlog, alembic; "
        "sys.stdout.write('ok\\n'); sys.stdout.flush(); sys.stdin.read()"
    )
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdin is not None
    await proc.stdout.receive_some(10)
    await trio.sleep(0.3)
    rss = rss_kib(proc.pid)
    await proc.stdin.aclose()
    await proc.wait()
    return rss


_BARE_TASKS = """
import sys, trio
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
async def main(n):
    async with trio.open_nursery() as nursery:
        await trio.sleep(0.05)
        before = rss()
        for _ in range(n):
            nursery.start_soon(trio.sleep_forever)
        await trio.sleep(0.1)
        print((rss() - before) / n)
        nursery.cancel_scope.cancel()
trio.run(main, int(sys.argv[1]))
"""


async def bare_task_kib(count: int) -> float:
    """KiB per bare trio task, in a fresh process: in this one, whose heap
    has grown and shrunk through the runs, new tasks fill freed memory and
    RSS does not move (it once read as a negative figure)."""
    done = await trio.run_process(
        [sys.executable, "-c", _BARE_TASKS, str(count)], capture_stdout=True
    )
    return float(done.stdout)


def parse_load(text: str) -> Load:
    try:
        agents, rate, deltas = text.lower().split("x")
        return Load(int(agents), float(rate), int(deltas))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected AGENTSxRATExDELTAS") from None


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="a smoke run: fewer agents and events")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument(
        "--profile",
        type=Path,
        metavar="PATH",
        help="write a py-spy flame graph (svg) of the daemon under the 100-agent load here",
    )
    ap.add_argument(
        "--load",
        type=parse_load,
        action="append",
        metavar="AGENTSxRATExDELTAS",
        help="run this load instead of the plan's (repeatable), e.g. 1000x10x20",
    )
    ap.add_argument("--reps", type=int, help="runs per contender and load (default 3)")
    args = ap.parse_args()
    if args.profile:
        args.profile = args.profile.resolve()
    t0 = time.perf_counter()
    rows = trio.run(run, args)
    print(f"{'benchmark':<48} {'ours':>12} {'comparison':>12} {'ratio':>8}  unit")
    for r in rows:
        comp = "" if r["comparison"] is None else f"{r['comparison']:,.3f}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['name']:<48} {r['ours']:>12,.3f} {comp:>12} {ratio:>8}  {r['unit']}")
    print(f"(e2e took {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
