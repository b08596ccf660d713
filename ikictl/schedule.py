"""``ikictl schedule add|ls|show|rm|pause|resume|run``: prompts the daemon
sends to an agent on its own, at the times a rule gives (issue 31).

The rule's texts (cron expression, zone, duration, time) are passed to the
daemon as typed: it parses them and names the bad one, so the command line
and every other client are refused with the same words. The parser only
refuses what is about the command line itself (a missing or second rule,
--keep or --budget without --fork, --tz without a rule that has a zone).

Stdlib only at import (ikictl.cli imports this module on every run for its
parser): the client, rendering and datetime are imported by the commands.
"""

from __future__ import annotations

import argparse
import sys

from ikictl._calls import client as _client
from ikictl._calls import json_out as _json
from ikictl._errors import EXIT_OK
from ikictl.budget import _count, _usd

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime, tzinfo
    from typing import Any, TextIO


MISSED = ("skip", "once", "all")
OVERLAP = ("skip", "queue")

DESCRIPTION = """\
Prompts an agent gets on its own, at the times a rule gives: a cron
expression in a time zone, an interval, or once. Schedules are the daemon's
(kept in its database, across restarts); each run is a turn like any other
(the same approvals, budgets and limits), at background priority.

  ikictl schedule add main --cron "0 9 * * 1-5" --tz Europe/Paris "summarize the day"
  ikictl schedule add main --every 10m --name build "check the build"
  ikictl schedule add main --at 2026-12-01T09:00 "send the report"
  ikictl schedule add main --in 2h --fork "try the migration again"
  ikictl schedule ls                 # next run, last run and its turn's status
  ikictl schedule show build         # its runs, newest first, with their turns
  ikictl schedule pause build / resume build / run build / rm build

ID is a schedule's number (the ID column of `schedule ls`) or its name.
`ikictl schedule add --help` says what each option takes."""

ADD_DESCRIPTION = """\
Add a schedule: PROMPT (`-` reads stdin) is sent to AGENT at the times of
exactly one rule:

  --cron EXPR       a 5-field cron expression (minute hour day-of-month month
                    day-of-week) in --tz ZONE: --cron "0 9 * * 1-5" --tz
                    Europe/Paris is 9:00 Paris time, Monday to Friday
  --every DURATION  an interval: whole numbers with a unit s, m, h or d:
                    --every 10m, --every 1h30m, --every 2d (under one minute
                    only with --allow-fast)
  --at TIME         once, at an ISO 8601 date and time: --at 2026-12-01T09:00
                    or "2026-12-01 09:00" (seconds optional); with an offset
                    (+01:00) or Z that instant, otherwise the time in --tz
  --in DURATION     once, that long from now: --in 2h, --in 90s, --in 1d12h

--tz ZONE is an IANA zone name (Europe/Paris, America/New_York, UTC), for
--cron and --at; default: the daemon's local zone.

--missed, for the due times that passed while the daemon was down:
  skip   none of them runs
  once   one run for all of them (the default)
  all    each of them runs (up to the daemon's cap)
--overlap, for a run due while the previous run's turn still runs or waits
(for an approval, say):
  skip   that run is skipped, with the reason (the default)
  queue  it is queued behind the previous one

--fork: each run prompts a fresh fork of AGENT, named after the schedule and
the run (NAME-N; sched3-N for schedule 3 without a name), so runs do not pile
up in one context and AGENT's own is left as it is. With --fork, --keep N
kills all but the N most recent finished forks, and --budget USD is each
fork's own spending limit.

The daemon checks every value: a bad one is refused naming it (exit 2), and
nothing is stored."""


def _id(p: argparse.ArgumentParser) -> None:
    p.add_argument("schedule", metavar="ID", help="the schedule's number or name")


def _action(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    glob: argparse.ArgumentParser,
    name: str,
    help: str,
    description: str,
) -> argparse.ArgumentParser:
    p = sub.add_parser(
        name,
        parents=[glob],
        help=help,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=f"schedule:cmd_{name}")
    return p


