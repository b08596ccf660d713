"""Tool calls waiting for a person: ``ikictl approvals``, ``approve``, ``deny``,
and the inline question a streaming command asks on a terminal.

An approval is answered on a connection of its own: the streaming one is busy
reading the turn's notifications, and the daemon takes the answer from any
client (a script with ``ikictl approve`` as well as the terminal here).
"""

from __future__ import annotations

import argparse
import json
import sys

import protocol as p
from ikictl import render
from ikictl._errors import EXIT_OK, DaemonUnreachable, UsageError
from ikictl.client import Client, connect

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    from protocol.results import Approval, Approved

    # ikictl.stream's EventPrinter: not imported even for types, stream imports this module
    EventPrinter = Any
    # an answer typed on the terminal: allow?, remembered how, the reason of a denial
    Answer = tuple[bool, Literal["once", "agent", "session"], str | None]


def client(args: argparse.Namespace) -> Client:
    return connect(args.socket, autostart=not args.no_autostart)


PATH_ARGS = ("path", "file_path", "pattern")
SHORTEST = 8  # the id shown: its unique prefix, at least this long (as agents')
MIN_PREFIX = 4  # a shorter reference must be the whole id: a guess must not approve
ANSWERS = {
    "y": "allow",
    "yes": "allow",
    "n": "deny",
    "no": "deny",
    "a": "always",
    "always": "always",
}


def call_text(tool: Any, arguments: Any, width: int | None = None) -> str:
    """What a call does, on one line: the bash command, the path, or the
    arguments as JSON; control characters made visible (untrusted text)."""
    args = arguments if isinstance(arguments, dict) else {}
    if tool == "bash" and isinstance(args.get("command"), str):
        text = args["command"]
    else:
        text = next((args[k] for k in PATH_ARGS if isinstance(args.get(k), str)), None)
        if text is None:
            text = json.dumps(arguments, ensure_ascii=False)
    if width is None:
        return render.safe_line(text)
    return render.one_line(text, width)


def short_ids(ids: list[str]) -> dict[str, str]:
    """Each id's shortest prefix (``SHORTEST`` or more) that no other id shares."""
    out = {}
    for i in ids:
        n = min(SHORTEST, len(i))
        while n < len(i) and any(o != i and o.startswith(i[:n]) for o in ids):
            n += 1
        out[i] = i[:n]
    return out


# ---------------------------------------------------------------- commands


def cmd_approvals(args: argparse.Namespace) -> int:
    rows = client(args).approvals(args.agent)
    if args.json:
        render.dump_json(rows)
        return EXIT_OK
    if not rows:
        print("no tool call is waiting for an answer")
        return EXIT_OK
    short = short_ids([str(r.get("approval")) for r in rows])
    table = [["ID", "AGENT", "TOOL", "WHAT", "RULE", "AGE"]]
    for r in rows:
        table.append(
            [
                short[str(r.get("approval"))],
                str(r.get("agent_name") or str(r.get("agent") or "-")[:SHORTEST]),
                str(r.get("tool")),
                call_text(r.get("tool"), r.get("arguments"), 60),
                f"{r.get('rule')} ({r.get('policy')})",
                age(r.get("created_at")),
            ]
        )
    render.table(table, sys.stdout)
    return EXIT_OK


