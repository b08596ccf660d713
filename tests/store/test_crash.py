"""Durability: a process appending messages is killed with SIGKILL at random
points; every append that returned is there afterwards, every batch is whole,
and the database is intact."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa

from store import Store

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import sys
from providers.types import Message, TextBlock
from store import Entry, Store

url, uuid, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = Store(url, upgrade=False)
out = sys.stdout
i = start
while True:
    if i % 3 == 2:  # a batch of three that must land together
        recs = store.append_many(
            uuid,
            [Entry(kind="user", message=Message(role="user", content=[TextBlock(text=f"batch {i} part {k}")]))
             for k in range(3)],
        )
        out.write(f"B {i} " + " ".join(str(r.id) for r in recs) + "\n")
    else:
        rec = store.append(uuid, "user", message=Message(role="user", content=[TextBlock(text=f"single {i}")]))
        out.write(f"S {i} {rec.id}\n")
    out.flush()
    i += 1
"""


def run_and_kill(url: str, uuid: str, start: int, rng: random.Random) -> list[str]:
    """Start the child, let it append for a random while, SIGKILL it; its complete output lines."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, uuid, str(start)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    try:
        first = proc.stdout.readline()  # it is up and appending
        assert first, proc.stderr.read().decode()
        time.sleep(rng.uniform(0.02, 0.3))
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    text = (first + rest).decode()
    # a line cut short by the kill was not acknowledged
    return text.splitlines()[: text.count("\n")]


def test_sigkill_loses_nothing_that_was_acknowledged(store: Store, db_url: str) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    uuid = store.create_agent("crash", provider="p", model="m").uuid
    acknowledged: dict[int, str] = {}
    start = 0
    for _ in range(2):
        for line in run_and_kill(db_url, uuid, start, rng):
            tag, i, *ids = line.split()
            n = int(i)
            if tag == "S":
                acknowledged[int(ids[0])] = f"single {n}"
            else:
                for k, row_id in enumerate(ids):
                    acknowledged[int(row_id)] = f"batch {n} part {k}"
            start = n + 1
        start += 1000  # never reuse the text of an append that may have landed unreported

    after = Store(db_url, upgrade=False)
    try:
        rows = {r.id: r.message.text for r in after.history(uuid)}
        missing = {i: t for i, t in acknowledged.items() if rows.get(i) != t}
        assert not missing, f"seed {seed}: acknowledged appends lost: {missing}"
        assert len(acknowledged) > 10, f"seed {seed}: the child barely ran"
        # batches are whole: every batch present has all three parts
        parts: dict[str, int] = {}
        for text in rows.values():
            if text.startswith("batch"):
                key = text.rsplit(" part ", 1)[0]
                parts[key] = parts.get(key, 0) + 1
        assert set(parts.values()) <= {3}, f"seed {seed}: a batch landed in part: {parts}"
        # still a working database
        after.append_user(uuid, after.replay(uuid)[0])
        with after.engine.connect() as conn:
            if after.dialect == "sqlite":
                assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
                assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
            else:
                orphans = conn.execute(
                    sa.text(
                        "SELECT count(*) FROM messages m LEFT JOIN agents a ON a.uuid = m.agent_uuid WHERE a.uuid IS NULL"
                    )
                ).scalar()
                assert orphans == 0
                # no transaction of the killed client is left open
                open_tx = conn.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND state LIKE 'idle in transaction%'"
                    )
                ).scalar()
                assert open_tx == 0
    finally:
        after.close()
