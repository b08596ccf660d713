"""``ikictl history``: one line a message, ``--tools`` (each turn with its
thinking, tool calls, results and answers) or ``--json`` (every message's
blocks, as ``agent.history`` with ``blocks: true`` answers)."""

from __future__ import annotations

import argparse
import json
import sys

from ikictl import render
from ikictl._errors import EXIT_OK, UsageError
from ikictl.attached_view import attachments_first, file_line
from ikictl.commands import bounded, client
from ikictl.schedule import scheduled

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import Any, TextIO


RESULT_LINES = 10  # of a tool's result, without --full


def cmd_history(args: argparse.Namespace) -> int:
    bounded(args.limit, "--limit", 1)
    bounded(args.before, "--before", 0)
    if args.signatures and not args.json:
        raise UsageError("--signatures goes with --json (the other views never show them)")
    res = client(args).history(
        args.agent,
        limit=args.limit,
        before=args.before,
        blocks=args.json or args.tools,
        signatures=args.signatures,
    )
    if args.json:
        render.dump_json(res)
        return EXIT_OK
    msgs = res.get("messages") or []
    style = render.Style(render.use_color())
    if args.tools:
        tools_view(msgs, sys.stdout, full=args.full, style=style)
    else:
        render.history(attachments_first(msgs), sys.stdout, full=args.full, style=style)
    if res.get("more") and msgs:
        print(f"(older messages: ikictl history {args.agent} --before {msgs[0]['id']})")
    return EXIT_OK


def tools_view(
    rows: list[Any], out: TextIO, *, full: bool = False, style: render.Style | None = None
) -> None:
    """Turn by turn: a separator with the turn's id and status, then each
    message's blocks; a row of no turn (clear, mark...) on its own line."""
    style = style or render.Style(False)
    if not rows:
        out.write("no messages\n")
        return
    turn: object = None
    for row in rows:
        at = row.get("turn")
        if at is not None and at != turn:
            flags = [str(row.get("turn_status") or "?")]
            flags += [f for f in ("inherited", "compacted") if row.get(f)]
            mark = scheduled(row.get("data"))  # a scheduled run's turn
            flags += [mark] if mark else []
            out.write(style(render.CYAN, f"── turn {render.safe_line(at)} · {', '.join(flags)} ──"))
            out.write("\n")
        turn = at
        _row(row, out, full, style)


def _row(row: dict[str, Any], out: TextIO, full: bool, style: render.Style) -> None:
    kind = str(row.get("kind") or "?")
    head = f"#{row.get('id')} {render.safe_line(kind)}"
    if kind == "assistant" and row.get("model"):
        level = f"/{row['thinking_level']}" if row.get("thinking_level") else ""
        head += f" [{render.safe_line(row['model'])}{level}]"
    blocks = row.get("blocks")
    if not isinstance(blocks, list):  # a daemon without blocks: the row's text
        text = str(row.get("content") or "")
        out.write(style(render.BOLD, head) + (f"  {render.one_line(text, 100)}" if text else ""))
        out.write("\n")
        return
    if kind in ("mark", "rewind", "clear") or not blocks:
        text = render.one_line(row.get("content"), 100)
        out.write(style(render.BOLD, head) + (f"  {text}" if text else "") + "\n")
        return
    out.write(style(render.BOLD, head) + "\n")
    for b in blocks:
        for line, code in _block(b, full):
            out.write("    " + (style(code, line) if code else line) + "\n")


def _block(b: dict[str, Any], full: bool) -> list[tuple[str, str]]:
    """The lines of one block, with their style."""
    kind = b.get("type")
    if kind == "text":
        return [(line, "") for line in render.safe(str(b.get("text") or "")).splitlines()]
    if kind == "thinking":
        flags = ["thinking"]
        flags += [f for f in ("signed", "redacted") if b.get(f)]
        text = str(b.get("text") or "")
        head = f"[{', '.join(flags)}]"
        if full:
            return [(head, render.DIM)] + [
                (f"  {line}", render.DIM) for line in render.safe(text).splitlines()
            ]
        return [(f"{head} {render.one_line(text, 100)}".rstrip(), render.DIM)]
    if kind == "tool_call":
        args = json.dumps(b.get("arguments"), ensure_ascii=False)
        name, cid = render.safe_line(b.get("name")), render.safe_line(b.get("id"))
        return [(f"[tool_call {name} {cid}] {render.safe_line(args)}", render.YELLOW)]
    if kind == "tool_result":
        how = "error" if b.get("is_error") else "ok"
        name = render.safe_line(b.get("name") or b.get("tool_call_id"))
        images = b.get("images") or []
        more = f" (+{len(images)} image{'' if len(images) == 1 else 's'})" if images else ""
        code = render.RED if b.get("is_error") else render.YELLOW
        lines = render.safe(str(b.get("content") or "")).splitlines()
        shown = lines if full else lines[:RESULT_LINES]
        out = [(f"[tool_result {name} {how}]{more}", code)]
        out += [(f"  {line}", "") for line in shown]
        if len(shown) < len(lines):
            out.append((f"  … (+{len(lines) - len(shown)} lines; --full shows them)", render.DIM))
        return out
    if kind in ("image", "document"):  # a file attached to the prompt
        return [(file_line(b), render.DIM)]
    return [(f"[{render.safe_line(kind)}]", render.DIM)]
