"""``ikictl export`` and ``ikictl import``: an agent and its whole history
(a fork's inherited part included) as one JSON document the daemon writes
and reads back, or as a Markdown transcript for people."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from ikictl import render
from ikictl._errors import EXIT_OK, UsageError
from ikictl.commands import client

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FORMAT = "ikigai-agent"  # the export's "format" field


def cmd_export(args: argparse.Namespace) -> int:
    doc = client(args).export(args.agent, signatures=not args.no_signatures)
    if args.format == "markdown" and not args.json:
        text = markdown(doc)
    else:
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if args.output is None or args.output == "-":
        sys.stdout.write(text)
        return EXIT_OK
    _write(args.output, text)
    if not args.json:
        n = len(doc.get("messages") or [])
        who = render.label(doc["agent"])
        print(
            f"exported {render.safe_line(who)}: {n} message{'' if n == 1 else 's'} -> {args.output}"
        )
    return EXIT_OK


def _write(path: str, text: str) -> None:
    """The whole file or none of it: a new file beside, renamed over PATH."""
    path = os.path.expanduser(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def cmd_import(args: argparse.Namespace) -> int:
    doc = read_export(args.file)
    res = client(args).import_agent(doc, name=args.name)
    info = res["agent"]
    if args.quiet:
        print(info["uuid"])
    elif args.json:
        render.dump_json(res)
    else:
        n = len(doc.get("messages") or [])
        print(
            f"imported {render.safe_line(render.label(info))} · {res['model'].get('description')}"
            f" · {n} message{'' if n == 1 else 's'}"
        )
        for w in res["model"].get("warnings") or []:
            print(f"note: {w}")
    return EXIT_OK


def read_export(name: str) -> dict[str, Any]:
    """FILE (``-``: stdin) as an export document, or a UsageError saying
    what it is instead."""
    where = "stdin" if name == "-" else name
    try:
        raw = sys.stdin.buffer.read() if name == "-" else _read(name)
    except OSError as e:
        raise UsageError(f"cannot read {name}: {e.strerror or e}") from None
    try:
        doc = json.loads(raw)
    except UnicodeDecodeError:
        raise UsageError(f"{where} is not UTF-8 text: import takes the json export") from None
    except ValueError as e:
        head = raw.lstrip()[:1]
        if head == b"#" or b"\n## " in raw[:65536]:
            raise UsageError(
                f"{where} looks like the markdown transcript: import takes the json export "
                "(`ikictl export AGENT`, without --format markdown)"
            ) from None
        raise UsageError(
            f"{where} is not JSON ({e}): import takes the json export (`ikictl export AGENT`)"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        kind = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise UsageError(
            f"{where} is not an ikigai export (format {render.safe_line(repr(kind))}, "
            f"not {FORMAT!r}): import takes the json export (`ikictl export AGENT`)"
        )
    return doc


def _read(name: str) -> bytes:
    with open(os.path.expanduser(name), "rb") as f:
        return f.read()


# ---------------------------------------------------------------- markdown


def markdown(doc: Mapping[str, Any]) -> str:
    """A transcript to read: a header with the agent and its model, then each
    prompt, the thinking as a quote, tool calls and results fenced, answers."""
    a = doc.get("agent") or {}
    name = a.get("name") or a.get("uuid") or "agent"
    level = f"/{a['thinking_level']}" if a.get("thinking_level") else ""
    out = [f"# {_md(name)}", ""]
    facts = [
        ("agent", a.get("uuid")),
        ("model", f"{a.get('provider')}/{a.get('model')}{level}"),
        ("parent", a.get("parent")),
        ("created", a.get("created_at")),
        ("exported", doc.get("exported_at")),
        ("cwd", a.get("cwd")),
    ]
    out += [f"- {k}: `{_md(v)}`" for k, v in facts if v]
    rows = doc.get("messages") or []
    if a.get("system_prompt") and not any(m.get("kind") == "system" for m in rows):
        out += ["", "## System prompt", "", *_quote(str(a["system_prompt"]))]
    turn = 0
    for m in rows:
        kind = m.get("kind")
        blocks = _blocks(m)
        if kind == "tool_call":
            continue  # the call is in the answer before it, with its arguments
        if kind == "system":  # where the system prompt was set (or changed)
            text = str(m.get("content") or "")
            out += ["", "## System prompt", "", *(_quote(text) if text else ["*(cleared)*"])]
        elif kind == "user":
            turn += 1
            out += ["", f"## {turn}. Prompt", "", *_texts(blocks, m)]
        elif kind == "assistant":
            data = m.get("data") or {}
            model = data.get("model") or (m.get("message") or {}).get("model")
            head = f"### Answer ({_md(model)})" if model else "### Answer"
            out += ["", head, ""]
            out += _assistant(blocks, m)
        elif kind == "tool_result":
            for b in blocks:
                if b.get("type") == "tool_result":
                    how = "error" if b.get("is_error") else "ok"
                    who = b.get("name") or b.get("tool_call_id")
                    out += ["", f"**Result** of `{_md(who)}` ({how}):", ""]
                    out += _fenced(str(b.get("content") or ""), "")
        else:
            out += ["", f"*— {_md(kind)}{': ' + _md(m['content']) if m.get('content') else ''} —*"]
    return "\n".join(_single_blanks(out)).strip("\n") + "\n"


def _single_blanks(lines: list[str]) -> list[str]:
    """No two blank lines in a row, but inside a fenced block as they are."""
    out: list[str] = []
    fence = ""
    for line in lines:
        if fence:
            if line == fence:
                fence = ""
        elif line.startswith("```"):
            fence = line[: len(line) - len(line.lstrip("`"))]
        elif not line and out and not out[-1]:
            continue
        out.append(line)
    return out


def _blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
    msg = m.get("message")
    if isinstance(msg, str):
        try:
            msg = json.loads(msg)
        except ValueError:
            msg = None
    content = msg.get("content") if isinstance(msg, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _texts(blocks: list[dict[str, Any]], m: dict[str, Any]) -> list[str]:
    texts = [str(b.get("text") or "") for b in blocks if b.get("type") == "text"]
    return render.safe("\n\n".join(texts) if blocks else str(m.get("content") or "")).split("\n")


def _assistant(blocks: list[dict[str, Any]], m: dict[str, Any]) -> list[str]:
    if not blocks:
        return _texts(blocks, m)
    out: list[str] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "thinking":
            text = "(redacted)" if b.get("redacted") else str(b.get("text") or "")
            out += ["> **Thinking**", ">", *_quote(text), ""]
        elif kind == "text":
            out += [*render.safe(str(b.get("text") or "")).split("\n"), ""]
        elif kind == "tool_call":
            args = json.dumps(b.get("arguments") or {}, indent=2, ensure_ascii=False)
            out += [f"**Tool call** `{_md(b.get('name'))}` (`{_md(b.get('id'))}`):", ""]
            out += [*_fenced(args, "json"), ""]
    return out


def _quote(text: str) -> list[str]:
    return [f"> {line}".rstrip() for line in render.safe(text).split("\n")]


def _fenced(text: str, lang: str) -> list[str]:
    """A code block whose fence no backtick run inside can close."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, *render.safe(text).split("\n"), fence]


def _md(value: object) -> str:
    """A short value inside Markdown's inline code or a heading: one line."""
    return render.safe_line(str(value)).replace("`", "'")
