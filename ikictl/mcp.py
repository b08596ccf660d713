"""``ikictl mcp ls|tools|restart|prompts|watch``: the MCP servers the daemon
runs for its agents (config.json ``mcp_servers``), as the daemon sees them.

Every text here comes from config.json or from the MCP servers themselves
(names, descriptions, error messages): it is shown through ``render``'s safe
helpers, never as it came.
"""

from __future__ import annotations

import argparse
import sys

import protocol as p
from ikictl import render
from ikictl._errors import EXIT_OK
from ikictl.client import Client, connect

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

STATE_COLORS = {
    "ready": render.GREEN,
    "starting": render.YELLOW,
    "restarting": render.YELLOW,
    "failed": render.RED,
}


def client(args: argparse.Namespace) -> Client:
    return connect(args.socket, autostart=not args.no_autostart)


def _rows(res: Any, key: str) -> list[dict[str, Any]]:
    """The list under ``key`` of an answer (or the answer itself when it is
    the list); entries that are not objects are left out."""
    rows = res.get(key) if isinstance(res, dict) else res
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _text(value: Any, default: str = "-") -> str:
    return default if value is None or value == "" else render.safe_line(value)


def _count(value: Any) -> str:
    ok = isinstance(value, int) and not isinstance(value, bool)
    return str(value) if ok else "-"


def ago(since: Any, now: float | None = None) -> str:
    """How long ago a unix time was, in its largest whole unit (``-``: none given)."""
    import time

    if isinstance(since, bool) or not isinstance(since, int | float) or since != since:
        return "-"
    s = int(max(0.0, min((now if now is not None else time.time()) - since, 1e12)))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def describe(st: Mapping[str, Any]) -> str:
    """A server's state in words: ``ready (pid 4242, 5 tools)``, ``failed: WHY``."""
    state = _text(st.get("state"), "?")
    bits = []
    if st.get("pid") is not None:
        bits.append(f"pid {_count(st.get('pid'))}")
    if state == "ready":
        tools = st.get("tools")
        bits.append(f"{_count(tools)} tool{'' if tools == 1 else 's'}")
    n = st.get("restarts")
    if n:
        bits.append(f"{_count(n)} restart{'' if n == 1 else 's'}")
    text = f"{state} ({', '.join(bits)})" if bits else state
    if st.get("last_error") and state != "ready":
        why = render.one_line(st.get("last_error"), 200)
        # only a failed server's error is why it is in that state
        text += f": {why}" if state == "failed" else f"; last error: {why}"
    return text


# ---------------------------------------------------------------- ls


def cmd_ls(args: argparse.Namespace) -> int:
    res = client(args).mcp_servers()
    if args.json:
        render.dump_json(res)
        return EXIT_OK
    servers_table(_rows(res, "servers"), sys.stdout, long=args.long, color=render.use_color())
    return EXIT_OK


def servers_table(
    servers: list[dict[str, Any]], out: Any, *, long: bool = False, color: bool = False
) -> None:
    if not servers:
        out.write('no MCP servers are configured ("mcp_servers" in config.json)\n')
        return
    head = ["NAME", "STATE", "PID", "TOOLS", "RESTARTS", "SINCE"]
    rows = [head + (["TRANSPORT", "TARGET", "ERROR"] if long else ["ERROR"])]
    for s in servers:
        ready = s.get("state") == "ready"
        row = [
            _text(s.get("name"), "?"),
            _text(s.get("state"), "?"),
            _count(s.get("pid")),
            _count(s.get("tools")) if ready else "-",
            _count(s.get("restarts")),
            ago(s.get("since")),
        ]
        if long:
            row += [_text(s.get("transport")), _text(s.get("target"))]
        row.append(render.one_line(s.get("last_error"), 200 if long else 60) or "-")
        rows.append(row)
    paint = {(1, state): code for state, code in STATE_COLORS.items()} if color else None
    render.table(rows, out, right={2, 3, 4, 5}, paint=paint)


# ---------------------------------------------------------------- tools


def cmd_tools(args: argparse.Namespace) -> int:
    res = client(args).mcp_tools(args.server)
    if args.json:
        render.dump_json(res)
        return EXIT_OK
    tools_table(args.server, _rows(res, "tools"), sys.stdout)
    return EXIT_OK


def first_line(text: Any, width: int = 80) -> str:
    lines = [ln for ln in str(text or "").splitlines() if ln.strip()]
    return render.one_line(lines[0], width) if lines else ""


