#!/usr/bin/env python3
"""Fan out: one agent sets the scene, ten forks each answer their own
question in parallel (each inherits the scene), and the answers are gathered.

    python examples/fanout.py                  # the daemon's default model
    python examples/fanout.py --model claude-sonnet-4-5/low --forks 5

Each fork's turn runs in the daemon at the same time as the others; this
script only waits for the outcomes. Prints one line per fork and a total.
"""

from __future__ import annotations

import argparse
import sys

import ikigai

QUESTIONS = [
    "Name a prime number between {lo} and {hi}.",
    "Give one word that rhymes with the number {lo}.",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="provider/model/thinking (default: the daemon's)")
    ap.add_argument("--forks", type=int, default=10, help="how many forks (default 10)")
    ap.add_argument("--socket", help="the daemon's control socket")
    args = ap.parse_args(argv)

    with ikigai.connect(args.socket) as c:
        root = c.create(model=args.model, name="fanout-root")["agent"]["uuid"]
        c.ask(root, "You will be asked short questions about numbers. Answer in one line.")
        turns = []
        for i in range(args.forks):
            child = c.fork(root, name=f"fanout-{i}")["agent"]["uuid"]
            question = QUESTIONS[i % len(QUESTIONS)].format(lo=10 * i, hi=10 * i + 10)
            turns.append((i, question, c.prompt(child, question)))
        cost = 0.0
        failed = 0
        for i, question, turn in turns:
            outcome = turn.wait()
            cost += outcome["cost_usd"] or 0.0
            if outcome["status"] != "completed":
                failed += 1
            reply = " ".join(outcome["reply"].split())
            print(f"{i}\t{outcome['status']}\t{question}\t{reply}")
        print(f"{len(turns)} forks, {failed} failed, ${cost:.4f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
