#!/usr/bin/env python3
"""Fan out with the async client: ten forks of one agent, each asked its own
question from its own task, on one shared connection.

    python examples/async_fanout.py                    # under trio
    python examples/async_fanout.py --backend asyncio  # the same code under asyncio

Prints one line per fork (its index and answer) as each finishes, then a total.
"""

from __future__ import annotations

import argparse
import sys

import anyio

import ikigai


async def main(forks: int, socket: str | None) -> int:
    async with ikigai.connect_async(socket) as c:
        root = (await c.create())["agent"]["uuid"]
        await c.ask(root, "Answer each question in one line.")
        answers: dict[int, str] = {}

        async def one(i: int) -> None:
            child = (await c.fork(root))["agent"]["uuid"]
            outcome = await c.ask(child, f"What is {i} squared?", check=True)
            answers[i] = " ".join(outcome["reply"].split())
            print(f"{i}\t{answers[i]}", flush=True)

        async with anyio.create_task_group() as tg:
            for i in range(forks):
                tg.start_soon(one, i)
        print(f"{len(answers)} answers", file=sys.stderr)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=["trio", "asyncio"], default="trio")
    ap.add_argument("--forks", type=int, default=10)
    ap.add_argument("--socket", help="the daemon's control socket")
    args = ap.parse_args()
    sys.exit(anyio.run(main, args.forks, args.socket, backend=args.backend))
