"""``ikictl top``: every live agent and the provider queues, like htop.

Imported only when the command runs (cli.COMMANDS names it "top:cmd_top"),
so the other commands start no slower for it. Standard library only: a
cbreak terminal (termios/tty), ANSI drawing on the alternate screen, and
select over the keyboard, the socket and a wake-up pipe for SIGWINCH.

Each snapshot is ``fleet.snapshot``. The next is asked for at once with the
last one's ``version`` and ``wait_s`` up to the next refresh: the daemon
answers at the fleet's next change (an agent's state, a provider wait, a
turn's end) or at the refresh, so the view follows events without polling;
a change redraws at most every ``_MIN_GAP_S`` (or --interval, if shorter).
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import time

import protocol as p
from ikictl._errors import EXIT_OK, UsageError
from ikictl.client import Client, connect
from ikictl.render import dump_json, money, ndjson, num, safe_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from protocol.results import FleetAgent, FleetLimiter, FleetSnapshot

__all__ = ["SORTS", "cmd_top", "frame"]

SORTS = ("tree", "cost", "tok/s", "state")
_DEFAULT_INTERVAL = 1.0
_MIN_GAP_S = 0.25  # a change redraws at most this often
_MAX_WAIT_S = 60.0  # fleet.snapshot's bound on wait_s
# the order of the state sort: what needs a look first
_STATE_ORDER = (
    "waiting_for_approval",
    "waiting_for_provider",
    "retrying",
    "compacting",
    "waiting_for_llm",
    "executing_tool",
    "idle",
)
_LABELS = {"waiting_for_llm": "running", "executing_tool": "running tool"}
_ORDINAL = {1: "st", 2: "nd", 3: "rd"}


def cmd_top(args: argparse.Namespace) -> int:
    if args.count is not None and not args.json:
        raise UsageError("--count goes with --json (a live view runs until q)")
    with connect(args.socket, autostart=not args.no_autostart) as c:
        if args.json:
            return _json(c, args.interval, args.count)
        if not sys.stdout.isatty():
            sys.stdout.write("\n".join(frame(c.fleet(), width=None)) + "\n")
            return EXIT_OK
        return _Live(c, args.interval or _DEFAULT_INTERVAL).run()


def _json(c: Client, interval: float | None, count: int | None) -> int:
    if interval is None and count is None:
        dump_json(c.fleet())
        return EXIT_OK
    step = interval or _DEFAULT_INTERVAL
    due = time.monotonic()
    n = 0
    while count is None or n < count:
        ndjson(c.fleet())
        n += 1
        if count is not None and n >= count:
            break
        due += step
        time.sleep(max(0.0, due - time.monotonic()))
    return EXIT_OK


# ---------------------------------------------------------------- the frame


def _state(a: FleetAgent) -> str:
    return _LABELS.get(a["state"], a["state"])


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else _ORDINAL.get(n % 10, 'th')}"


def _waiting(a: FleetAgent) -> str:
    w = a["waiting"]
    text = ""
    if w is not None:
        if w["on"] == "provider":
            text = (
                f"{safe_line(w.get('provider', '?'))}: {_nth(int(w.get('position', 0)))} in line, "
                f"~{float(w.get('expected_wait_s', 0.0)):.0f} s ({w.get('reason', '?')})"
            )
        elif w["on"] == "approval":
            text = f"approval of {safe_line(w.get('tool', '?'))} ({w.get('approval', '')})"
        else:
            text = f"tool {safe_line(w.get('tool', '?'))}"
    if a["queued"]:
        text = f"{text} +{a['queued']} queued".strip()
    return text


def _budget(a: FleetAgent, names: dict[str, str]) -> str:
    b = a["budget"]
    if b is None:
        return ""
    if b["max_cost_usd"] is not None:
        text = f"{money(b['spent_usd'])}/{money(b['max_cost_usd'])}"
    elif b["max_tokens"] is not None:
        text = f"{num(b['spent_tokens'])}/{num(b['max_tokens'])} tok"
    else:
        text = f"{b['spent_turns']}/{b['max_turns']} turns"
    if b["agent"] != a["uuid"]:  # an ancestor's, covering this agent's subtree
        text += f" ({safe_line(names.get(b['agent'], b['name']))}'s)"
    return text


def _ordered(agents: list[FleetAgent], sort: str) -> list[tuple[int, FleetAgent]]:
    """(depth, agent) in the order shown; depth only in the tree sort."""
    if sort == "cost":
        return [(0, a) for a in sorted(agents, key=lambda a: -(a["usage"]["cost_usd"] or 0.0))]
    if sort == "tok/s":
        return [(0, a) for a in sorted(agents, key=lambda a: -a["tokens_per_s"])]
    if sort == "state":
        rank = {s: i for i, s in enumerate(_STATE_ORDER)}
        return [(0, a) for a in sorted(agents, key=lambda a: rank.get(a["state"], 99))]
    live = {a["uuid"] for a in agents}
    children: dict[str | None, list[FleetAgent]] = {}
    for a in agents:  # a parent no longer alive: shown as a root
        children.setdefault(a["parent"] if a["parent"] in live else None, []).append(a)
    out: list[tuple[int, FleetAgent]] = []
    todo = [(0, a) for a in reversed(children.get(None, []))]
    while todo:
        depth, a = todo.pop()
        out.append((depth, a))
        todo.extend((depth + 1, c) for c in reversed(children.get(a["uuid"], [])))
    return out


def _limiter_line(lim: FleetLimiter, keyed: bool) -> str:
    queued = lim["queued"]
    waiting = sum(queued.values())
    parts = ", ".join(f"{k} {v}" for k, v in queued.items())
    name = safe_line(lim["provider"]) + (f" [{lim['key'][:6]}]" if keyed else "")
    line = f"{name}: in flight {lim['in_flight']}/{lim['max_concurrent']}  queued {waiting}"
    if parts:
        line += f" ({parts})"
    if lim["paused_until"] is not None:
        until = time.strftime("%H:%M:%S", time.localtime(lim["paused_until"]))
        line += f"  paused until {until} ({safe_line(lim['pause_reason'] or '?')})"
    for b in lim["buckets"]:
        line += f"  {b['kind']} {b['level']:.0f}/{b['capacity']:.0f}"
    return line


def frame(
    snap: FleetSnapshot,
    *,
    sort: str = "tree",
    tree: str | None = None,
    width: int | None = 120,
    height: int | None = None,
) -> list[str]:
    """The lines of one view of ``snap`` (``width`` None: not cut)."""
    names = {a["uuid"]: a["name"] for a in snap["agents"]}
    agents = [a for a in snap["agents"] if tree is None or a["tree"] == tree]
    counts: dict[str, int] = {}
    for a in snap["agents"]:
        counts[_state(a)] = counts.get(_state(a), 0) + 1
    states = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    shown = "all" if tree is None else safe_line(names.get(tree, tree[:8]))
    when = time.strftime("%H:%M:%S", time.localtime(snap["at"]))
    lines = [
        f"ikictl top  {when}  {len(snap['agents'])} agents ({states or 'none'})"
        f"  sort: {sort}  tree: {shown}  [q quit, s sort, f tree]"
    ]
    providers = [lim["provider"] for lim in snap["limiters"]]
    for lim in snap["limiters"]:
        lines.append(_limiter_line(lim, providers.count(lim["provider"]) > 1))
    if not snap["limiters"]:
        lines.append("no provider calls yet")
    rows = [["AGENT", "ID", "STATE", "MODEL", "TOK/S", "SPEND", "BUDGET", "WAITING ON"]]
    for depth, a in _ordered(agents, sort):
        rows.append(
            [
                "  " * depth + safe_line(a["name"]),
                a["short"],
                _state(a),
                safe_line(f"{a['provider']}/{a['model']}/{a['thinking_level']}"),
                f"{a['tokens_per_s']:.1f}" if a["tokens_per_s"] else "-",
                money(a["usage"]["cost_usd"]),
                _budget(a, names),
                _waiting(a),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines.append("")
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
    lines = [line.rstrip() for line in lines]
    if width is not None:
        lines = [line[:width] for line in lines]
    if height is not None:
        lines = lines[:height]
    return lines


# ---------------------------------------------------------------- the live view


class _Live:
    def __init__(self, c: Client, interval: float) -> None:
        self.c = c
        self.interval = interval
        self.gap = min(interval, _MIN_GAP_S)
        self.sort = SORTS[0]
        self.tree: str | None = None
        self.out = sys.stdout

    def run(self) -> int:
        keys = sys.stdin.fileno() if sys.stdin.isatty() else None
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        saved_attrs = None
        old_wakeup = -1
        old_winch = signal.getsignal(signal.SIGWINCH)
        try:
            if keys is not None:
                import termios
                import tty

                saved_attrs = termios.tcgetattr(keys)
                tty.setcbreak(keys)  # keys one by one, unechoed; Ctrl+C still interrupts
            old_wakeup = signal.set_wakeup_fd(wake_w)
            signal.signal(signal.SIGWINCH, lambda *_: None)  # the byte on wake_r is the news
            self.out.write("\x1b[?1049h\x1b[?25l")  # the alternate screen, no cursor
            return self._loop(keys, wake_r)
        finally:
            self.out.write("\x1b[?25h\x1b[?1049l")
            self.out.flush()
            if saved_attrs is not None and keys is not None:
                import termios

                termios.tcsetattr(keys, termios.TCSADRAIN, saved_attrs)
            signal.signal(signal.SIGWINCH, old_winch)
            signal.set_wakeup_fd(old_wakeup)
            os.close(wake_r)
            os.close(wake_w)

    def _loop(self, keys: int | None, wake: int) -> int:
        c = self.c
        snap = c.fleet()
        self._draw(snap)
        fetched = time.monotonic()
        tick = fetched + self.interval
        pending: int | None = None
        sock = c.sock.fileno()
        while True:
            now = time.monotonic()
            if pending is None and now >= fetched + self.gap:
                wait = min(_MAX_WAIT_S, max(0.0, tick - now))
                params = {"since": snap["version"], "wait_s": round(wait, 3)}
                pending = c.send(p.FLEET_SNAPSHOT, params)
            watched = [wake, *([keys] if keys is not None else [])]
            if pending is not None:
                watched.append(sock)
                timeout = max(0.0, tick - now) + 5.0  # the daemon answers by the tick
            else:
                timeout = max(0.0, fetched + self.gap - now)
            ready, _, _ = select.select(watched, [], [], timeout)
            if wake in ready:
                while True:
                    try:
                        if not os.read(wake, 64):
                            break
                    except BlockingIOError:
                        break
                self._draw(snap)  # a resize (or another signal): draw at the new size
            if keys is not None and keys in ready:
                for ch in os.read(keys, 64).decode(errors="replace"):
                    if ch in "qQ":
                        return EXIT_OK
                    if ch in "sS":
                        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
                    elif ch in "fF":
                        self.tree = self._next_tree(snap)
                self._draw(snap)
            if pending is not None and (sock in ready or not ready):
                try:
                    snap = c.wait_for(pending, timeout=2.0)
                except TimeoutError:
                    continue
                pending = None
                fetched = time.monotonic()
                if fetched >= tick:
                    tick = fetched + self.interval
                self._draw(snap)

    def _next_tree(self, snap: FleetSnapshot) -> str | None:
        trees: list[str] = []
        for a in snap["agents"]:
            if a["tree"] not in trees:
                trees.append(a["tree"])
        if not trees:
            return None
        if self.tree not in trees:
            return trees[0] if self.tree is None else None
        i = trees.index(self.tree)
        return trees[i + 1] if i + 1 < len(trees) else None

    def _draw(self, snap: FleetSnapshot) -> None:
        try:
            size = os.get_terminal_size(self.out.fileno())
            width, height = size.columns, size.lines
        except OSError:
            width, height = 120, 40
        if self.tree is not None and all(a["tree"] != self.tree for a in snap["agents"]):
            self.tree = None  # the tree ended
        lines = frame(snap, sort=self.sort, tree=self.tree, width=width, height=height)
        body = "".join(f"{line}\x1b[K\n" for line in lines[:-1])
        self.out.write(f"\x1b[H{body}{lines[-1] if lines else ''}\x1b[K\x1b[J")
        self.out.flush()
