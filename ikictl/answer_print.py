"""``ikictl send --schema``: the parsed answer, printed once the turn ends.
Imported only with --schema (it builds on the stream printer)."""

from __future__ import annotations

import json
import sys
from typing import Any

from ikictl.stream import EventPrinter


class AnswerPrinter(EventPrinter):
    """On a pipe, stdout gets the answer alone, as one line of JSON (the
    model's text, a first answer that was corrected, and every line of ours
    go to stderr). On a terminal the turn streams as usual, and the answer
    follows, indented, when no text showed it (it came through the
    final_result tool)."""

    def __init__(self, *, piped: bool, **kw: Any) -> None:
        super().__init__(sys.stderr if piped else None, **kw)
        self.piped = piped
        self.data_out = sys.stdout

    def finish(self, ev: dict[str, Any], cost: float | None) -> int:
        shown = any(self.reply)
        code = super().finish(ev, cost)
        if ev.get("status") != "completed" or "data" not in ev:
            return code
        if self.piped:
            self.data_out.write(json.dumps(ev["data"], ensure_ascii=False) + "\n")
        elif not shown:
            self.data_out.write(json.dumps(ev["data"], ensure_ascii=False, indent=2) + "\n")
        self.data_out.flush()
        return code


def answer_printer(args: Any, made: EventPrinter, piped: bool) -> EventPrinter:
    """The printer for a --schema turn (``made``: the one without --schema;
    --json and -q print as they do without it)."""
    if made.json_mode or getattr(args, "quiet", False):
        return made
    if piped:
        return AnswerPrinter(piped=True, thinking=made.thinking, live=False)
    return AnswerPrinter(piped=False, color=made.style.color, thinking=made.thinking)