def _add_schedule(p: argparse.ArgumentParser, glob: argparse.ArgumentParser) -> None:
    p.description = DESCRIPTION
    sub = p.add_subparsers(dest="schedule_command", metavar="ACTION", required=True)
    add = _action(sub, glob, "add", "add a schedule (cron, every, at or in)", ADD_DESCRIPTION)
    add.usage = (
        "ikictl schedule add AGENT (--cron EXPR [--tz ZONE] | --every DURATION |\n"
        "                           --at TIME [--tz ZONE] | --in DURATION)\n"
        "                           [--fork [--keep N] [--budget USD]] [--name N]\n"
        "                           [--missed skip|once|all] [--overlap skip|queue]\n"
        "                           [--allow-fast] PROMPT"
    )
    add.add_argument("agent", metavar="AGENT", help="uuid, unique uuid prefix or name")
    add.add_argument("prompt", metavar="PROMPT", help="the prompt of each run (`-` reads stdin)")
    rule = add.add_mutually_exclusive_group(required=True)
    rule.add_argument(
        "--cron", metavar="EXPR", help='a 5-field cron expression, e.g. "0 9 * * 1-5"'
    )
    rule.add_argument("--every", metavar="DURATION", help="an interval, e.g. 10m, 1h30m, 2d")
    rule.add_argument(
        "--at", metavar="TIME", help="once, at an ISO 8601 time, e.g. 2026-12-01T09:00"
    )
    rule.add_argument(
        "--in", dest="in_", metavar="DURATION", help="once, that long from now, e.g. 2h"
    )
    add.add_argument("--tz", metavar="ZONE", help="the zone of --cron and --at, e.g. Europe/Paris")
    add.add_argument("--fork", action="store_true", help="each run prompts a fresh fork of AGENT")
    add.add_argument(
        "--keep", type=_count, metavar="N", help="with --fork: keep the N newest finished forks"
    )
    add.add_argument(
        "--budget", type=_usd, metavar="USD", help="with --fork: each fork's own US dollar budget"
    )
    add.add_argument("--name", "-n", help="a name to call the schedule by (besides its ID)")
    add.add_argument(
        "--missed", choices=MISSED, help="due times missed while the daemon was down (default once)"
    )
    add.add_argument(
        "--overlap",
        choices=OVERLAP,
        help="a run due while the previous one still goes (default skip)",
    )
    add.add_argument("--allow-fast", action="store_true", help="allow --every under one minute")
    ls = _action(
        sub,
        glob,
        "ls",
        "the schedules: rule, next run, last run and its turn",
        "List the schedules: ID, NAME, AGENT, RULE, NEXT RUN (local time, and how "
        "far), LAST RUN (when, and its turn's status: completed, running, "
        "waiting_for_approval... or skipped), FIRED/SKIPPED (runs so far) and STATUS "
        "(active, paused, done: a one-shot that fired, removed).",
    )
    ls.add_argument("--all", "-a", action="store_true", help="include removed schedules")
    show = _action(
        sub,
        glob,
        "show",
        "one schedule and its runs, with their turns",
        "Show a schedule's fields, then its runs, newest first: the due time, fired "
        "or skipped (and why), the agent and turn it started, and that turn's status.",
    )
    _id(show)
    show.add_argument(
        "--limit", type=int, metavar="N", help="the N newest runs (default: the daemon's, 50)"
    )
    for name, help, description in (
        (
            "rm",
            "remove a schedule",
            "Remove a schedule: it never fires again (`schedule ls --all` still lists it).",
        ),
        (
            "pause",
            "stop a schedule firing until resumed",
            "Pause a schedule: no run fires "
            "until `schedule resume` (`schedule run` still fires it once).",
        ),
        (
            "resume",
            "let a paused schedule fire again",
            "Resume a paused schedule: prints its next run.",
        ),
        (
            "run",
            "fire a schedule once now",
            "Fire a schedule once now, paused or not: prints "
            "the agent and the turn it started, or why the run was skipped.",
        ),
    ):
        _id(_action(sub, glob, name, help, description))


