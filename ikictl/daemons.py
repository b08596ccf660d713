"""Several daemons on one database (issue 32, docs/cluster.md): ``ikictl
daemons``, ``new --on``, the DAEMON column of ``ls``, the ``daemon:`` line
of ``show``, the cluster lines of ``status`` and the message of
AGENT_UNAVAILABLE.

The daemons place, forward and adopt; this module only asks and shows.
Stdlib only at import (the parsers of new and daemons are built from here,
and cli imports it to word an error): the client and rendering are imported
by the functions that use them.
"""

from __future__ import annotations

import argparse
import sys

from ikictl._errors import EXIT_OK

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TextIO

    from ikictl.client import Client
    from protocol.cluster_results import DaemonRow, DaemonsListed

DAEMONS_DESCRIPTION = """\
A daemon is one ikigaid process. Several of them, on one host or on several,
can share one PostgreSQL database (docs/cluster.md): each agent runs in
exactly one of them at a time, any of them answers every command for every
agent (`ikictl ls` says which daemon runs each), and when one dies the
others adopt its agents within its lease. A daemon on SQLite is alone.

ID is the daemon's id (`*`: the daemon that answered, the one this ikictl
talks to); AGENTS its running agents at its last heartbeat; HEARTBEAT how
long ago it last renewed its lease (by the database's clock); LABELS what
`ikictl new --on LABEL` matches beside its id and host (config cluster.labels).
STATE:
  up        running, holding a lease on its agents, renewed each heartbeat
  draining  stopping: handing its agents to the other daemons first
  stopped   stopped cleanly; the agents it kept wait for it to start again
  lost      its lease ran out (killed, crashed, paused or cut off from the
            database): the others have adopted or are adopting its agents
  up (expired)  no heartbeat within its lease: about to be marked lost
Stopped and lost daemons are listed with --all only. Never starts a daemon
(starting one would add it to the list): exit 3 when none answers."""

ON_HELP = (
    "where the agent runs, among the daemons sharing one PostgreSQL database "
    "(`ikictl daemons` lists them): DAEMON a daemon's id; HOST the daemon on that host "
    "(the one with the fewest running agents if several); LABEL a daemon with that label "
    "(config cluster.labels; the fewest agents wins); any: the live daemon with the fewest "
    "running agents. Default: the daemon asked. One that names no live daemon is refused "
    "(exit 2), listing the live ones"
)


# ---------------------------------------------------------------- parsers


def on_arg(p: argparse.ArgumentParser) -> None:
    """``--on`` of ``new``."""
    p.add_argument("--on", metavar="DAEMON|HOST|LABEL|any", help=ON_HELP)


def add_daemons(p: argparse.ArgumentParser) -> None:
    p.description = DAEMONS_DESCRIPTION
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument(
        "--all",
        "-a",
        action="store_true",
        help="include the stopped and lost daemons",
    )


MOVE_DESCRIPTION = """\
Hand an idle agent to another daemon sharing this database (docs/cluster.md):
its daemon lets it go, the new one takes it up, and its events go on from the
next seq there (a subscriber sees its stream end with "agent moved" and
subscribes again from the next seq). Any daemon can be asked. A busy agent (a
turn running or waiting, a prompt queued) is refused: wait for it or cancel it
first. Prints the agent, where it ran and where it runs now."""


def add_move(p: argparse.ArgumentParser) -> None:
    p.description = MOVE_DESCRIPTION
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("agent", help="the agent: a name, an id or an id prefix")
    p.add_argument(
        "--to",
        required=True,
        metavar="DAEMON|HOST|LABEL|any",
        help="where: a daemon id (ikictl daemons), a host name or a label (the one of them "
        "with the fewest agents), or any (another live daemon with the fewest agents)",
    )


def cmd_move(args: argparse.Namespace) -> int:
    moved = _client(args).move(args.agent, to=args.to)
    from ikictl import render

    if args.json:
        render.dump_json(moved)
    else:
        print(
            f"{render.safe_line(args.agent)} moved from {render.safe_line(moved['moved_from'])}"
            f" to {render.safe_line(moved['to'])}"
            f" (its events go on from seq {moved['next_seq']})"
        )
    return EXIT_OK


# ---------------------------------------------------------------- commands


def _client(args: argparse.Namespace) -> Client:
    from ikictl.client import connect

    return connect(args.socket, autostart=False)


def cmd_daemons(args: argparse.Namespace) -> int:
    listed = _client(args).daemons(include_gone=args.all)
    from ikictl import render

    if args.json:
        render.dump_json(listed)
    else:
        daemons_table(listed, sys.stdout, color=render.use_color())
    return EXIT_OK


def ls_cells(c: Client, agents: list[Any]) -> dict[str, str] | None:
    """For ``ls``: uuid -> the DAEMON cell of each live agent, when the
    listed agents are not all run by the daemon asked; None otherwise.

    Two distinct daemons among the agents say so without asking; one alone
    may be another daemon than the one asked, which ``daemon.status`` (from
    the daemon's memory: cheap) tells. No daemon named (an older daemon, or
    only dead agents): no column, no call."""
    cells = {
        a["uuid"]: a["daemon"]
        for a in agents
        if a.get("status") != "dead" and isinstance(a.get("daemon"), str)
    }
    owners = set(cells.values())
    if not owners:
        return None
    if len(owners) == 1:
        cluster = c.status().get("cluster")
        if not isinstance(cluster, dict) or cluster.get("id") in owners:
            return None
    return cells


