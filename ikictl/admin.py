"""Housekeeping of the agent list: ``rename``, ``rm`` and ``prune``.

A removed agent leaves the listings; ``--purge`` also deletes its messages
(never history a live fork still inherits: the daemon keeps those rows).
``--prune-worktree`` / ``prune --worktrees`` delete agents' git worktrees.
"""

from __future__ import annotations

import argparse
import sys

import protocol as p
from ikictl import render
from ikictl._errors import EXIT_OK, UsageError
from ikictl.commands import client
from ikictl.worktree import worktree_gone

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import TextIO

    from ikictl.client import Client
    from protocol.results import Removed, WorktreePruned


def cmd_rename(args: argparse.Namespace) -> int:
    info = client(args).rename(args.agent, args.name)
    if args.json:
        render.dump_json(info)
    else:
        print(f"renamed {render.safe_line(args.agent)} -> {render.safe_line(render.label(info))}")
    return EXIT_OK


def cmd_rm(args: argparse.Namespace) -> int:
    """Each AGENT in turn; one that cannot be removed is said on stderr and
    the rest still are (the exit code is the first failure's)."""
    from ikictl.cli import _fail  # the one mapping of errors to messages and exit codes

    c = client(args)
    removed: list[str] = []
    purged = 0
    code = EXIT_OK
    for ref in dict.fromkeys(args.agents):  # named twice: removed once
        try:
            res = c.remove(
                ref, purge=args.purge, force=args.force, prune_worktree=args.prune_worktree
            )
            tree = res.get("worktree")
        except p.RpcError as e:
            failed = _fail(e, args)
            code = code or failed
            continue
        gone = [u for u in res["removed"] if u not in removed]
        removed += gone
        purged += res["purged_rows"]
        if not args.json and not args.quiet:
            print(f"removed {render.safe_line(ref)}{_which(ref, gone)}{_purged(args, res)}")
            if tree:
                print(f"  {worktree_gone(tree)}")
    if args.quiet:
        sys.stdout.write("".join(f"{u}\n" for u in removed))
    elif args.json:
        render.dump_json({"removed": removed, "purged_rows": purged})
    return code


def _which(ref: str, uuids: list[str]) -> str:
    if uuids == [ref]:
        return ""
    return f" ({', '.join(uuids)})" if uuids else " (nothing to remove)"


def _purged(args: argparse.Namespace, res: Removed) -> str:
    rows = res.get("purged_rows")
    return f"; {rows} message{'' if rows == 1 else 's'} deleted" if args.purge else ""


def cmd_prune(args: argparse.Namespace) -> int:
    if args.worktrees:
        return _prune_worktrees(args)
    if args.force:
        raise UsageError("--force goes with --worktrees (prune removes only dead agents)")
    ask = not (args.yes or args.dry_run)
    if ask and not _stdin_is_terminal():
        raise UsageError(
            "prune removes every dead agent and asks first, but stdin is not a terminal: "
            "add -y (--yes) to go ahead, or --dry-run to list them"
        )
    c = client(args)
    if ask:
        preview = c.prune(purge=args.purge, dry_run=True)
        uuids = preview.get("removed") or []
        if not uuids:
            print("no dead agents to remove", file=sys.stderr)
            return _report(args, c, preview, dry_run=False)
        _listing(c, uuids, sys.stderr)
        what = " and delete their messages" if args.purge else ""
        n = len(uuids)
        if not _confirm(
            f"remove {'this dead agent' if n == 1 else f'these {n} dead agents'}{what}?"
        ):
            print("nothing removed", file=sys.stderr)
            return EXIT_OK
    res = c.prune(purge=args.purge, dry_run=args.dry_run)
    return _report(args, c, res, dry_run=args.dry_run)


def _report(args: argparse.Namespace, c: Client, res: Removed, *, dry_run: bool) -> int:
    uuids = res["removed"]
    if args.quiet:
        sys.stdout.write("".join(f"{u}\n" for u in uuids))
    elif args.json:
        render.dump_json(res)
    elif dry_run:
        if uuids:
            print(f"would remove {len(uuids)} dead agent{'' if len(uuids) == 1 else 's'}:")
            _listing(c, uuids, sys.stdout)
        else:
            print("no dead agents to remove")
    elif uuids:
        n = len(uuids)
        print(f"removed {n} dead agent{'' if n == 1 else 's'}{_purged(args, res)}")
    return EXIT_OK


def _prune_worktrees(args: argparse.Namespace) -> int:
    """prune --worktrees: worktree.prune of every dead agent's worktree,
    asked first on a terminal as ``prune`` does."""
    from ikictl.worktree import pruned_report

    if args.purge:
        raise UsageError("--purge is for agents' rows: prune --worktrees deletes no agent")
    ask = not (args.yes or args.dry_run)
    if ask and not _stdin_is_terminal():
        raise UsageError(
            "prune --worktrees deletes dead agents' worktrees and branches and asks first, "
            "but stdin is not a terminal: add -y (--yes) to go ahead, or --dry-run to list them"
        )
    c = client(args)
    if ask:
        preview = c.worktree_prune(force=args.force, dry_run=True)
        n = len(preview["pruned"])
        if n == 0:  # nothing to ask: what is kept, and why
            return _pruned(args, preview, dry_run=False)
        pruned_report(preview, sys.stderr, dry_run=True, force=args.force)
        lost = " (their uncommitted changes and unmerged commits are lost)" if args.force else ""
        these = "this worktree and its branch" if n == 1 else f"these {n} worktrees and branches"
        if not _confirm(f"delete {these}{lost}?"):
            print("nothing deleted", file=sys.stderr)
            return EXIT_OK
    res = c.worktree_prune(force=args.force, dry_run=args.dry_run)
    return _pruned(args, res, dry_run=args.dry_run)


def _pruned(args: argparse.Namespace, res: WorktreePruned, *, dry_run: bool) -> int:
    from ikictl.worktree import pruned_report

    if args.quiet:
        sys.stdout.write("".join(f"{r['agent']}\n" for r in res["pruned"]))
    elif args.json:
        render.dump_json(res)
    else:
        pruned_report(res, sys.stdout, dry_run=dry_run, force=args.force)
    return EXIT_OK


def _listing(c: Client, uuids: list[str], out: TextIO) -> None:
    """The agents about to go, one a line, with their names and models."""
    agents = c.agents(include_dead=True)
    by = {a["uuid"]: a for a in agents}
    for u in uuids:
        a = by.get(u)
        what = f"  {render.safe_line(a.get('name') or '-')}  {render.model_of(a)}" if a else ""
        print(f"  {u}{what}", file=out)


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _confirm(question: str) -> bool:
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return False
    return answer.strip().lower() in ("y", "yes")
