"""Streaming a turn to the terminal: ``send``, ``new``/``fork`` with a prompt,
``watch`` and the REPL all print agent events through ``EventPrinter``."""

from __future__ import annotations

import contextlib
import sys

import protocol as p
from ikictl._errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from ikictl.client import Client
from ikictl.render import (
    CYAN,
    DIM,
    RED,
    YELLOW,
    Style,
    compaction_note,
    error_text,
    money,
    ndjson,
    num,
    one_line,
    progress_line,
    safe,
    safe_line,
)
from ikigai._trace import with_trace

ERASE_LINE = "\r\x1b[2K"  # to the line's start, and clear it

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, TextIO

    from protocol.results import Queued, ShownAgent, Subscribed


class EventPrinter:
    """Renders agent events as they arrive (or as NDJSON with ``json_mode``).

    ``side``: where everything but the answer goes (thinking, tool lines,
    notices, the usage line) when it is not ``out``: a pipe then reads only the
    answer's text, exactly as the model wrote it."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        color: bool = False,
        thinking: bool = True,
        json_mode: bool = False,
        headers: bool = False,
        live: bool | None = None,
        side: TextIO | None = None,
    ) -> None:
        self.out = out or sys.stdout
        self.side = self.out if side is None else side
        self.split = self.side is not self.out
        self.side_col0 = True  # the cursor of ``side`` (when split) is at a line's start
        self.answered = False  # some answer text went to ``out`` (split)
        self.next_call = False  # a new model call of the turn started (split)
        # a terminal: progress is a line redrawn in place (None: ask the stream)
        self.live = _isatty(self.out) if live is None else live
        self.transient = False  # a progress line is on screen, to be erased
        self.style = Style(color)
        self.thinking = thinking
        self.json_mode = json_mode
        self.headers = headers  # print turn_started lines (watch)
        self.block: str | None = None  # "thinking" / "text" / None
        self.col0 = True  # the cursor is at the start of a line
        self.usage: dict[str, int] = {}
        self.reply: list[str] = []
        self.abandoned = False  # a second Ctrl+C: stopped waiting for the cancelled turn
        self.socket: str | None = None  # where approvals are answered (run_turn, watch)
        self.decided: set[str] = set()  # approvals answered: a replay must not ask again

    # ------------------------------------------------------------ output

    def _write(self, text: str) -> None:
        if not text:
            return
        if self.transient:  # the progress line gives its place to what comes next
            self.out.write(ERASE_LINE)
            self.transient = False
        self.out.write(text)
        self.col0 = text.endswith("\n")

    def _aside(self, text: str) -> None:
        """What is not the answer: on ``side`` when it is a stream of its own."""
        if not self.split:
            self._write(text)
        elif text:
            self.side.write(text)
            self.side_col0 = text.endswith("\n")

    def _newline(self) -> None:
        if not self.col0:
            self._write("\n")

    def _end_block(self) -> None:
        if self.split:
            # the answer's stream holds the model's text only: no line breaks of ours
            if self.block == "thinking" and not self.side_col0:
                self._aside("\n")
        elif self.block is not None:
            self._newline()
        self.block = None

    def note(self, text: str, code: str = DIM) -> None:
        """One line of our own between the model's output."""
        self._end_block()
        if self.split and not self.side_col0:
            self._aside("\n")
        self._aside(self.style(code, safe_line(text)) + "\n")
        self.side.flush()

    # ------------------------------------------------------------ events

    def reset_turn(self) -> None:
        self.usage = {}
        self.reply = []
        self.block = None

    def event(self, params: dict[str, Any]) -> None:
        if self.json_mode:
            ndjson(params, self.out)
            ev = params.get("event") or {}
            if ev.get("type") == "done":
                self._add_usage(ev.get("usage") or {})
            elif ev.get("type") == "text_delta":
                self.reply.append(ev.get("text", ""))
            return
        ev = params.get("event") or {}
        kind = ev.get("type")
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(ev, params)
        self.out.flush()

    def _add_usage(self, usage: dict[str, Any]) -> None:
        for k, v in usage.items():
            if isinstance(v, int):
                self.usage[k] = self.usage.get(k, 0) + v

    def _on_turn_started(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.reset_turn()
        if self.headers:
            model = f"{ev.get('provider')}/{ev.get('model')}/{ev.get('thinking_level')}"
            self.note(
                f"── turn {params.get('turn')} · {model} · {one_line(ev.get('prompt'), 60)}", CYAN
            )

    def _on_thinking_delta(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        if not self.thinking:
            return
        text = ev.get("text", "")
        if self.block != "thinking":
            self._end_block()
            self.block = "thinking"
            self._aside(self.style(DIM, "thinking: "))
        self._aside(self.style(DIM, safe(text)))
        self.side.flush()

    def _on_text_delta(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        text = ev.get("text", "")
        self.reply.append(text)
        if self.block != "text":
            self._end_block()
            self.block = "text"
        if self.split:  # not a terminal: the text as it is, for the program reading it
            if self.next_call and self.answered and text:
                # a model call after tools: its text is a paragraph of its own
                self._write("\n" if self.col0 else "\n\n")
            if text:
                self.next_call = False
            self._write(text)
            self.answered = self.answered or bool(text)
        else:
            self._write(safe(text))

    def _on_start(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.next_call = True

    def _on_tool_started(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        args = ev.get("arguments") or {}
        if ev.get("name") == "bash" and isinstance(args.get("command"), str):
            summary = "$ " + one_line(args["command"], 100)
        else:
            import json

            summary = one_line(json.dumps(args, ensure_ascii=False), 100)
        self.note(f"[tool {ev.get('name')}] {summary}", YELLOW)

    def _on_tool_finished(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        how = "error" if ev.get("is_error") else "ok"
        content = str(ev.get("content") or "")
        first = content.strip().splitlines()[0] if content.strip() else ""
        more = len(content.strip().splitlines()) - 1
        tail = f" (+{more} lines)" if more > 0 else ""
        self.note(
            f"[tool {ev.get('name')} {how}] {one_line(first, 100)}{tail}",
            RED if ev.get("is_error") else YELLOW,
        )

    def _on_tool_progress(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        """A long tool call's progress: on a terminal one dim line redrawn in
        place (the next output erases it); elsewhere nothing, a log would
        fill with them (--json has every event)."""
        if not self.live or self.split:
            return
        self._end_block()
        line = progress_line(ev, _columns(self.out) - 3)
        self.out.write(ERASE_LINE + "  " + self.style(DIM, line))
        self.transient = True
        self.col0 = True  # what comes next starts where the erased line did

    def _on_approval_requested(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        from ikictl.approvals import on_event  # asks on the terminal, answers on its own line

        on_event(self, ev)

    _on_approval_decided = _on_approval_requested

    def _on_done(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self._add_usage(ev.get("usage") or {})

    def _on_error(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        err = ev.get("error", ev)
        self.note(f"[provider error] {error_text(err)}", RED)

    def _on_retry(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.note(
            f"[retry: attempt {ev.get('attempt')} in {float(ev.get('delay') or 0):.1f} s after "
            f"{error_text(ev.get('error'))}]"
        )

    def _on_fallback(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.note(
            f"[fallback: {ev.get('from_model')} -> {ev.get('to_model')}: "
            f"{error_text(ev.get('error'))}]"
        )

    def _on_notice(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.note(f"[notice] {ev.get('text')}")

    def _on_compaction_started(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.note(compaction_note(ev), YELLOW if ev.get("type") == "compaction_failed" else DIM)

    _on_compaction_done = _on_compaction_failed = _on_provider_wait = _on_compaction_started

    def _on_queued(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.note(f"[queued: {ev.get('position')} turn(s) ahead]")

    def _on_model_switched(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.note(f"[model: {ev.get('description')}]")
        for w in ev.get("warnings") or []:
            self.note(f"note: {w}")

    def _on_lagged(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.note(
            f"[fell behind: events from seq {ev.get('resume_from')} were skipped; "
            "see `ikictl history`]"
        )

    def _on_agent_ended(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self.note(f"[agent ended: {ev.get('reason')}]", RED)

    def _on_turn_ended(self, ev: dict[str, Any], params: dict[str, Any]) -> None:
        self._end_block()

    def usage_line(self, status: str, cost: float | None = None) -> str:
        u = self.usage
        extra = []
        if u.get("thinking_tokens"):
            extra.append(f"{num(u['thinking_tokens'])} thinking")
        if u.get("cached_tokens"):
            extra.append(f"{num(u['cached_tokens'])} cached")
        more = f" ({', '.join(extra)})" if extra else ""
        tokens = f"tokens {num(u.get('input_tokens'))} in / {num(u.get('output_tokens'))} out{more}"
        cost_text = money(cost) if cost is not None else "cost unknown"
        return f"[{status} · {tokens} · {cost_text}]"

    def finish(self, ev: dict[str, Any], cost: float | None) -> int:
        """After turn_ended: the usage line (human) and the exit code."""
        status = ev.get("status", "?")
        if not self.json_mode:
            self._end_block()
            if self.answered and not self.col0:
                self._write("\n")  # the answer's last line, ended for `read` and `wc -l`
            self.answered = False
            code = {"completed": DIM, "error": RED}.get(status, YELLOW)
            self.note(self.usage_line(status, cost), code)
            self.out.flush()
        if status == "completed":
            return EXIT_OK
        if status == "error" or ev.get("error"):
            what = error_text(ev.get("error")) if ev.get("error") else ev.get("message") or "error"
            from ikictl.keys import with_key_hint

            self.fail(with_key_hint(f"the turn ended in error: {what}"), ev)
        elif status == "tool_limit":
            self.fail("the turn stopped at the tool-turn limit", ev)
        elif status == "budget_exceeded":  # the message names the budget and how to raise it
            self.fail(ev.get("message") or "the turn stopped at a budget", ev)
        return EXIT_ERROR

    def fail(self, message: str, ev: dict[str, Any] | None = None) -> None:
        """Why the command exits 1, on stderr: a line, or with --json the one
        error object every ikictl error is (the turn's end event as its data)."""
        if self.json_mode:
            import json

            err: dict[str, Any] = {"message": message, "exit": EXIT_ERROR}
            if ev is not None:
                err["data"] = ev
            print(json.dumps({"error": err}, ensure_ascii=False), file=sys.stderr)
        else:
            print(f"ikictl: {safe(message)}", file=sys.stderr)


def _isatty(out: TextIO) -> bool:
    import os

    if os.environ.get("TERM") == "dumb":  # no cursor control to redraw a line with
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def _columns(out: TextIO) -> int:
    """The terminal's width (80 when it cannot be asked): a progress line
    longer than that would wrap, and only its last row would be erased."""
    import os

    try:
        return os.get_terminal_size(out.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80


def run_turn(
    client: Client,
    agent: str,
    text: str,
    printer: EventPrinter,
    *,
    on_started: Callable[[Queued], object] | None = None,
    **kw: Any,
) -> int:
    """Prompt ``agent`` (``kw``: more agent.prompt params) and print its turn as it streams;
    the exit code. Ctrl+C cancels the turn on the daemon (a second one leaves at once)."""
    # the prompt is sent only once the subscription exists: the daemon answers
    # requests concurrently, so a pipelined prompt could start first and its
    # first events would be missed
    sub_id = client.send(p.AGENT_SUBSCRIBE, {"agent": agent})
    show_id = client.send(p.AGENT_SHOW, {"agent": agent})
    sub: Subscribed = client.wait(sub_id)
    prompt_id = client.send(p.AGENT_PROMPT, with_trace({"agent": agent, "text": text, **kw}, None))
    before: ShownAgent = client.wait(show_id)
    started: Queued = client.wait(prompt_id)
    if on_started is not None:
        on_started(started)
    follow = Follow(before["uuid"], sub["subscription"], started["turn"])
    printer.socket = client.path
    try:
        ended = _follow(client, follow, printer)
    except KeyboardInterrupt:
        ended = interrupt(client, follow, printer)
        if ended is None:
            return EXIT_INTERRUPTED
        _finish(ended, printer)
        return EXIT_INTERRUPTED
    finally:
        _unsubscribe(client, follow.sid)
    if ended is None:
        printer.fail("the agent ended before the turn did")
        return EXIT_ERROR
    return _finish(ended, printer)


def _finish(ended: dict[str, Any], printer: EventPrinter) -> int:
    # turn_ended carries the turn's cost (None when a model used has no price)
    return printer.finish(ended, ended.get("cost_usd"))


def interrupt(client: Client, follow: Follow, printer: EventPrinter) -> dict[str, Any] | None:
    """Ctrl+C during a turn: cancel it on the daemon, then show how it ended
    (up to 5 s; a second Ctrl+C stops waiting). None when we stopped waiting."""
    try:
        if not printer.json_mode:
            printer.note("^C: cancelling the turn (Ctrl+C again to leave at once)", YELLOW)
        client.cancel(follow.agent)
        return _follow(client, follow, printer, timeout=5.0)
    except KeyboardInterrupt:
        printer.abandoned = True
        return None


class Follow:
    """One turn being followed: its subscription (replaced when it lags) and
    whether a gap lost some of its text (then printed from history at the end)."""

    def __init__(self, agent: str, sid: int, turn: str) -> None:
        self.agent = agent
        self.sid = sid
        self.turn = turn
        self.printed: list[str] = []  # text deltas shown before any gap
        self.gap = False


def _follow(
    client: Client, follow: Follow, printer: EventPrinter, timeout: float | None = None
) -> dict[str, Any] | None:
    """Print this turn's events until its turn_ended (returned); None if the
    subscription ends or ``timeout`` passes. A subscription that lags is
    resumed from where it stopped; text the daemon no longer keeps is printed
    from history when the turn ends, so the answer appears whole, once."""
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        msg = client.next_notification(left)
        if msg is None:
            return None
        params = msg.get("params") or {}
        if params.get("subscription") != follow.sid:
            continue
        if msg.get("method") == p.SUBSCRIPTION_END:
            return None
        ev = params.get("event") or {}
        if ev.get("type") == "lagged":
            _resume(client, follow, ev)
            continue
        if params.get("turn") != follow.turn:
            continue
        if ev.get("type") == "text_delta":
            if follow.gap:
                continue  # its place in the answer is unknown: the end prints the rest
            follow.printed.append(ev.get("text", ""))
        if ev.get("type") == "turn_ended" and follow.gap:
            _print_missing(client, follow, printer)
        printer.event(params)
        if ev.get("type") == "turn_ended":
            return ev


def _resume(client: Client, follow: Follow, ev: dict[str, Any]) -> None:
    """Subscribe again from the first event missed (or the oldest still kept)."""
    resume_from = int(ev.get("resume_from") or 1)
    oldest = int(ev.get("oldest_kept") or resume_from)
    if oldest > resume_from:
        follow.gap = True
    _unsubscribe(client, follow.sid)
    follow.sid = _subscribe(client, follow.agent, max(resume_from, oldest))["subscription"]


def _print_missing(client: Client, follow: Follow, printer: EventPrinter) -> None:
    """The turn's text that a gap kept from the screen, from history."""
    hist = client.history(follow.agent, limit=1000)
    rows = hist["messages"]
    start = next(
        (
            i
            for i, r in enumerate(rows)
            if r["kind"] == "user" and (r.get("data") or {}).get("turn") == follow.turn
        ),
        None,
    )
    if start is None:
        printer.note(
            "[fell behind, and this turn's text is no longer in reach; see `ikictl history`]"
        )
        return
    turn_rows = []
    for r in rows[start + 1 :]:
        if r["kind"] == "user":
            break  # the next turn's prompt
        turn_rows.append(r)
    whole = "".join(r["content"] for r in turn_rows if r["kind"] == "assistant")
    shown = "".join(follow.printed)
    rest = whole[len(shown) :] if whole.startswith(shown) else whole
    if rest:
        printer.event(
            {
                "subscription": follow.sid,
                "agent": follow.agent,
                "turn": follow.turn,
                "event": {"type": "text_delta", "index": 0, "text": rest},
            }
        )


def _subscribe(client: Client, agent: str, from_seq: int | None) -> Subscribed:
    """agent.subscribe, its events left in the connection's one queue (read
    here with next_notification). Not ``client.subscribe``, whose Subscription
    routes them apart and resumes after ``lagged`` by itself: a turn followed
    here prints what a gap lost from history, and ``watch --from`` needs the
    answer's ``next_seq`` (where the replay ends)."""
    sub: Subscribed = client.call(p.AGENT_SUBSCRIBE, {"agent": agent, "from_seq": from_seq})
    return sub


def _unsubscribe(client: Client, sid: int) -> None:
    with contextlib.suppress(Exception):
        client.send(p.AGENT_UNSUBSCRIBE, {"subscription": sid})


def watch(
    client: Client, agent: str, printer: EventPrinter, *, from_seq: int | None, until_idle: bool
) -> int:
    """Print an agent's live events until it ends (or, with ``until_idle``, it
    is idle). With ``from_seq`` the kept events from there are replayed first
    (and the turns older than the daemon keeps, from history); ``until_idle``
    then waits for the end of that replay before it looks at the agent."""
    sub = _subscribe(client, agent, from_seq)
    sid = sub["subscription"]
    printer.socket = client.path
    end = int(sub.get("next_seq") or 0)  # the replay is every event before this one
    code = EXIT_OK
    if from_seq is not None and from_seq < end:
        backlog, closed = _backlog(client, sid, end)
        code = _replay(client, printer, backlog)
        if closed is not None:
            return _ended(printer, closed)
    if until_idle and _idle(client, agent):
        return code
    for ended, params in _notifications(client, sid):
        if ended:
            return _ended(printer, params)
        printer.event(params)
        ev = params.get("event") or {}
        if ev.get("type") == "turn_ended":
            code = printer.finish(ev, ev.get("cost_usd"))
            if until_idle and _idle(client, agent):
                return code
    return code  # not reached: the notifications only end with the subscription


def _idle(client: Client, agent: str) -> bool:
    info = client.show(agent)
    return not info.get("current_turn") and not info.get("queued")


def _ended(printer: EventPrinter, params: dict[str, Any]) -> int:
    if not printer.json_mode:
        printer.note(f"[subscription ended: {params.get('reason')}]")
    return EXIT_OK


def _backlog(
    client: Client, sid: int, end: int
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The replayed events (seq below ``end``), read whole before any is shown:
    which turns the daemon still keeps decides what comes from history. The
    second value is the subscription's end, if it came."""
    out: list[dict[str, Any]] = []
    for ended, params in _notifications(client, sid):
        if ended:
            return out, params
        out.append(params)
        if int(params.get("seq") or 0) >= end - 1:
            break
    return out, None


def _notifications(client: Client, sid: int) -> Iterator[tuple[bool, dict[str, Any]]]:
    """(is it the subscription's end, params) of each notification for ``sid``."""
    while True:
        msg = client.next_notification()
        if msg is None:
            continue
        params = msg.get("params") or {}
        if params.get("subscription") == sid:
            yield msg.get("method") == p.SUBSCRIPTION_END, params


def _replay(client: Client, printer: EventPrinter, backlog: list[dict[str, Any]]) -> int:
    """Print the replay; returns the exit code of its last turn."""
    code = EXIT_OK
    evs = [params.get("event") or {} for params in backlog]
    printer.decided |= {str(e.get("approval")) for e in evs if e.get("type") == "approval_decided"}
    skip: str | None = None  # a turn printed from history: only its end comes from the log
    if backlog and (backlog[0].get("event") or {}).get("type") == "lagged":
        lag, backlog = backlog[0], backlog[1:]
        from ikictl._fromhistory import older_turns

        skip = older_turns(client, printer, lag, backlog)
    for params in backlog:
        ev = params.get("event") or {}
        if skip is not None and params.get("turn") == skip and ev.get("type") != "turn_ended":
            continue
        printer.event(params)
        if ev.get("type") == "turn_ended":
            code = printer.finish(ev, ev.get("cost_usd"))
    return code