# ---------------------------------------------------------------- rendering

# Ids, hosts, labels and versions come from the database, which any daemon
# of it writes: shown through render's safe helpers only.


def heartbeat_text(age: object) -> str:
    """``0.4s ago``, ``12s ago``, ``3m12s ago``, ``2h05m ago``, ``3d04h ago``;
    ``?`` for what is not a number of seconds."""
    if isinstance(age, bool) or not isinstance(age, int | float) or age != age:
        return "?"
    age = max(float(age), 0.0)
    if age >= 1e9:
        return "?"
    if age < 10:
        return f"{age:.1f}s ago"
    s = int(age)
    if s < 60:
        return f"{s}s ago"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s ago"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m ago"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h ago"


def state_text(row: Mapping[str, Any]) -> str:
    """The STATE cell: the state, ``(expired)`` after a live one whose lease ran out."""
    state = str(row.get("state") or "?")
    if row.get("expired") and state in ("up", "draining"):
        return f"{state} (expired)"
    return state


def _labels(value: object) -> str:
    if not isinstance(value, list) or not value:
        return "-"
    return ",".join(str(v) for v in value)


def _cell(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def daemons_table(listed: DaemonsListed, out: TextIO, *, color: bool = False) -> None:
    """``ikictl daemons``: one row per daemon, the one that answered marked ``*``."""
    from ikictl import render

    rows: list[DaemonRow] = [d for d in listed.get("daemons") or [] if isinstance(d, dict)]
    if not rows:
        out.write("no daemons listed\n")
        return
    me = listed.get("self")
    table = [["ID", "HOST", "PID", "STATE", "AGENTS", "HEARTBEAT", "VERSION", "LABELS"]]
    for d in rows:
        mark = " *" if d.get("self") or (me is not None and d.get("id") == me) else ""
        table.append(
            [
                _cell(d.get("id")) + mark,
                _cell(d.get("host")),
                _cell(d.get("pid")),
                state_text(d),
                _cell(d.get("agents")),
                heartbeat_text(d.get("heartbeat_age")),
                _cell(d.get("version")),
                _labels(d.get("labels")),
            ]
        )
    paint: dict[tuple[int, str], str] = {}
    if color:
        for bad in ("lost", "up (expired)", "draining (expired)"):
            paint[(3, bad)] = render.RED
        paint[(3, "draining")] = render.YELLOW
        paint[(3, "stopped")] = render.DIM
    render.table(table, out, right={2, 4}, paint=paint)


def show_line(info: Mapping[str, Any], out: TextIO) -> None:
    """``show``'s ``daemon:`` line (none from a daemon that does not say)."""
    if "daemon" not in info:
        return
    from ikictl import render

    daemon = info.get("daemon")
    text = daemon or "-"
    if daemon is None and info.get("status") != "dead":
        text = "none at the moment (its daemon was lost: another adopts it within the lease)"
    out.write(f"{'daemon:':<14}{render.safe_line(text)}\n")


def status_lines(st: Mapping[str, Any], out: TextIO) -> None:
    """``status``'s lines about this daemon among those sharing its database
    and its traces (a Status; none from a daemon older than those objects)."""
    from ikictl import render

    for k, v in [*_cluster_rows(st.get("cluster")), *_traces_rows(st.get("traces"))]:
        out.write(f"{k + ':':<13}{render.safe_line(v)}\n")


def _traces_rows(traces: object) -> list[tuple[str, str]]:
    if not isinstance(traces, dict):
        return []
    if traces.get("enabled"):
        return [("traces", f"on, to {traces.get('endpoint') or 'the OTEL_* default'}")]
    return [("traces", f"off ({traces.get('why')})")]


def _cluster_rows(cluster: object) -> list[tuple[str, str]]:
    if not isinstance(cluster, dict):
        return []
    labels = cluster.get("labels") or []
    rows = [("daemon", f"{cluster.get('id')}" + (f" (labels {_labels(labels)})" if labels else ""))]
    if cluster.get("shared"):
        lease, beat = _seconds(cluster.get("lease")), _seconds(cluster.get("heartbeat"))
        rows.append(("cluster", f"shared database: lease {lease}, heartbeat every {beat}"))
        held = cluster.get("lease_held")
        rows.append(
            (
                "lease",
                "held"
                if held
                else "NOT held: cut off from the database, its agents are stopped "
                "(the other daemons adopt them)",
            )
        )
    return rows


def _seconds(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "?"
    return f"{value:g} s"


def unavailable_text(message: str, data: object) -> str:
    """AGENT_UNAVAILABLE (-32009) on one line: the daemon's words (they say
    whether to try again), the daemon it names, and where to look."""
    text = " ".join(str(message).split())
    daemon = data.get("daemon") if isinstance(data, dict) else None
    if isinstance(daemon, str) and daemon and daemon not in text:
        text += f" (daemon {daemon})"
    return f"{text} (`ikictl daemons --all` shows the daemons and their states)"
