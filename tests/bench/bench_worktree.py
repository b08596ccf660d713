#!/usr/bin/env python3
"""A fork in a worktree of its own, on a repository of 10,000 files (issue 36).

    .venv/bin/python tests/bench/bench_worktree.py [--files N] [--reps N] [--json PATH]

Row:
  fork --worktree on a repository of N files   one ``agent.fork {worktree:
      true}`` round trip through a real ikigaid (branch and base checked, the
      worktree added, the agent's rows written with its worktree row);
      comparison: ``git worktree add -b BRANCH PATH HEAD`` alone on the same
      repository, run as a process from this script: the floor, strictly less
      work (no daemon, no checks, no rows). Repetitions interleaved; each
      worktree removed between runs (not timed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import trio  # noqa: E402

from tests.bench._loadgen import LoadFake, Rpc  # noqa: E402
from tests.bench._measure import median  # noqa: E402
from tests.bench.bench_e2e import MODEL, Daemon, Table  # noqa: E402

GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=GIT_ENV)


def make_repo(path: Path, files: int) -> None:
    """N files of a few hundred bytes in 100 folders, one commit."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Bench")
    git(path, "config", "user.email", "bench@example.com")
    for i in range(files):
        folder = path / f"d{i % 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text(f"file {i}\n" + "x" * 200 + "\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "files")


def _checked_out(folder: str) -> bool:
    return Path(folder, "d00", "f00000.txt").is_file()


async def call(rpc: Rpc, method: str, **params: Any) -> Any:
    await rpc.send(method, **params)
    return await rpc.answer()


async def bench(table: Table, fake_url: str, files: int, reps: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ikb-wt-"))
    repo = tmp / "repo"
    make_repo(repo, files)
    daemon = Daemon(fake_url)
    try:
        await daemon.start()
        rpc = await Rpc.connect(daemon.sock)
        await call(rpc, "agent.create", name="parent", model=MODEL, cwd=str(repo))
        ours: list[float] = []
        floor: list[float] = []
        for rep in range(reps + 1):  # the first of each: a warm-up, not kept
            order = ["ours", "git"] if rep % 2 == 0 else ["git", "ours"]
            for who in order:
                if who == "ours":
                    t0 = time.perf_counter()
                    made = await call(
                        rpc, "agent.fork", agent="parent", name=f"w{rep}", worktree=True
                    )
                    took = time.perf_counter() - t0
                    assert _checked_out(made["agent"]["cwd"])
                    await call(rpc, "agent.kill", agent=f"w{rep}", prune_worktree=True, force=True)
                    (ours if rep else []).append(took)
                else:
                    place = tmp / f"plain{rep}"
                    t0 = time.perf_counter()
                    git(repo, "worktree", "add", "--quiet", "-b", f"plain{rep}", str(place), "HEAD")
                    took = time.perf_counter() - t0
                    git(repo, "worktree", "remove", "--force", str(place))
                    git(repo, "branch", "-D", f"plain{rep}")
                    (floor if rep else []).append(took)
        rpc.close()
        table.row(
            f"fork --worktree on a repository of {files:,} files",
            "ms, one agent.fork {worktree} (comparison: git worktree add alone)",
            median(ours) * 1000,
            median(floor) * 1000,
            "lower",
        )
    finally:
        await daemon.stop()
        daemon.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    table = Table()
    async with trio.open_nursery() as nursery:
        fake = await nursery.start(LoadFake(MODEL).serve)
        await bench(table, fake.base_url, args.files, args.reps)
        nursery.cancel_scope.cancel()
    return table.rows


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--files", type=int, default=10_000, help="files in the repository")
    ap.add_argument("--reps", type=int, default=7, help="timed forks (and git runs) each")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 1,000 files, 3 reps")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    if args.quick:
        args.files, args.reps = 1000, 3
    rows = trio.run(run, args)
    for r in rows:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(
            f"{r['name']:<52} {r['ours']:>10,.3f} {r['comparison']:>10,.3f} {ratio:>8}  {r['unit']}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