def tools_table(server: str, tools: list[dict[str, Any]], out: Any) -> None:
    """The tools offered (by the name the model calls them), then the ones
    that are not, with why."""
    name = render.safe_line(server)
    if not tools:
        out.write(f"{name} has no tools\n")
        return
    offered = [t for t in tools if not t.get("rejected")]
    rejected = [t for t in tools if t.get("rejected")]
    if offered:
        rows = [["TOOL", "DESCRIPTION"]]
        rows += [[_text(t.get("exposed"), "?"), first_line(t.get("description"))] for t in offered]
        render.table(rows, out)
    else:
        out.write(f"{name} offers no tool to the models\n")
    if rejected:
        out.write(f"\nnot offered to the models ({len(rejected)}):\n")
        rows = [["TOOL", "WHY"]]
        rows += [
            [_text(t.get("name"), "?"), render.one_line(t.get("rejected"), 100)] for t in rejected
        ]
        render.table(rows, out)


# ---------------------------------------------------------------- restart, prompts


def cmd_restart(args: argparse.Namespace) -> int:
    res = client(args).mcp_restart(args.server)
    if args.json:
        render.dump_json(res)
        return EXIT_OK
    st = res if isinstance(res, dict) else {}
    who = _text(st.get("name") or args.server, "?")
    print(f"restarted {who}: {describe(st)}")
    return EXIT_OK


def cmd_prompts(args: argparse.Namespace) -> int:
    res = client(args).mcp_prompts(args.server)
    if args.json:
        render.dump_json(res)
        return EXIT_OK
    prompts_table(args.server, _rows(res, "prompts"), sys.stdout)
    return EXIT_OK


def arguments_text(arguments: Any) -> str:
    """A prompt's arguments: required ones bare, optional ones ``[in brackets]``."""
    out = []
    for a in arguments if isinstance(arguments, list) else []:
        if isinstance(a, dict):
            name = _text(a.get("name"), "?")
            out.append(name if a.get("required") else f"[{name}]")
    return " ".join(out) or "-"


def prompts_table(server: str, prompts: list[dict[str, Any]], out: Any) -> None:
    if not prompts:
        out.write(f"{render.safe_line(server)} has no prompts\n")
        return
    rows = [["PROMPT", "ARGUMENTS", "DESCRIPTION"]]
    for pr in prompts:
        rows.append(
            [
                _text(pr.get("name"), "?"),
                arguments_text(pr.get("arguments")),
                first_line(pr.get("description")),
            ]
        )
    render.table(rows, out)


# ---------------------------------------------------------------- watch


def cmd_watch(args: argparse.Namespace) -> int:
    """The servers' states, then each change until Ctrl+C (or the daemon
    stops). Subscribed before the states are read: no change falls between."""
    c = client(args)
    _subscribe(c, args)
    while True:
        msg = c.next_notification()
        if msg is None or msg.get("method") != p.DAEMON_EVENT:
            continue
        params = msg.get("params")
        ev = params.get("event") if isinstance(params, dict) else None
        if not isinstance(ev, dict):
            continue
        if ev.get("type") == "lagged":
            # we fell behind and the daemon ended the subscription: start over
            if args.json:
                render.ndjson(params)
            else:
                print("(fell behind: some changes were missed; the states now:)")
            _subscribe(c, args)
            continue
        if ev.get("type") != "mcp_server":
            continue
        if args.server is not None and ev.get("name") != args.server:
            continue
        if args.json:
            render.ndjson(params)
        else:
            print(state_event_line(ev), flush=True)


def _subscribe(c: Client, args: argparse.Namespace) -> None:
    """Subscribe; without --json print each server's state as it is now.

    daemon.subscribe by name: the client has no method for it, as its events
    are no subscription's (read here from the connection's one queue, which
    the async client does not keep)."""
    c.call(p.DAEMON_SUBSCRIBE)
    if args.json:
        return
    for s in _rows(c.mcp_servers(), "servers"):
        if args.server is None or s.get("name") == args.server:
            print(state_event_line(s))
    sys.stdout.flush()


def state_event_line(st: dict[str, Any]) -> str:
    """``12:04:05 git ready (pid 4242, 5 tools)``: the time of the change."""
    import time

    since = st.get("since")
    ok = isinstance(since, int | float) and not isinstance(since, bool) and 0 <= since < 1e11
    when = time.strftime("%H:%M:%S", time.localtime(since)) if ok else "--:--:--"
    return f"{when} {_text(st.get('name'), '?')} {describe(st)}"


# ---------------------------------------------------------------- completion


def cmd_servers_for_completion(args: argparse.Namespace) -> int:
    """The configured servers' names, one a line (for shell completion)."""
    from ikictl.client import default_socket

    try:
        with Client.open(default_socket(args.socket), timeout=0.5) as c:
            res = c.mcp_servers()
    except Exception:
        return EXIT_OK
    for s in _rows(res, "servers"):
        if isinstance(s.get("name"), str):
            print(s["name"])
    return EXIT_OK
