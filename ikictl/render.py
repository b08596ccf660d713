"""Human output: tables, trees and the streamed turn. Standard library only.

Plain text when stdout is not a terminal (or NO_COLOR is set); dim and color
on a terminal.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # importing typing itself costs every command start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TextIO

    from protocol.results import (
        AgentInfo,
        AllUsage,
        Compacted,
        ContextInfo,
        ExportedAgent,
        HistoryRow,
        ListedAgent,
        ModelRow,
        ShownAgent,
        Status,
        UsageReport,
        UsageTotals,
    )

DIM, BOLD, RED, GREEN, YELLOW, CYAN, RESET = (
    "\x1b[2m", "\x1b[1m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m", "\x1b[0m"
)


def use_color(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if self.color and text else text


def dump_json(value: Any, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def ndjson(value: Any, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    out.write(json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n")
    out.flush()


# ---------------------------------------------------------------- untrusted text

# Text from models, tools and other clients must not drive the terminal: an
# escape sequence could retitle the window, rewrite what was printed or hide
# a line behind a carriage return. Every control character but newline and tab
# is shown as a visible escape instead: C0 and DEL in caret notation (ESC is
# ``^[``), C1 as ``\x9b``. Only for display: stored text and --json stay as
# they are. One table, built once: str.translate keeps streaming fast.
_SAFE: dict[int, str] = {
    **{c: "^" + chr(c + 64) for c in range(0x20) if c not in (0x09, 0x0A)},
    0x7F: "^?",
    **{c: f"\\x{c:02x}" for c in range(0x80, 0xA0)},
}


def safe(text: str) -> str:
    """``text`` with every control character except \\n and \\t made visible."""
    return text.translate(_SAFE)


_SAFE_LINE = {**_SAFE, 0x09: "^I", 0x0A: "^J"}


def safe_line(text: Any) -> str:
    """``safe`` for text that must stay on one line: newlines and tabs made visible too."""
    return str(text).translate(_SAFE_LINE)


# ---------------------------------------------------------------- small formats


def num(n: Any) -> str:
    return f"{int(n or 0):,}"


def money(x: Any) -> str:
    if x is None:  # no price known: never shown as $0
        return "?"
    x = float(x)
    if x == 0:
        return "$0"
    if x < 0.01:
        return f"${x:.4f}"
    return f"${x:.2f}"


def one_line(text: Any, width: int = 80) -> str:
    s = safe(" ".join(str(text or "").split()))
    return s if len(s) <= width else s[: width - 1] + "…"


def label(info: AgentInfo | ExportedAgent) -> str:
    """``name (uuid)`` of an AgentInfo (or an export's agent)."""
    name = info.get("name")
    return f"{name} ({info['uuid']})" if name else info["uuid"]


def model_of(info: AgentInfo) -> str:
    return safe_line(f"{info.get('provider')}/{info.get('model')}")


def next_model_of(info: AgentInfo) -> str:
    """`` -> provider/model/level`` of a queued model switch, or nothing."""
    after = info.get("next_model")
    return f" -> {safe_line(after)}" if after else ""


def thinking_of(info: AgentInfo) -> str:
    """The thinking level, or ``-`` for a model the catalog says cannot think."""
    if info.get("can_think") is False:
        return "-"
    return safe_line(info.get("thinking_level") or "-")


def short_of(info: AgentInfo) -> str:
    """The id to display: the daemon's shortest unique prefix (older daemons: the uuid)."""
    return info.get("short") or info["uuid"]


def state_of(info: AgentInfo) -> str:
    if info.get("status") == "dead":
        return "dead"
    return info.get("state") or info.get("status") or "?"


def table(
    rows: list[list[str]],
    out: TextIO,
    right: set[int] | None = None,
    paint: dict[tuple[int, str], str] | None = None,
) -> None:
    """``paint``: (column, whole text of a cell) -> the style it is drawn in
    (after padding is measured: the escape codes take no column)."""
    right = right or set()
    paint = paint or {}
    rows = [[safe_line(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            pad = " " * (widths[i] - len(c))
            code = paint.get((i, c))
            text = f"{code}{c}{RESET}" if code else c
            cells.append(pad + text if i in right else text + pad)
        out.write("  ".join(cells).rstrip() + "\n")


def policy_of(info: AgentInfo) -> str:
    """The policy an agent's calls answer to: the last of its chain (the
    narrowest), ``YOLO`` when it allows everything."""
    if info.get("yolo"):
        return "YOLO"
    chain = info.get("policy") or []
    return safe_line(chain[-1]) if chain else "default"


def _policies_differ(agents: list[ListedAgent]) -> bool:
    """Is a POLICY column worth its width: some agent is not on plain ``default``."""
    return any(policy_of(a) not in ("-", "default") for a in agents)


# ---------------------------------------------------------------- ls: the tree


def agent_tree(
    agents: list[ListedAgent],
    out: TextIO,
    *,
    mark: str | None = None,
    color: bool = False,
    worktrees: Mapping[str, str] | None = None,
    daemons: Mapping[str, str] | None = None,
) -> None:
    """The tree of agents; a POLICY column when some agent is not on the default policy (YOLO
    in bold red); WORKTREE, DAEMON when ``worktrees``, ``daemons`` (uuid -> cell) have one."""
    if not agents:
        out.write("no agents (create one with `ikictl new`)\n")
        return
    by_uuid = {a["uuid"]: a for a in agents}
    children: dict[str | None, list[ListedAgent]] = {}
    for a in agents:
        parent = a.get("parent")
        children.setdefault(parent if parent in by_uuid else None, []).append(a)
    policies = _policies_differ(agents)
    rows = [["ID", "NAME", "STATE", "MODEL", "THINKING", "TOKENS IN/OUT", "COST"]]
    if policies:
        rows[0].insert(5, "POLICY")
    extra = [(h, c) for h, c in (("WORKTREE", worktrees or {}), ("DAEMON", daemons or {})) if c]
    rows[0] += [h for h, _ in extra]

    def walk(a: ListedAgent, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else prefix + ("└─ " if last else "├─ ")
        usage = a["usage"]
        current = ("* " if a["uuid"] == mark else "  ") if mark else ""
        row = [
            current + branch + short_of(a),
            safe_line(a.get("name") or "-"),
            state_of(a),
            model_of(a) + next_model_of(a),
            thinking_of(a),
            f"{num(usage.get('input_tokens'))}/{num(usage.get('output_tokens'))}",
            money(usage.get("cost_usd")),
        ]
        if policies:
            row.insert(5, policy_of(a))
        row += [cells.get(a["uuid"], "-") for _, cells in extra]
        rows.append(row)
        kids = children.get(a["uuid"], [])
        below = "" if top else prefix + ("   " if last else "│  ")
        for i, k in enumerate(kids):
            walk(k, below, i == len(kids) - 1, False)

    for a in children.get(None, []):
        walk(a, "", True, True)
    right = {6, 7} if policies else {5, 6}
    table(rows, out, right=right, paint={(5, "YOLO"): BOLD + RED} if color else None)


# ---------------------------------------------------------------- show


def show_agent(info: ShownAgent, out: TextIO) -> None:
    usage = info["usage"]
    after = info.get("next_model")
    lines = [
        ("agent", info["uuid"]),
        ("short id", short_of(info)),
        ("name", safe_line(info.get("name") or "-")),
        ("parent", info.get("parent") or "-"),
        ("status", info.get("status")),
        ("state", info.get("state") or "-"),
        ("model", model_of(info)),
        *([("next model", f"{after} (queued behind the running turn)")] if after else []),
        ("thinking", thinking_of(info)),
        ("system", one_line(info.get("system_prompt")) or "-"),
        ("cwd", info.get("cwd") or "- (the daemon's)"),
        *([("policy", chain_text(info))] if "policy" in info else []),
        *([("mcp", mcp_of(info))] if "mcp" in info else []),
        ("current turn", info.get("current_turn") or "-"),
        ("queued", str(info.get("queued", 0))),
        ("created", info.get("created_at")),
    ]
    ended = info.get("ended_at")
    if ended:
        lines.append(("ended", ended))
    lines.append(
        (
            "usage",
            f"{turns_text(usage)} · "
            f"{num(usage.get('input_tokens'))} in / {num(usage.get('output_tokens'))} out · "
            f"{money(usage.get('cost_usd'))}",
        )
    )
    ctx = info.get("context")
    if ctx:
        lines.append(("context", context_text(ctx, info)))
    last = info.get("last_turn")
    if last:
        lines.append(("last turn", f"{last.get('turn')} {last.get('status')}"))
        if last.get("reply"):
            lines.append(("last reply", one_line(last["reply"], 100)))
        if last.get("error"):
            lines.append(("last error", error_text(last["error"])))
    for k, v in lines:
        out.write(f"{k + ':':<14}{safe_line(v)}\n")


def context_text(ctx: ContextInfo, info: AgentInfo) -> str:
    """The context's size against its window, and where the window comes from."""
    source = ctx.get("window_source")
    if source == "default":
        key = f"providers.{info.get('provider')}.models.{info.get('model')}.context_window"
        where = (
            "window: a conservative default for a model the catalog does not know; "
            f"set {key} in config.json"
        )
    elif source == "provider":
        where = "window as the provider's refusal named it"
    else:
        where = f"window from the {source}" if source == "catalog" else f"window from {source}"
    how = "estimated, calibrated by the provider's counts" if ctx.get("calibrated") else "estimated"
    n = ctx.get("messages")
    after = " after a summary" if ctx.get("summarized") else ""
    return (
        f"{num(ctx.get('tokens'))} / {num(ctx.get('window'))} tokens, "
        f"{num(n)} message{'' if n == 1 else 's'}{after} "
        f"({how}; compacts above {num(ctx.get('limit'))}; {where})"
    )


def mcp_of(info: Mapping[str, object]) -> str:
    """The MCP servers an agent may use: ``git, docs``, or ``none``."""
    names = info.get("mcp")
    if not isinstance(names, list) or not names:
        return "none"
    return ", ".join(safe_line(n) for n in names)


def progress_line(ev: Mapping[str, object], width: int = 80) -> str:
    """A tool_progress event on one line of at most ``width`` columns:
    ``⋯ git__log 3/10 (30%) reading commits`` (a value that is not a number is
    left out, not shown as garbage: it comes from the MCP server)."""
    done, total = _number(ev.get("progress")), _number(ev.get("total"))
    amount = "" if done is None else f"{done:g}"
    if done is not None and total is not None:
        amount += f"/{total:g}"
        if 0 <= done <= total and total > 0:
            amount += f" ({100 * done / total:.0f}%)"
    bits = ["⋯", str(ev.get("name") or "tool"), amount, str(ev.get("message") or "")]
    return one_line(" ".join(b for b in bits if b), max(width, 10))  # one_line: made safe


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or abs(value) > 1e15:  # NaN, or a count no tool makes
        return None
    return float(value)


def chain_text(info: AgentInfo) -> str:
    """The whole policy chain, ancestors' first (the strictest answer wins)."""
    chain = info.get("policy") or []
    text = " > ".join(chain) if chain else "default"
    if info.get("yolo"):
        text += "  (YOLO: every tool call runs without asking)"
    return text


def turns_text(usage: Any) -> str:
    """``N turns`` (and the model calls they took, when the daemon counts them)."""
    turns = usage.get("turns")
    text = f"{num(turns)} turn{'' if turns == 1 else 's'}"
    calls = usage.get("calls")
    if calls is not None and calls != turns:
        text += f" ({num(calls)} model call{'' if calls == 1 else 's'})"
    return text


def error_text(err: Any) -> str:
    if isinstance(err, dict):
        where = f"{err['provider']} " if err.get("provider") else ""
        status = f"HTTP {err['http_status']} " if err.get("http_status") else ""
        cat = err.get("category")
        return safe(f"{where}{status}{f'{cat}: ' if cat else ''}{err.get('message', '')}")
    return safe(str(err))


# ---------------------------------------------------------------- compaction


def _count(value: Any) -> str:
    """A count from the daemon, or ``?`` for anything that is not one."""
    return num(value) if isinstance(value, int) and not isinstance(value, bool) else "?"


def _cost(value: Any) -> str:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value == value
    return money(value) if ok and abs(value) < 1e12 else "?"


_ORDINAL = {1: "st", 2: "nd", 3: "rd", 11: "th", 12: "th", 13: "th"}


def compaction_note(ev: dict[str, Any]) -> str:
    """The status line of a compaction_started/_done/_failed or provider_wait event."""
    kind = ev.get("type")
    if kind == "provider_wait":  # e.g. [waiting for anthropic: 3rd in line, ~4 s (rate)]
        n, wait = ev.get("position"), ev.get("expected_wait_s")
        nth = f"{n}{_ORDINAL.get(n % 100 if n % 100 in (11, 12, 13) else n % 10, 'th')}" if isinstance(n, int) and not isinstance(n, bool) else "?"  # noqa: E501
        secs = f", ~{wait:.0f} s" if isinstance(wait, int | float) and 0 <= wait < 1e9 else ""
        return f"[waiting for {safe_line(str(ev.get('provider')))}: {nth} in line{secs} ({safe_line(str(ev.get('reason')))})]"  # noqa: E501
    if kind == "compaction_started":
        return (
            f"[compacting context: {_count(ev.get('messages'))} messages, "
            f"~{_count(ev.get('tokens_before'))} tokens ({ev.get('reason')})…]"
        )
    if kind == "compaction_done":
        return (
            f"[compacted: ~{_count(ev.get('tokens_before'))} → ~{_count(ev.get('tokens_after'))} "
            f"tokens ({_count(ev.get('messages'))} messages summarized by {ev.get('model')}, "
            f"{_cost(ev.get('cost_usd'))})]"
        )
    err = ev.get("error")
    why = ev.get("message") or (error_text(err) if err else "no reason given")
    return f"[compaction failed ({ev.get('reason')}): {why}; the context is unchanged]"


def compacted_text(res: Compacted) -> str:
    """``ikictl compact``'s line when a summary was stored."""
    cost = res.get("cost_usd")
    return (
        f"compacted {_count(res.get('messages'))} messages: ~{_count(res.get('tokens_before'))} "
        f"→ ~{_count(res.get('tokens_after'))} tokens (summary by {res.get('model')}, "
        f"{'cost unknown' if cost is None else _cost(cost)})"
    )


def _compaction_head(data: dict[str, Any]) -> str:
    by = "/".join(str(data[k]) for k in ("summary_provider", "summary_model") if data.get(k))
    return (
        f"── compacted {_count(data.get('messages'))} messages "
        f"(~{_count(data.get('tokens_before'))} → ~{_count(data.get('tokens_after'))} tokens)"
        f"{' by ' + by if by else ''} ──"
    )


# ---------------------------------------------------------------- history


def history(
    messages: list[HistoryRow], out: TextIO, *, full: bool = False, style: Style | None = None
) -> None:
    style = style or Style(False)
    if not messages:
        out.write("no messages\n")
        return
    width = max(len(str(m["id"])) for m in messages)
    for m in messages:
        kind = m.get("kind", "?")
        content = m.get("content") or ""
        data = m.get("data") or {}
        when = safe_line(str(m.get("created_at") or "")[11:19])
        if kind == "assistant":
            bits = [data.get("model") or ""]
            if data.get("thinking_level"):
                bits.append(data["thinking_level"])
            detail = safe_line("/".join(str(b) for b in bits if b))
            if data.get("thinking") and not full:
                detail += " +thinking"
            head = f"assistant [{detail}]" if detail else "assistant"
        elif kind == "compaction":
            # the summary that replaced those messages in the context, under its line
            head = safe_line(_compaction_head(data if isinstance(data, dict) else {}))
            summary = safe(content) if full else one_line(content, 100)
            out.write(f"#{str(m['id']).ljust(width)}  {when}  {style(BOLD, head)}\n")
            for line in summary.splitlines() or [""]:
                out.write(f"{'':>{width + 13}}{style(DIM, line)}\n")
            continue
        elif kind in ("mark", "rewind") and content:
            head = f"{kind} {safe_line(content)}"
            content = ""
        else:
            head = safe_line(kind)
            if data.get("schedule") is not None:  # a scheduled run's prompt says so
                run = f", run {data['schedule_run']}" if data.get("schedule_run") else ""
                head += safe_line(f" [schedule {data['schedule']}{run}]")
        text = safe(content) if full else one_line(content, 100)
        out.write(f"#{str(m['id']).ljust(width)}  {when}  {style(BOLD, head)}")
        out.write(f"  {text}\n" if text else "\n")
        if full and kind == "assistant" and data.get("thinking"):
            for line in safe(str(data["thinking"])).splitlines():
                out.write(f"{'':>{width + 13}}{style(DIM, 'thinking: ' + line)}\n")


# ---------------------------------------------------------------- usage


def usage_report(rep: UsageReport, out: TextIO, *, names: dict[str, str] | None = None) -> None:
    names = names or {}
    who = rep["agent_uuid"]
    name = names.get(who, who)
    n = rep.get("agents")
    scope = ""
    if rep.get("descendants"):
        scope = f" and its descendants ({n} agent{'s' if n != 1 else ''})"
    out.write(f"usage of {safe_line(name)}{scope}\n")
    _usage_table(rep.get("by_model") or [], rep["total"], rep.get("unpriced") or [], out)


def whole_usage(whole: AllUsage, out: TextIO) -> None:
    """The whole database's usage (one report per root agent) as one table."""
    by_model, total, unpriced = merge_reports(whole)
    out.write(f"usage of the whole database ({whole.get('agents', '?')} agents)\n")
    _usage_table(by_model, total, unpriced, out)


def _usage_table(
    by_model: list[UsageTotals], total: UsageTotals, unpriced: list[str], out: TextIO
) -> None:
    rows = [["PROVIDER/MODEL", "TURNS", "INPUT", "OUTPUT", "THINKING", "CACHED", "COST"]]
    for t in by_model:
        rows.append(_usage_row(f"{t.get('provider')}/{t.get('model')}", t))
    rows.append(_usage_row("total", total))
    table(rows, out, right={1, 2, 3, 4, 5, 6})
    if unpriced:
        out.write(f"no price known for: {safe_line(', '.join(unpriced))} (left out of the cost)\n")


def _zero(provider: str | None, model: str | None) -> UsageTotals:
    # cost stays None (printed "-") until some report has a cost to add
    return {
        "provider": provider,
        "model": model,
        "turns": 0,
        "calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "thinking_tokens": 0,
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "cost_usd": None,
    }


def _add(into: UsageTotals, t: UsageTotals) -> None:
    into["turns"] += t["turns"]
    into["calls"] += t.get("calls", 0)
    into["input_tokens"] += t["input_tokens"]
    into["output_tokens"] += t["output_tokens"]
    into["thinking_tokens"] += t["thinking_tokens"]
    into["cached_tokens"] += t["cached_tokens"]
    into["cache_write_tokens"] += t["cache_write_tokens"]
    cost = t["cost_usd"]
    if cost is not None:
        into["cost_usd"] = (into["cost_usd"] or 0) + cost


def merge_reports(whole: AllUsage) -> tuple[list[UsageTotals], UsageTotals, list[str]]:
    """The whole-database answer (one report per root) as one report: its
    rows by model (costliest first), its total and its unpriced models."""
    by: dict[tuple[str | None, str | None], UsageTotals] = {}
    total = _zero(None, None)
    unpriced: list[str] = []
    for r in whole.get("roots") or []:
        for t in r.get("by_model") or []:
            key = (t.get("provider"), t.get("model"))
            _add(by.setdefault(key, _zero(*key)), t)
        _add(total, r["total"])
        unpriced += [u for u in r.get("unpriced") or [] if u not in unpriced]
    rows = sorted(by.values(), key=lambda t: -(t.get("cost_usd") or 0))
    return rows, total, unpriced


def _usage_row(name: str, t: UsageTotals) -> list[str]:
    return [
        name,
        num(t.get("turns")),
        num(t.get("input_tokens")),
        num(t.get("output_tokens")),
        num(t.get("thinking_tokens")),
        num(t.get("cached_tokens")),
        money(t.get("cost_usd")),
    ]


# ---------------------------------------------------------------- status, models


def status(st: Status, out: TextIO) -> None:
    agents = st["agents"]
    up = float(st.get("uptime") or 0)
    h, rem = divmod(int(up), 3600)
    m, s = divmod(rem, 60)
    rows = [
        ("ikigaid", f"{st.get('version')} (pid {st.get('pid')})"),
        ("up", f"{h}h{m:02d}m{s:02d}s"),
        ("socket", st.get("socket")),
        ("database", st.get("database")),
        ("agents", f"{agents.get('running', 0)} running, {agents.get('dead', 0)} dead"),
        ("connections", st.get("connections")),
    ]
    for k, v in rows:
        out.write(f"{k + ':':<13}{v}\n")


def models(rows: list[ModelRow], out: TextIO) -> None:
    out.write(f"{'PROVIDER':<10} {'MODEL':<28} {'CONTEXT':>9} {'OUTPUT':>8}  THINKING (med)\n")
    for m in rows:
        think = str((m.get("thinking") or {}).get("med", "")).removeprefix("Thinking: ")
        out.write(
            f"{m['provider']:<10} {m['model']:<28} {num(m.get('context_window')):>9} "
            f"{num(m.get('max_output_tokens')):>8}  {think}\n"
        )
