#!/usr/bin/env python3
"""Log every tool call an agent makes, as it happens: one line when it
starts (the tool and its arguments) and one when it ends (ok or error, and
the first line of what it returned).

    python examples/watch_tools.py AGENT              # until the agent ends
    python examples/watch_tools.py AGENT --count 3    # stop after 3 calls

The subscription resumes by itself if this script falls behind; a
``lagged`` event only appears when the daemon no longer has what was missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import ikigai


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agent", help="uuid, unique prefix or name")
    ap.add_argument("--count", type=int, help="stop after this many finished tool calls")
    ap.add_argument("--socket", help="the daemon's control socket")
    args = ap.parse_args(argv)

    done = 0
    with ikigai.connect(args.socket) as c, c.subscribe(args.agent) as events:
        print(f"watching {args.agent}", file=sys.stderr, flush=True)
        for ev in events:
            e = ev["event"]
            stamp = time.strftime("%H:%M:%S")
            if e["type"] == "tool_started":
                args_text = json.dumps(e.get("arguments"), ensure_ascii=False)
                print(f"{stamp} {ev['turn']} call {e['name']} {args_text}", flush=True)
            elif e["type"] == "tool_finished":
                lines = str(e.get("content") or "").strip().splitlines()
                first = lines[0] if lines else ""
                how = "error" if e.get("is_error") else "ok"
                print(f"{stamp} {ev['turn']} {how} {e['name']}: {first}", flush=True)
                done += 1
                if args.count is not None and done >= args.count:
                    return 0
            elif e["type"] == "lagged":
                print(f"{stamp} missed events {e['resume_from']}..{e['oldest_kept'] - 1}")
        print(f"the subscription ended: {events.end_reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
