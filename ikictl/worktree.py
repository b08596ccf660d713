"""Git worktrees of agents (issue 36): ``--worktree`` of ``new`` and
``fork``, the WORKTREE column of ``ls``, the worktree block of ``show``,
and ``diff``, ``merge`` and ``worktrees``.

The daemon makes, looks at, merges and prunes the worktrees; this module
only asks and shows. Stdlib only at import (the parsers of new, fork,
diff, merge and worktrees are built from here): the client and rendering
are imported by the functions that use them. It imports no other module of
ikictl's but ``_errors`` (those import it).
"""

from __future__ import annotations

import argparse
import sys

from ikictl._calls import client as _client
from ikictl._calls import json_out as _json
from ikictl._errors import EXIT_OK

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TextIO

    from ikictl.client import Client

DIFF_DESCRIPTION = """\
Print an agent's changes in its git worktree against the commit it started
from (its base): what it committed and what it did not, new files too, as
one patch (`git apply` takes it). The worktree's own index is not touched.
On a terminal the lines are colored; on a pipe the patch is printed as is.
An agent made without --worktree has no worktree: exit 2."""

MERGE_DESCRIPTION = """\
Merge an agent's worktree branch into INTO (default: the branch checked out
in the parent's checkout, the folder the worktree was made from), in the
checkout that has INTO checked out. Nothing is done unless that checkout is
clean (no uncommitted changes): exit 2, saying so. Only commits are merged:
changes the agent did not commit stay in its worktree (`ikictl diff` shows
them).

On a conflict git's merge is undone: the checkout is left exactly as it
was, git's message and the conflicting paths are printed on stderr, and the
exit code is 5. Resolve it by hand (git merge BRANCH in that checkout), or
have the agent rebase its branch on INTO first."""

WORKTREES_DESCRIPTION = """\
List the agents' git worktrees, live and dead agents' (until pruned):
AGENT, STATE (alive or dead), BRANCH, BASE (the commit it started from),
AHEAD (commits on the branch that BASE lacks), DIRTY (files with
uncommitted changes, new files too; - when the folder is gone), DISK (with
--disk) and PATH ((missing): the folder is gone; (pruned): deleted).
`ikictl prune --worktrees` deletes dead agents' worktrees."""


# ---------------------------------------------------------------- parsers


def worktree_args(p: argparse.ArgumentParser, who: str, folder: str, *, many: bool) -> None:
    """--worktree, --branch and --from of ``new`` and ``fork``."""
    g = p.add_argument_group("git worktree")
    g.add_argument(
        "--worktree",
        action="store_true",
        help=f"{who} works in a git worktree of its own: a new folder the daemon keeps, on a "
        "new branch, which becomes its cwd; its tools can write there and in no other "
        f"checkout. {folder[0].upper()}{folder[1:]} must be in a git repository with a commit",
    )
    g.add_argument(
        "--branch",
        metavar="NAME",
        help="the worktree's new branch (default: ikigai/AGENT-NAME"
        + ("; with --count or --prompts: NAME-1, NAME-2..." if many else "")
        + "); a name that exists or that git refuses is refused. Implies --worktree",
    )
    g.add_argument(
        "--from",
        dest="from_ref",
        metavar="REF",
        help="the branch, tag or commit the new branch starts at (default: the commit "
        "checked out there). Implies --worktree",
    )


def worktree_param(args: argparse.Namespace) -> bool | dict[str, str | None] | None:
    """The ``worktree`` param of agent.create / agent.fork: None (absent)
    unless asked; --branch or --from ask for one too."""
    ask: dict[str, str | None] = {}
    if getattr(args, "branch", None) is not None:
        ask["branch"] = args.branch
    if getattr(args, "from_ref", None) is not None:
        ask["from"] = args.from_ref
    if ask:
        return ask
    return True if getattr(args, "worktree", False) else None


