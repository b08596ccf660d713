"""``ikictl compact`` (and the REPL's ``/compact``): summarize the oldest part
of an agent's context now, so a long conversation can go on. The stored
history keeps every message; only what the model is sent changes.

Exit codes: 0 when a summary was stored and when there was nothing to
compact (that is an answer, not a failure: the line says why); 1 when the
summary failed (the context is unchanged). Ctrl+C stops waiting, not the
compaction: the daemon finishes it (``ikictl watch`` shows its end).
"""

from __future__ import annotations

import argparse
import sys

from ikictl import render
from ikictl._errors import EXIT_ERROR, EXIT_OK
from ikictl.commands import bounded, client

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import TextIO

    from ikictl.client import Client
    from protocol.results import Compacted


def _tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def compact(c: Client, agent: str, keep: int | None, *, who: str) -> Compacted:
    """agent.compact, with a progress line on a terminal meanwhile (the
    summary calls may take a while)."""
    progress = _tty(sys.stderr)
    if progress:
        sys.stderr.write(f"compacting {render.safe_line(who)}… (Ctrl+C stops waiting)")
        sys.stderr.flush()
    try:
        res = c.compact(agent, keep=keep)
    finally:
        if progress:
            sys.stderr.write("\r\x1b[K")  # the line goes: the answer replaces it
            sys.stderr.flush()
    return res


def outcome_text(res: Compacted, who: str) -> tuple[bool, str]:
    """(did it fail, the line to show) of an answer."""
    if res.get("compacted"):
        return False, render.compacted_text(res)
    message = res.get("message")
    if message is not None or res.get("error"):
        spent = ""
        if res.get("cost_usd"):
            spent = f" (the summary calls cost {render.money(res.get('cost_usd'))})"
        why = message or render.error_text(res.get("error"))
        return True, f"{who}: compaction failed, the context is unchanged: {why}{spent}"
    return False, f"{who}: {res.get('reason')}"  # nothing to compact: says why


def cmd_compact(args: argparse.Namespace) -> int:
    bounded(args.keep, "--keep", 0)
    res = compact(client(args), args.agent, args.keep, who=args.agent)
    failed, line = outcome_text(res, args.agent)
    if args.json:
        render.dump_json(res)
        if failed:
            import json

            err = {"message": line, "exit": EXIT_ERROR, "data": res}
            print(json.dumps({"error": err}, ensure_ascii=False), file=sys.stderr)
    elif failed:
        print(f"ikictl: {render.safe(line)}", file=sys.stderr)
    else:
        print(render.safe_line(line))
    return EXIT_ERROR if failed else EXIT_OK