def age(created: Any) -> str:
    """How long ago, in the largest whole unit (``?`` when the time is unreadable)."""
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(str(created))
    except ValueError:
        return "?"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # the store writes UTC
    s = max(0, int((datetime.now(UTC) - when).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def resolve(c: Client, ref: str) -> tuple[str, Approval | None]:
    """The approval ``ref`` names (the whole id or a unique prefix of a pending
    one) and its pending entry. An id no pending approval has goes to the
    daemon as it is: it says whether it is unknown or already decided, by whom."""
    ref = ref.strip()
    if not ref:
        raise UsageError("give an approval id (`ikictl approvals` lists them)")
    pending = c.approvals()
    exact = [a for a in pending if a.get("approval") == ref]
    hits = exact or (
        [a for a in pending if str(a.get("approval")).startswith(ref)]
        if len(ref) >= MIN_PREFIX
        else []
    )
    if len(hits) == 1:
        return str(hits[0]["approval"]), hits[0]
    if not hits:
        return ref, None
    lines = [f"approval {ref!r} is ambiguous: it starts {len(hits)} pending ones"]
    lines += [
        f"  {a.get('approval')}  {call_text(a.get('tool'), a.get('arguments'), 60)}" for a in hits
    ]
    raise UsageError("\n".join(lines))


def _answer(
    args: argparse.Namespace, send: Callable[[Client, str], Approved], remember: str = "once"
) -> int:
    c = client(args)
    approval, entry = resolve(c, args.approval)
    res = send(c, approval)
    if args.json:
        render.dump_json(res)
        return EXIT_OK
    done = "allowed" if res.get("decision") == "allow" else "denied"
    what = ""
    if entry is not None:
        tool = entry.get("tool")
        what = f": {render.safe_line(tool)} {call_text(tool, entry.get('arguments'), 80)}"
        who = entry.get("agent_name") or res.get("agent")
    else:
        who = res.get("agent")
    print(f"{done} {approval}{what} (agent {render.safe_line(who)}){_remembered(remember)}")
    return EXIT_OK


def _remembered(remember: object) -> str:
    return {
        "agent": "; remembered for this agent",
        "session": "; remembered for every agent until the daemon stops",
    }.get(remember if isinstance(remember, str) else "", "")


def cmd_approve(args: argparse.Namespace) -> int:
    return _answer(args, lambda c, a: c.approve(a, remember=args.remember), args.remember)


def cmd_deny(args: argparse.Namespace) -> int:
    return _answer(args, lambda c, a: c.deny(a, reason=args.reason))


# ---------------------------------------------------------------- inline


def on_event(printer: EventPrinter, ev: dict[str, Any]) -> None:
    """An approval event in a human stream: a decision is one line; a request
    is asked on the terminal, or (no terminal) said with how to answer it."""
    approval = str(ev.get("approval"))
    if ev.get("type") == "approval_decided":
        printer.decided.add(approval)
        printer.note(
            decided_line(ev), render.YELLOW if ev.get("decision") == "allow" else render.RED
        )
        return
    tool = ev.get("tool")
    what = f"{render.safe_line(tool)} {json.dumps(call_text(tool, ev.get('arguments')))}"
    rule = f"rule {render.safe_line(ev.get('rule'))}, policy {render.safe_line(ev.get('policy'))}"
    if approval in printer.decided:  # a replay of one answered since
        return
    term = Terminal.open() if printer.socket else None
    if term is None:
        printer.note(
            f"[approval {approval}: {what} waits ({rule}); answer with "
            f"`ikictl approve {approval}` or `ikictl deny {approval}`]",
            render.YELLOW,
        )
        return
    printer.note(f"[approval {approval}: {rule}]", render.YELLOW)
    with term:
        answer = _ask(term, what)
    if answer is None:
        printer.note(
            f"[not answered here: `ikictl approve {approval}` or `ikictl deny {approval}`]"
        )
        return
    allow, remember, reason = answer
    try:
        with Client.open(printer.socket or "", timeout=5.0) as c:
            if allow:
                c.approve(approval, remember=remember)
            else:
                c.deny(approval, reason=reason)
    except p.RpcError as e:
        printer.note(f"[approval {approval}: {e.message}]", render.RED)
    except (OSError, DaemonUnreachable) as e:
        printer.note(f"[approval {approval}: the answer was not sent: {e}]", render.RED)


def decided_line(ev: dict[str, Any]) -> str:
    done = "allowed" if ev.get("decision") == "allow" else "denied"
    line = f"[{render.safe_line(ev.get('approval'))} {done} by {render.safe_line(ev.get('by'))}"
    if ev.get("reason"):
        line += f": {render.safe_line(ev.get('reason'))}"
    return line + _remembered(ev.get("remember")) + "]"


def _ask(term: Terminal, what: str) -> Answer | None:
    """The answer typed; None at end of input."""
    while True:
        line = term.ask(f"allow {what}? [y]es/[n]o/[a]lways: ")
        if line is None:
            return None
        answer = ANSWERS.get(line.strip().lower())
        if answer == "always":
            return True, "agent", None
        if answer == "allow":
            return True, "once", None
        if answer == "deny":
            reason = term.ask("reason (optional, the model reads it): ")
            return False, "once", (reason or "").strip() or None


class Terminal:
    """Where a person answers: stdin when it is a terminal, else /dev/tty;
    none when output is not a terminal either (a pipe: a script answers)."""

    def __init__(self, tty: Any | None) -> None:
        self.tty = tty  # /dev/tty opened, or None: stdin and stdout

    @classmethod
    def open(cls) -> Terminal | None:
        try:
            if not sys.stdout.isatty():
                return None
            if sys.stdin.isatty():
                return cls(None)
        except (AttributeError, ValueError):
            return None
        try:
            return cls(open("/dev/tty", "r+", encoding="utf-8", errors="replace"))
        except OSError:
            return None

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tty is not None:
            self.tty.close()

    def ask(self, prompt: str) -> str | None:
        """One line typed (None at end of input)."""
        if self.tty is None:
            try:
                line = input(prompt)
            except EOFError:
                print()
                return None
            readline = sys.modules.get("readline")  # the REPL's: keep answers out of its history
            if line and readline is not None and readline.get_current_history_length():
                readline.remove_history_item(readline.get_current_history_length() - 1)
            return line
        self.tty.write(prompt)
        self.tty.flush()
        line = self.tty.readline()
        return line if line else None