def _subparser(p: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            found: argparse.ArgumentParser = a.choices[name]
            return found
    return p


def _check_schedule(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What argparse cannot say itself: the options that go with another."""
    if getattr(args, "schedule_command", None) != "add":
        return
    add = _subparser(p, "add")
    if not args.fork:
        if args.keep is not None:
            add.error("--keep goes with --fork (it keeps the N newest forks of the runs)")
        if args.budget is not None:
            add.error("--budget goes with --fork (it is each fork's own budget)")
    if args.tz is not None and args.cron is None and args.at is None:
        what = "--every" if args.every is not None else "--in"
        add.error(f"--tz goes with --cron or --at ({what} does not depend on a time zone)")


# ---------------------------------------------------------------- commands


def cmd_add(args: argparse.Namespace) -> int:
    from ikictl.commands import prompt_text

    prompt = prompt_text(args.prompt) or ""
    res = _client(args).schedule_add(
        args.agent,
        prompt,
        cron=args.cron,
        tz=args.tz,
        every=args.every,
        at=args.at,
        in_=args.in_,
        fork=args.fork,
        keep=args.keep,
        name=args.name,
        missed=args.missed,
        overlap=args.overlap,
        budget_usd=args.budget,
        allow_fast=args.allow_fast,
    )
    if not _json(args, res):
        print(f"added {title(res)}: {_text(res.get('rule'))}; next run {next_text(res)}")
    return EXIT_OK


def cmd_ls(args: argparse.Namespace) -> int:
    from ikictl import render

    rows = _client(args).schedule_list(include_removed=args.all)
    if not _json(args, rows):
        schedules_table(list(rows), sys.stdout, color=render.use_color())
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from ikictl import render
    from ikictl.commands import bounded

    bounded(args.limit, "--limit", 1)
    res = _client(args).schedule_show(args.schedule, limit=args.limit)
    if not _json(args, res):
        show_schedule(res, sys.stdout, color=render.use_color())
    return EXIT_OK


def _one(args: argparse.Namespace, call: str, said: Callable[[Any], str]) -> int:
    """A command on one schedule: the method called, its answer said."""
    res = getattr(_client(args), call)(args.schedule)
    if not _json(args, res):
        print(said(res))
    return EXIT_OK


def cmd_rm(args: argparse.Namespace) -> int:
    return _one(args, "schedule_remove", lambda r: f"removed schedule {_text(r.get('removed'))}")


def cmd_pause(args: argparse.Namespace) -> int:
    return _one(args, "schedule_pause", lambda r: f"paused {title(r)}")


def cmd_resume(args: argparse.Namespace) -> int:
    return _one(args, "schedule_resume", lambda r: f"resumed {title(r)}: next run {next_text(r)}")


def cmd_run(args: argparse.Namespace) -> int:
    return _one(args, "schedule_run", run_text)


# ---------------------------------------------------------------- rendering

# Every text below may come from another client (names, prompts) or from the
# daemon's words (rules, reasons): shown through render's safe helpers only.


def _text(value: Any, default: str = "-") -> str:
    from ikictl import render

    return default if value is None or value == "" else render.safe_line(value)


def _time(value: Any) -> datetime | None:
    """A protocol timestamp (UTC ISO 8601, ``Z``) as an aware datetime; None when none."""
    from datetime import UTC, datetime

    if not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _now(now: datetime | None) -> datetime:
    from datetime import UTC, datetime

    return now or datetime.now(UTC)


def span(seconds: float) -> str:
    """A duration in its two largest units: ``3h 12m``, ``2d 4h``, ``45s``
    (a zero second unit left out: ``3h``)."""
    s = int(abs(seconds))
    units = ((86400, "d"), (3600, "h"), (60, "m"), (1, "s"))
    for i, (size, unit) in enumerate(units):
        if s >= size or size == 1:
            text = f"{s // size}{unit}"
            if size > 1:
                below, name = units[i + 1]
                if (s % size) // below:
                    text += f" {(s % size) // below}{name}"
            return text
    return "0s"


def relative(t: datetime, now: datetime | None = None) -> str:
    """``in 3h 12m``, ``5m ago`` or ``now``."""
    delta = (t - _now(now)).total_seconds()
    if abs(delta) < 1:
        return "now"
    return f"in {span(delta)}" if delta > 0 else f"{span(delta)} ago"


def clock(t: datetime, now: datetime | None = None, tz: tzinfo | None = None) -> str:
    """``t`` in local time (``tz``; default this machine's), as short as it
    can be read: ``09:00`` today, ``Dec 01 09:00`` this year, else the date."""
    local, today = t.astimezone(tz), _now(now).astimezone(tz)
    if local.date() == today.date():
        return local.strftime("%H:%M")
    if local.year == today.year:
        return local.strftime("%b %d %H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


def next_text(s: Mapping[str, Any], now: datetime | None = None, tz: tzinfo | None = None) -> str:
    """``Dec 01 09:00 (in 3h 12m)``; ``-`` when none is due (paused, done, removed)."""
    t = _time(s.get("next_run"))
    if t is None:
        return "-"
    return f"{clock(t, now, tz)} ({relative(t, now)})"


def run_status(run: Mapping[str, Any]) -> str:
    """A run's outcome in a word: its turn's status, or ``skipped``."""
    if run.get("status") == "skipped":
        return "skipped"
    return _text(run.get("turn_status") or run.get("status"), "?")


def last_text(s: Mapping[str, Any], now: datetime | None = None) -> str:
    """``12m ago, completed``: when the last run was, and how its turn is."""
    run = s.get("last_run")
    if not isinstance(run, dict):
        return "-"
    t = _time(run.get("fired_at")) or _time(run.get("due_at"))
    when = relative(t, now) if t else "?"
    return f"{when}, {run_status(run)}"


def agent_text(s: Mapping[str, Any]) -> str:
    """The agent by its name (else the start of its uuid); ``fork of X`` for
    a schedule that forks it each run."""
    who = s.get("agent_name") or str(s.get("agent") or "?")[:8]
    return f"fork of {who}" if s.get("fork") else str(who)


def title(s: Mapping[str, Any]) -> str:
    """``schedule 3 (nightly)``."""
    name = s.get("name")
    head = f"schedule {_text(s.get('id'), '?')}"
    return f"{head} ({_text(name)})" if name else head


def _colors() -> tuple[dict[str, str], dict[str, str]]:
    """The styles of a schedule's status and of a run's outcome."""
    from ikictl import render

    status = {"paused": render.YELLOW, "done": render.DIM, "removed": render.DIM}
    turn = {"error": render.RED, "waiting_for_approval": render.YELLOW, "skipped": render.YELLOW}
    return status, turn


def schedules_table(
    rows: list[Mapping[str, Any]],
    out: TextIO,
    *,
    now: datetime | None = None,
    tz: tzinfo | None = None,
    color: bool = False,
) -> None:
    from ikictl import render

    if not rows:
        out.write(
            "no schedules; add one with\n"
            '  ikictl schedule add AGENT --every 1h "PROMPT"   (ikictl schedule add --help)\n'
        )
        return
    now = _now(now)
    status_colors, turn_colors = _colors()
    table = [["ID", "NAME", "AGENT", "RULE", "NEXT RUN", "LAST RUN", "FIRED/SKIPPED", "STATUS"]]
    paint: dict[tuple[int, str], str] = {}
    for s in rows:
        last = last_text(s, now)
        status = _text(s.get("status"), "?")
        table.append(
            [
                _text(s.get("id"), "?"),
                _text(s.get("name")),
                agent_text(s),
                render.one_line(s.get("rule"), 60) or "-",
                next_text(s, now, tz),
                last,
                f"{_text(s.get('fired'), '0')}/{_text(s.get('skipped'), '0')}",
                status,
            ]
        )
        code = turn_colors.get(last.rsplit(", ", 1)[-1])
        if color and code:
            paint[(5, render.safe_line(last))] = code
        if color and status in status_colors:
            paint[(7, status)] = status_colors[status]
    render.table(table, out, right={0, 6}, paint=paint)


def show_schedule(
    s: Mapping[str, Any],
    out: TextIO,
    *,
    now: datetime | None = None,
    tz: tzinfo | None = None,
    color: bool = False,
) -> None:
    """The schedule's fields, one a line, then its runs (newest first)."""
    from ikictl import render

    now = _now(now)
    agent = s.get("agent_name")
    agent_line = f"{_text(agent)} ({_text(s.get('agent'))})" if agent else _text(s.get("agent"))
    if s.get("fork"):
        bits = ["a fresh fork each run"]
        if s.get("keep") is not None:
            bits.append(f"the {_text(s.get('keep'))} newest kept")
        if s.get("budget_usd") is not None:
            bits.append(f"budget {render.money(s.get('budget_usd'))} each")
        agent_line += f"; {', '.join(bits)}"
    created = _time(s.get("created_at"))
    lines = [
        ("schedule", _text(s.get("id"), "?")),
        ("name", _text(s.get("name"))),
        ("status", _text(s.get("status"), "?")),
        ("agent", agent_line),
        ("rule", _text(s.get("rule"))),
        ("next run", next_text(s, now, tz)),
        ("last run", last_text(s, now)),
        ("runs", f"{_text(s.get('fired'), '0')} fired, {_text(s.get('skipped'), '0')} skipped"),
        ("missed", f"{_text(s.get('missed'))} (due times missed while the daemon was down)"),
        ("overlap", f"{_text(s.get('overlap'))} (a run due while the previous one goes)"),
        ("prompt", render.one_line(s.get("prompt"), 200) or "-"),
        ("created", f"{clock(created, now, tz)} ({relative(created, now)})" if created else "-"),
    ]
    for k, v in lines:
        out.write(f"{k + ':':<11}{v}\n")
    runs = [r for r in s.get("runs") or [] if isinstance(r, dict)]
    out.write("\n")
    if not runs:
        out.write("no runs yet\n")
        return
    turn_colors = _colors()[1]
    table = [["RUN", "DUE", "STATUS", "AGENT", "TURN", "TURN STATUS"]]
    paint: dict[tuple[int, str], str] = {}
    for r in runs:
        due = _time(r.get("due_at"))
        skipped = r.get("status") == "skipped"
        status = _text(r.get("status"), "?")
        if skipped and r.get("reason"):
            status += f": {render.one_line(r.get('reason'), 80)}"
        turn_status = "-" if skipped else _text(r.get("turn_status"))
        table.append(
            [
                _text(r.get("id"), "?"),
                clock(due, now, tz) if due else "?",
                status,
                "-" if skipped else _run_agent(r, s),
                "-" if skipped else _text(r.get("turn")),
                turn_status,
            ]
        )
        if color and turn_status in turn_colors:
            paint[(5, turn_status)] = turn_colors[turn_status]
        if color and skipped:
            paint[(2, render.safe_line(status))] = turn_colors["skipped"]
    render.table(table, out, right={0}, paint=paint)


def _run_agent(run: Mapping[str, Any], s: Mapping[str, Any]) -> str:
    """The schedule's agent by its name; a fork by its whole uuid (the start
    of forks made close together is the same)."""
    agent = run.get("agent")
    if agent and agent == s.get("agent") and s.get("agent_name"):
        return _text(s.get("agent_name"))
    return _text(agent)


def run_text(run: Mapping[str, Any]) -> str:
    """What ``schedule run`` did: the turn it started, or why it did not."""
    head = f"run {_text(run.get('id'), '?')} of schedule {_text(run.get('schedule'), '?')}"
    if run.get("status") == "skipped":
        return f"{head} skipped: {_text(run.get('reason'), 'no reason given')}"
    turn, agent = _text(run.get("turn"), "?"), _text(run.get("agent"), "?")
    status = run.get("turn_status")
    return f"{head}: started turn {turn} on agent {agent}" + (
        f" ({_text(status)})" if status else ""
    )


def scheduled(data: object) -> str:
    """``schedule 3, run 12`` for the turn of a scheduled run in ``ikictl
    history --tools`` (from its user row's data); nothing for any other row."""
    if not isinstance(data, dict) or data.get("schedule") is None:
        return ""
    run = data.get("schedule_run")
    return f"schedule {_text(data['schedule'])}" + (
        f", run {_text(run)}" if run is not None else ""
    )