def _agent(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("agent", metavar="AGENT", help=help)


def add_diff(p: argparse.ArgumentParser) -> None:
    p.description = DIFF_DESCRIPTION
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    _agent(p, "an agent made with --worktree: uuid, unique uuid prefix or name")
    p.add_argument(
        "--stat",
        action="store_true",
        help="a summary instead of the patch: each changed file and its lines added and "
        "removed (git diff --stat)",
    )


def add_merge(p: argparse.ArgumentParser) -> None:
    p.description = MERGE_DESCRIPTION
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    _agent(p, "an agent made with --worktree: its branch is what is merged")
    p.add_argument(
        "--into",
        metavar="REF",
        help="the branch to merge into (default: the branch checked out in the parent's "
        "checkout); it must be checked out in some worktree of the repository",
    )
    p.add_argument(
        "--squash",
        action="store_true",
        help="bring the branch's changes in as one new commit on INTO (its commits are "
        "not kept one by one)",
    )
    p.add_argument(
        "--message",
        "-m",
        metavar="MSG",
        help="the commit message: of the squash commit (default: 'Squashed N commits of "
        "agent NAME (branch B)'), or of the merge commit when it is not a fast-forward",
    )


def add_worktrees(p: argparse.ArgumentParser) -> None:
    p.description = WORKTREES_DESCRIPTION
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("--all", "-a", action="store_true", help="include the worktrees already pruned")
    p.add_argument(
        "--disk",
        action="store_true",
        help="add a DISK column: each worktree's disk use (reads every file's size: slower "
        "on big trees)",
    )


# ---------------------------------------------------------------- commands


def _tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def cmd_diff(args: argparse.Namespace) -> int:
    res = _client(args).worktree_diff(args.agent, stat=args.stat)
    if _json(args, res):
        return EXIT_OK
    text = res["diff"]
    if _tty(sys.stdout):
        from ikictl import render

        sys.stdout.write(colored_diff(text, render.use_color()))
    else:
        # a pipe gets the patch exactly (| git apply); text the daemon sent
        # that UTF-8 cannot carry (a lone surrogate) becomes U+FFFD
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8", "replace"))
    sys.stdout.flush()
    base = _short(res.get("base"))
    if not text:
        print(f"{_text(args.agent)}: no changes since its base {base}", file=sys.stderr)
    if res.get("truncated"):
        print(
            f"ikictl: the diff was cut at the size one answer may carry; the whole of it: "
            f"`git diff {base}` in the agent's worktree (`ikictl show {_text(args.agent)}` "
            "gives its folder; git add -N the new files first)",
            file=sys.stderr,
        )
    return EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    res = _client(args).worktree_merge(
        args.agent, into=args.into, squash=args.squash, message=args.message
    )
    if not _json(args, res):
        print(merged_text(res))
    return EXIT_OK


def cmd_worktrees(args: argparse.Namespace) -> int:
    rows = _client(args).worktrees(include_pruned=args.all, disk=args.disk)
    if not _json(args, rows):
        worktrees_table(list(rows), sys.stdout, disk=args.disk)
    return EXIT_OK


def states(c: Client, agents: list[Any], *, pruned: bool) -> list[Any] | None:
    """For ``ls``: worktree.list, asked only when some agent has a worktree
    (None: none has, or the daemon does not know the method)."""
    if not any(a.get("worktree") for a in agents):
        return None
    import protocol as p

    try:
        return list(c.worktrees(include_pruned=pruned))
    except p.RpcError as e:
        if e.code != p.METHOD_NOT_FOUND:
            raise
        return None


# ---------------------------------------------------------------- rendering

# Paths, branch names, reasons and diffs come from the daemon, git and the
# agents' files: shown through render's safe helpers only.


def _text(value: Any, default: str = "-") -> str:
    from ikictl import render

    return default if value is None or value == "" else render.safe_line(value)


def _short(commit: Any) -> str:
    """A commit as people read it: its first 8 hex digits."""
    return _text(commit, "?")[:8]


def _count(n: Any, one: str, many: str) -> str:
    if not isinstance(n, int) or isinstance(n, bool):
        return f"? {many}"
    return f"{n} {one if n == 1 else many}"


def _number(n: Any, default: str = "?") -> str:
    return str(n) if isinstance(n, int) and not isinstance(n, bool) else default


def created_line(info: Mapping[str, Any]) -> str | None:
    """``worktree: PATH on branch B (from 1a2b3c4d)`` of a new agent; None without one."""
    wt = info.get("worktree")
    if not isinstance(wt, dict):
        return None
    return (
        f"worktree: {_text(wt.get('path'))} on branch {_text(wt.get('branch'))} "
        f"(from {_short(wt.get('base'))})"
    )


def state_text(row: Mapping[str, Any]) -> str:
    """``+2 *3`` of a worktree.list row: commits ahead, uncommitted files;
    ``(pruned)``/``(missing)`` when its folder is no more."""
    if row.get("pruned_at"):
        return "(pruned)"
    if not row.get("exists"):
        return "(missing)"
    bits = []
    ahead, dirty = row.get("ahead"), row.get("dirty")
    if ahead:
        bits.append(f"+{_number(ahead)}")
    if dirty:
        bits.append(f"*{_number(dirty)}")
    return " ".join(bits)


def ls_cells(agents: list[Any], rows: list[Any] | None) -> dict[str, str]:
    """uuid -> the WORKTREE cell of each listed agent that has a worktree:
    its branch and ``state_text`` (the branch alone when no state is known)."""
    by = {r.get("agent"): r for r in rows or [] if isinstance(r, dict)}
    cells: dict[str, str] = {}
    for a in agents:
        wt = a.get("worktree")
        if not isinstance(wt, dict):
            continue
        row = by.get(a["uuid"])
        state = state_text(row) if row is not None else ""
        cells[a["uuid"]] = f"{_text(wt.get('branch'))} {state}".rstrip()
    return cells


def show_block(wt: Any, out: TextIO) -> None:
    """``show``'s lines about the agent's worktree (none without one)."""
    if not isinstance(wt, dict):
        return
    gone = "dirty" in wt and wt.get("dirty") is None
    lines = [
        ("worktree", _text(wt.get("path")) + (" (the folder is gone)" if gone else "")),
        ("branch", _text(wt.get("branch"))),
        ("base", f"{_short(wt.get('base'))} (the commit it started from)"),
        ("repo", f"{_text(wt.get('repo'))} (the checkout merges land in)"),
    ]
    if "dirty" in wt:
        dirty = _count(wt.get("dirty"), "file", "files") if not gone else "?"
        lines.append(("uncommitted", f"{dirty} (changed or new, not committed)"))
    if "ahead" in wt:
        ahead = _count(wt.get("ahead"), "commit", "commits")
        lines.append(("ahead", f"{ahead} on the branch that its base lacks"))
    for k, v in lines:
        out.write(f"{k + ':':<14}{v}\n")


def colored_diff(text: str, color: bool) -> str:
    """A patch for a terminal: every control character made visible (the
    files are an agent's), and with ``color`` added lines green, removed red."""
    from ikictl import render

    safe = render.safe(text)
    if not color:
        return safe
    out = []
    for line in safe.splitlines(keepends=True):
        if line.startswith(("diff --git ", "+++ ", "--- ", "index ")):
            code = render.BOLD
        elif line.startswith("@@"):
            code = render.CYAN
        elif line.startswith("+"):
            code = render.GREEN
        elif line.startswith("-"):
            code = render.RED
        else:
            out.append(line)
            continue
        body = line.rstrip("\n")
        out.append(f"{code}{body}{render.RESET}{line[len(body) :]}")
    return "".join(out)


def merged_text(res: Mapping[str, Any]) -> str:
    """What ``merge`` did, in a line."""
    branch, into = _text(res.get("branch")), _text(res.get("into"))
    where = _text(res.get("checkout"))
    n = res.get("commits")
    commits = _count(n, "commit", "commits")
    head = _short(res.get("commit"))
    if n == 0:
        return f"nothing to merge: {into} already has every commit of {branch} ({into} at {head})"
    if res.get("squashed"):
        return f"squashed {commits} of {branch} into {into} as commit {head} (in {where})"
    how = "fast-forward" if res.get("fast_forward") else f"merge commit {head}"
    return f"merged {commits} of {branch} into {into}: {how}; {into} is at {head} (in {where})"


def conflict_text(message: str, data: Any) -> str:
    """ikictl's words for MERGE_CONFLICT: git's message, the conflicting
    paths, and that nothing changed."""
    conflicts = data.get("conflicts") if isinstance(data, dict) else None
    lines = [message.rstrip()]
    if isinstance(conflicts, list) and conflicts:
        lines.append(f"conflicting paths ({len(conflicts)}):")
        lines += [f"  {_text(c)}" for c in conflicts]
    lines.append(
        "nothing was merged: the checkout was left unchanged (exit 5). Merge by hand there, "
        "or have the agent rebase its branch first."
    )
    return "\n".join(lines)


def size(n: Any) -> str:
    """Bytes as people read them: ``812 KiB``, ``1.4 GiB``."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" or value >= 100 else f"{value:.1f} {unit}"
        value /= 1024
    return "?"  # never reached


def _agent_name(row: Mapping[str, Any]) -> str:
    return _text(row.get("name") or row.get("agent"), "?")


def _place(row: Mapping[str, Any]) -> str:
    path = _text(row.get("path"))
    if row.get("pruned_at"):
        return f"{path} (pruned)"
    return path if row.get("exists") else f"{path} (missing)"


def worktrees_table(rows: list[Any], out: TextIO, *, disk: bool = False) -> None:
    from ikictl import render

    if not rows:
        out.write(
            "no worktrees; fork an agent into one with\n"
            "  ikictl fork AGENT --worktree   (the agent's folder must be in a git repository)\n"
        )
        return
    table = [["AGENT", "STATE", "BRANCH", "BASE", "AHEAD", "DIRTY", "PATH"]]
    if disk:
        table[0].insert(6, "DISK")
    for r in rows:
        gone = bool(r.get("pruned_at")) or not r.get("exists")
        row = [
            _agent_name(r),
            "alive" if r.get("alive") else "dead",
            _text(r.get("branch")),
            _short(r.get("base")),
            _number(r.get("ahead")),
            "-" if gone else _number(r.get("dirty")),
            _place(r),
        ]
        if disk:
            row.insert(6, "-" if gone else size(r.get("bytes")))
        table.append(row)
    render.table(table, out, right={4, 5, 6} if disk else {4, 5})


def pruned_report(res: Mapping[str, Any], out: TextIO, *, dry_run: bool, force: bool) -> None:
    """What ``prune --worktrees`` deleted (or would) and what it kept, and why."""
    pruned = [r for r in res.get("pruned") or [] if isinstance(r, dict)]
    kept = [k for k in res.get("kept") or [] if isinstance(k, dict)]
    if pruned:
        n = len(pruned)
        what = f"{n} worktree{'' if n == 1 else 's'}"
        out.write(f"{'would delete' if dry_run else 'deleted'} {what}:\n")
        for r in pruned:
            out.write(f"  {_agent_name(r)}  {_text(r.get('branch'))}  {_text(r.get('path'))}\n")
            if r.get("note"):
                out.write(f"    {_text(r.get('note'))}\n")
    else:
        out.write("no worktrees to delete\n")
    if kept:
        out.write(f"kept {len(kept)}:\n")
        for k in kept:
            out.write(f"  {_text(k.get('agent'))}  {_text(k.get('path'))}\n")
            out.write(f"    {_text(k.get('reason'), 'no reason given')}\n")
        if not force:
            out.write("(--force deletes those with uncommitted changes too: they are lost)\n")


def worktree_gone(row: Mapping[str, Any]) -> str:
    """What a kill or rm with --prune-worktree deleted (a branch with
    unmerged commits is kept: its note says so)."""
    path, branch = _text(row.get("path")), _text(row.get("branch"))
    if row.get("note"):
        return f"deleted its worktree {path}; {_text(row.get('note'))}"
    return f"deleted its worktree {path} and its branch {branch}"
