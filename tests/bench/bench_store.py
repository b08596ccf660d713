"""Store benchmark: our figure, a comparison measured in the same run, the ratio.

    python tests/bench/bench_store.py            # SQLite, and PostgreSQL if IKIGAI_TEST_PG_URL is set
    python tests/bench/bench_store.py --engines sqlite --history 20000

Rows:
  append (1 row/tx)        Store.append_user, each committed  vs  a bare Core INSERT + COMMIT loop
  append_many (100/tx)     Store.append_many of 100 rows      vs  a bare Core executemany of 100
  replay 10k               Store.replay of a 10,000-row history  vs  a plain SELECT of its rows
  replay 50-deep chain     replay at the end of a 50-deep fork chain  vs  replay of as many
                           rows in one agent (first call after a restart: no cached lineage)
  fork at 10k              Store.fork of an agent with 10,000 rows  vs  of one with 10 rows
  concurrent append        32 threads (the store's worker threads under a fan-out), each
                           appending rows one by one to its own agent: group commit  vs
                           the same with it off (Store(group_commit=False): SQLite commits
                           each write alone, PostgreSQL runs the writes in parallel, its
                           default: this row is why, see StoreBase.__init__)
Throughputs are rows/s (higher is better), times are ms (lower is better). Same
engine, same pragmas (SQLite: WAL, synchronous=FULL) on both sides.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from providers.types import (  # noqa: E402
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from store import Entry, Store  # noqa: E402
from store._schema import messages  # noqa: E402


def user(i: int) -> Message:
    return Message(
        role="user", content=[TextBlock(text=f"request {i}: please look at file_{i}.py " * 4)]
    )


def reply(i: int) -> Message:
    return Message(
        role="assistant",
        content=[
            ThinkingBlock(
                text=f"Let me think about request {i}. " * 8, signature="EqQBCkgIARAB" + "x" * 200
            ),
            TextBlock(text=f"Here is what I found for {i}. " * 6),
            ToolCallBlock(
                id=f"call_{i}", name="file_read", arguments={"path": f"file_{i}.py", "limit": 200}
            ),
        ],
        provider="anthropic",
        model="claude-sonnet-4-5-20250929",
        thinking_level="med",
    )


def result(i: int) -> Message:
    return Message(
        role="tool", content=[ToolResultBlock(tool_call_id=f"call_{i}", content="x = 1\n" * 20)]
    )


def entries(n: int, start: int = 0) -> list[Entry]:
    """n rows of a realistic conversation: user, assistant (+ its tool_call row), tool_result."""
    out: list[Entry] = []
    i = start
    while len(out) < n:
        out.append(Entry(kind="user", message=user(i)))
        out.append(Entry(kind="tool_result", message=result(i)))
        out.append(
            Entry(
                kind="assistant",
                message=reply(i),
                data={"usage": {"input_tokens": 900, "output_tokens": 120}},
            )
        )
        i += 1
    return out[:n]


def fill(store: Store, uuid: str, n: int, batch: int = 200) -> None:
    """About n rows (each assistant entry also writes a tool_call row)."""
    plan = entries(int(n * 3 / 4) + 1)
    for k in range(0, len(plan), batch):
        store.append_many(uuid, plan[k : k + batch])


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median seconds of ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def concurrent_appends(url: str, threads: int, each: int, *, group_commit: bool) -> float:
    """Rows/s of ``threads`` threads each appending ``each`` rows, one per
    call, to an agent of its own, all through one Store."""
    store = Store(url, upgrade=False, group_commit=group_commit)
    try:
        agents = [
            store.create_agent(
                f"fan-{secrets.token_hex(3)}", provider="anthropic", model="claude-test"
            ).uuid
            for _ in range(threads)
        ]
        msg = user(0)
        start = threading.Barrier(threads + 1)

        def work(uuid: str) -> None:
            start.wait()
            for _ in range(each):
                store.append_user(uuid, msg)

        runs = [threading.Thread(target=work, args=(a,)) for a in agents]
        for t in runs:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in runs:
            t.join()
        return threads * each / (time.perf_counter() - t0)
    finally:
        store.close()


def bench(
    url: str, label: str, args: argparse.Namespace
) -> list[tuple[str, str, float, float, str]]:
    rows: list[tuple[str, str, float, float, str]] = []
    store = Store(url)
    engine = store.engine
    try:
        # -------- append, one row per transaction
        a = store.create_agent(
            f"bench-{secrets.token_hex(3)}", provider="anthropic", model="claude-test"
        ).uuid
        msg = user(0)
        n = args.appends
        t = time.perf_counter()
        for _ in range(n):
            store.append_user(a, msg)
        ours = n / (time.perf_counter() - t)
        text = msgspec.json.encode(msg).decode()
        ins = messages.insert()
        t = time.perf_counter()
        for _ in range(n):
            with engine.begin() as conn:
                conn.execute(
                    ins,
                    {
                        "agent_uuid": a,
                        "kind": "user",
                        "content": "x",
                        "data": None,
                        "message_json": text,
                        "created_at": datetime.now(UTC),
                    },
                )
        bare = n / (time.perf_counter() - t)
        rows.append((label, "append (1 row/tx), rows/s", ours, bare, f"{ours / bare:.2f}x"))

        # -------- append_many, 100 rows per transaction
        b = store.create_agent(
            f"bench-{secrets.token_hex(3)}", provider="anthropic", model="claude-test"
        ).uuid
        plan = [Entry(kind="user", message=user(i)) for i in range(100)]
        batches = max(1, n // 100) * 5
        t = time.perf_counter()
        for _ in range(batches):
            store.append_many(b, plan)
        ours = batches * 100 / (time.perf_counter() - t)
        params = [
            {
                "agent_uuid": b,
                "kind": "user",
                "content": "x",
                "data": None,
                "message_json": msgspec.json.encode(e.message).decode(),
                "created_at": datetime.now(UTC),
            }
            for e in plan
        ]
        t = time.perf_counter()
        for _ in range(batches):
            with engine.begin() as conn:
                conn.execute(ins, params)
        bare = batches * 100 / (time.perf_counter() - t)
        rows.append((label, "append_many (100/tx), rows/s", ours, bare, f"{ours / bare:.2f}x"))

        # -------- concurrent appends: group commit on vs off (best of 3 each,
        # taken in turns: thread scheduling makes single runs noisy)
        each = max(10, n // 10)
        best = {True: 0.0, False: 0.0}
        for _ in range(3):
            for grouped in best:
                rate = concurrent_appends(url, args.threads, each, group_commit=grouped)
                best[grouped] = max(best[grouped], rate)
        ours, bare = best[True], best[False]
        rows.append(
            (
                label,
                f"concurrent append, {args.threads} threads (1 row/tx), rows/s",
                ours,
                bare,
                f"{ours / bare:.2f}x",
            )
        )

        # -------- replay of a long history
        big = store.create_agent(
            f"big-{secrets.token_hex(3)}", provider="anthropic", model="claude-test"
        ).uuid
        fill(store, big, args.history)
        count = len(store.history(big))
        got = store.replay(big)
        ours = timed(lambda: store.replay(big))

        def plain() -> None:
            with engine.connect() as conn:
                conn.execute(
                    sa.select(messages.c.id, messages.c.kind, messages.c.message_json)
                    .where(messages.c.agent_uuid == big)
                    .order_by(messages.c.id)
                ).all()

        bare = timed(plain)
        rows.append(
            (
                label,
                f"replay {count} rows -> {len(got)} msgs, ms",
                ours * 1e3,
                bare * 1e3,
                f"{ours / bare:.2f}x",
            )
        )

        # -------- replay at the end of a fork chain vs the same messages in one agent
        depth = args.depth
        per = max(3, args.chain_rows // depth)
        uuid = store.create_agent(
            f"chain-{secrets.token_hex(3)}", provider="anthropic", model="claude-test"
        ).uuid
        for _ in range(depth):
            fill(store, uuid, per)
            uuid = store.fork(uuid).uuid
        fill(store, uuid, per)
        chain_msgs = len(store.replay(uuid))
        flat = store.create_agent(
            f"flat-{secrets.token_hex(3)}", provider="anthropic", model="claude-test"
        ).uuid
        fill(store, flat, len(store.history(uuid)) - depth)  # as many rows, less the fork rows
        flat_msgs = len(store.replay(flat))
        fresh = Store(url, upgrade=False)  # no cached lineage: what a restarted daemon pays
        try:
            ours = timed(lambda: fresh.replay(uuid), repeat=1)
        finally:
            fresh.close()
        warm = timed(lambda: store.replay(uuid))
        bare = timed(lambda: store.replay(flat))
        rows.append(
            (
                label,
                f"replay {depth}-deep chain ({chain_msgs} vs {flat_msgs} msgs), ms",
                warm * 1e3,
                bare * 1e3,
                f"{warm / bare:.2f}x",
            )
        )
        rows.append(
            (
                label,
                "  same, first call after restart, ms",
                ours * 1e3,
                bare * 1e3,
                f"{ours / bare:.2f}x",
            )
        )

        # -------- fork cost against history length
        small = store.create_agent(
            f"small-{secrets.token_hex(3)}", provider="anthropic", model="claude-test"
        ).uuid
        fill(store, small, 10)
        forks = args.forks
        ours = timed(lambda: [store.fork(big) for _ in range(forks)], repeat=3) / forks
        bare = timed(lambda: [store.fork(small) for _ in range(forks)], repeat=3) / forks
        rows.append(
            (
                label,
                f"fork at {count} rows vs at 10, ms",
                ours * 1e3,
                bare * 1e3,
                f"{ours / bare:.2f}x",
            )
        )
    finally:
        store.close()
    return rows


def pg_database(admin_url: str) -> tuple[str, Callable[[], None]]:
    name = f"ikigai_bench_{secrets.token_hex(4)}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()

    return make_url(admin_url).set(database=name).render_as_string(hide_password=False), drop


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--engines", default="sqlite,postgres")
    p.add_argument("--appends", type=int, default=500, help="single-row appends to time")
    p.add_argument("--history", type=int, default=10_000, help="rows in the long history")
    p.add_argument("--depth", type=int, default=50, help="fork chain depth")
    p.add_argument("--chain-rows", type=int, default=2_000, help="rows spread over the chain")
    p.add_argument("--forks", type=int, default=20, help="forks per timing")
    p.add_argument("--threads", type=int, default=32, help="threads of the concurrent append")
    args = p.parse_args()

    results = []
    engines = args.engines.split(",")
    if "sqlite" in engines:
        with tempfile.TemporaryDirectory() as tmp:
            results += bench(f"sqlite:///{tmp}/bench.db", "sqlite", args)
    if "postgres" in engines:
        admin = os.environ.get("IKIGAI_TEST_PG_URL")
        if not admin:
            print("(PostgreSQL skipped: IKIGAI_TEST_PG_URL is not set)\n", file=sys.stderr)
        else:
            url, drop = pg_database(admin)
            try:
                results += bench(url, "postgres", args)
            finally:
                drop()

    width = max(len(r[1]) for r in results)
    print(f"{'engine':<9} {'measure':<{width}} {'ikigai':>10} {'compared':>10} {'ratio':>7}")
    for engine, what, ours, theirs, ratio in results:
        print(f"{engine:<9} {what:<{width}} {ours:>10.1f} {theirs:>10.1f} {ratio:>7}")


if __name__ == "__main__":
    main()
