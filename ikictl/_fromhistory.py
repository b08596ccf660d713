"""Turns the daemon no longer keeps events of, printed from history as the
events they once were (``ikictl watch --from`` after the log moved on)."""

from __future__ import annotations

from ikictl.client import Client

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import Any, Protocol

    from protocol.results import HistoryRow

    class Printer(Protocol):
        """What of ikictl.stream.EventPrinter this uses (not imported: no cycle)."""

        json_mode: bool

        def event(self, params: dict[str, Any]) -> None: ...
        def note(self, text: str, code: str = ...) -> None: ...
        def usage_line(self, status: str, cost: float | None = None) -> str: ...


def older_turns(
    client: Client, printer: Printer, lag: dict[str, Any], kept: list[dict[str, Any]]
) -> str | None:
    """The turns whose events the daemon no longer keeps, printed from history.

    The first kept turn may have lost its start: when its end is kept, it is
    printed from history too and its id returned (its kept events but the end
    are then skipped; the end carries its cost)."""
    agent = str(lag.get("agent") or "")
    started = [q.get("turn") for q in kept if (q.get("event") or {}).get("type") == "turn_started"]
    ended = {q.get("turn") for q in kept if (q.get("event") or {}).get("type") == "turn_ended"}
    # a queued notice carries the turn it queued, which starts later: not a cut turn
    first = next(
        (
            q.get("turn")
            for q in kept
            if q.get("turn") and (q.get("event") or {}).get("type") != "queued"
        ),
        None,
    )
    stop = set(started)
    partial = first if first is not None and first not in stop else None
    if partial is not None and partial not in ended:
        stop.add(partial)  # still running: what the log keeps of it is all there is
        partial = None
    hist = client.history(agent)
    turns = _history_turns([r for r in hist["messages"] if r.get("agent") == agent])
    oldest = (lag.get("event") or {}).get("oldest_kept")
    if not printer.json_mode:
        printer.note(f"[events before seq {oldest} are no longer kept: older turns from history]")
    for turn, user, rows in turns:
        if turn in stop:
            break
        _history_turn(printer, agent, turn, user, rows, last=turn != partial)
    return partial


def _history_turns(
    rows: list[HistoryRow],
) -> list[tuple[str, HistoryRow, list[HistoryRow]]]:
    """(turn id, its prompt row, the rows after it) for each turn in ``rows``."""
    out: list[tuple[str, HistoryRow, list[HistoryRow]]] = []
    for r in rows:
        turn = (r.get("data") or {}).get("turn") if r.get("kind") == "user" else None
        if isinstance(turn, str):
            out.append((turn, r, []))
        elif out:
            out[-1][2].append(r)
    return out


def _history_turn(
    printer: Printer,
    agent: str,
    turn: str,
    user: HistoryRow,
    rows: list[HistoryRow],
    *,
    last: bool,
) -> None:
    """One stored turn as the events it once was (marked ``from_history``);
    ``last``: with its end, else the log's own end follows."""
    answers = [r for r in rows if r.get("kind") == "assistant"]
    first = (answers[0].get("data") or {}) if answers else {}

    def emit(event: dict[str, Any]) -> None:
        printer.event({"agent": agent, "turn": turn, "from_history": True, "event": event})

    emit(
        {
            "type": "turn_started",
            "prompt": user.get("content") or "",
            "provider": first.get("provider"),
            "model": first.get("model"),
            "thinking_level": first.get("thinking_level"),
        }
    )
    usage: dict[str, int] = {}
    for r in answers:
        data = r.get("data") or {}
        if data.get("thinking"):
            emit({"type": "thinking_delta", "index": 0, "text": str(data["thinking"])})
        if r.get("content"):
            emit({"type": "text_delta", "index": 1, "text": str(r["content"])})
        for k, v in (data.get("usage") or {}).items():
            if isinstance(v, int):
                usage[k] = usage.get(k, 0) + v
    emit({"type": "done", "usage": usage})
    if not last:
        return
    cut = any(r.get("kind") == "interrupted" for r in rows)
    status = "interrupted" if cut else "completed" if answers else "ended"
    emit({"type": "turn_ended", "status": status, "usage": usage, "cost_usd": None})
    if not printer.json_mode:
        # history keeps tokens, not the turn's price: the cost stays unknown
        printer.note(printer.usage_line(f"{status}, from history"))
