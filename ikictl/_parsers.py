"""Argument builders of the commands with sub-actions or many options of
their own (mail, daemon, keys, the approvals, mcp), kept out of ``ikictl.cli`` so
that module stays small. Only argparse: it is imported on every run."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import Any

    # add_argument's positional names (or flags) and its keywords
    Arg = tuple[tuple[str, ...], dict[str, Any]]
    # a sub-command of a command: name, help, description, arguments, handler
    SubAction = tuple[str, str, str, tuple[Arg, ...], str]

REMEMBER = ("once", "agent", "session")


def _agent(p: argparse.ArgumentParser, help: str = "uuid, unique uuid prefix or name") -> None:
    p.add_argument("agent", metavar="AGENT", help=help)


def _policy(p: argparse.ArgumentParser, what: str) -> None:
    """--policy NAME / --yolo (one of them: argparse refuses both, exit 2)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--policy",
        metavar="NAME",
        help=f"the permission policy of {what} (built-in: default, yolo; or one from config)",
    )
    g.add_argument(
        "--yolo",
        action="store_true",
        help="allow every tool call without asking (= --policy yolo; shown as YOLO)",
    )


PRIORITIES = ("interactive", "background")


def _priority(p: argparse.ArgumentParser, what: str, default: str) -> None:
    p.add_argument(
        "--priority",
        choices=PRIORITIES,
        help=f"the place of {what}'s model calls in the provider's queue, for every turn "
        f"(default: {default})",
    )


def _mcp(p: argparse.ArgumentParser, what: str, default: str) -> None:
    """--mcp NAMES / --no-mcp (one of them: argparse refuses both, exit 2)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--mcp",
        metavar="NAMES",
        help=f"the MCP servers {what} may use, comma-separated "
        f"('' or --no-mcp: none; default: {default})",
    )
    g.add_argument("--no-mcp", action="store_true", help=f"{what} uses no MCP server (= --mcp '')")


def _add_mail(p: argparse.ArgumentParser, glob: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="mail_command", metavar="ACTION", required=True)
    send = sub.add_parser(
        "send",
        parents=[glob],
        help="put a message in an agent's mailbox",
        description="Send TEXT from agent FROM to agent TO; TO takes it as its next prompt.",
    )
    send.add_argument("sender", metavar="FROM", help="the sending agent")
    send.add_argument("to", metavar="TO", help="the receiving agent")
    send.add_argument("text", metavar="TEXT", help="the message (`-` reads stdin)")
    send.set_defaults(func="commands:cmd_mail_send")
    inbox = sub.add_parser(
        "inbox",
        parents=[glob],
        help="an agent's mail",
        description="List the mail an agent received.",
    )
    _agent(inbox)
    inbox.add_argument("--unread", action="store_true", help="only mail not yet taken")
    inbox.set_defaults(func="commands:cmd_mail_inbox")


def _add_daemon(p: argparse.ArgumentParser, glob: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="daemon_command", metavar="ACTION", required=True)
    start = sub.add_parser(
        "start",
        parents=[glob],
        help="start ikigaid in the background",
        description=(
            "Start ikigaid in the background (same environment and IKIGAI_HOME) "
            "and wait for its socket."
        ),
    )
    start.add_argument(
        "--wait",
        type=float,
        default=60.0,  # ikigai._autostart.AUTOSTART_WAIT's: a busy machine is slow
        metavar="S",
        help="seconds to wait for the socket (default 60)",
    )
    start.set_defaults(func="daemonctl:cmd_start")
    stop = sub.add_parser(
        "stop",
        parents=[glob],
        help="stop ikigaid gracefully",
        description="Ask ikigaid to shut down and wait until its process has ended.",
    )
    stop.add_argument(
        "--wait",
        type=float,
        default=15.0,
        metavar="S",
        help="seconds to wait for it to end (default 15)",
    )
    stop.set_defaults(func="daemonctl:cmd_stop")
    restart = sub.add_parser(
        "restart",
        parents=[glob],
        help="stop ikigaid and start it with this shell's environment (and keys)",
        description="Stop ikigaid (if it runs) and start it with this shell's environment.",
    )
    restart.add_argument("--wait", type=float, default=15.0, metavar="S", help="for the stop")
    restart.set_defaults(func="daemonctl:cmd_restart")
    sub.add_parser(
        "reload", parents=[glob], help="re-read config.json and credentials.json (as SIGHUP)"
    ).set_defaults(func="daemonctl:cmd_reload")
    logs = sub.add_parser(
        "logs",
        parents=[glob],
        help="print the daemon's log",
        description="Print the end of the daemon's log file (--json: the raw JSON lines).",
    )
    logs.add_argument(
        "--lines",
        "-n",
        type=int,
        default=50,
        metavar="N",
        help="how many lines from the end (0: all; default 50)",
    )
    logs.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    logs.set_defaults(func="daemonctl:cmd_logs")


def _add_compact(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="keep the newest N turns as they are (0: summarize them all; "
        "default: as many as fit in 40%% of the window)",
    )


def _add_keys(p: argparse.ArgumentParser) -> None:
    # one positional ACTION, not sub-commands: the command is parsed intermixed
    p.add_argument("action", metavar="ACTION", choices=["list", "set", "rm"], help="list|set|rm")
    p.add_argument("provider", metavar="PROVIDER", nargs="?", help="set: key read without echo")


def _add_approvals(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "agent", metavar="AGENT", nargs="?", help="only this agent's (default: every agent's)"
    )


def _approval_id(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "approval", metavar="ID", help="the approval id, or a unique prefix (`ikictl approvals`)"
    )


def _add_approve(p: argparse.ArgumentParser) -> None:
    _approval_id(p)
    p.add_argument(
        "--remember",
        "-r",
        choices=REMEMBER,
        default="once",
        help="once (default); agent: allow this rule for the agent from now on; "
        "session: for every agent until the daemon stops",
    )


def _add_deny(p: argparse.ArgumentParser) -> None:
    _approval_id(p)
    p.add_argument("--reason", metavar="TEXT", help="why (the model reads it)")


def _arg(*names: str, **options: Any) -> Arg:
    """An argument of a table of sub-actions: add_argument's own arguments."""
    return names, options


_SERVER = _arg("server", metavar="SERVER", help="the server's name in config.json")
# ``ikictl mcp``'s actions, one row each: name, help (its line in ``ikictl mcp
# --help``), description (its own --help), arguments, handler ("module:function",
# imported only when it runs)
MCP_ACTIONS: tuple[SubAction, ...] = (
    (
        "ls",
        "the configured servers: state, pid, tools, restarts, last error",
        "List the MCP servers of config.json: NAME, STATE (stopped, starting, ready, "
        "restarting, failed), PID, TOOLS, RESTARTS, SINCE (the last change) and the last "
        "ERROR; --long adds the transport and the command line or URL.",
        (
            _arg(
                "--long",
                "-l",
                action="store_true",
                help="also the transport and the command or URL",
            ),
        ),
        "mcp:cmd_ls",
    ),
    (
        "tools",
        "a server's tools, as the model sees them (SERVER__TOOL)",
        "List a server's tools by the name the model calls them (SERVER__TOOL) with the "
        "first line of their description, and the tools not offered with the reason. "
        "A lazy server is started.",
        (_SERVER,),
        "mcp:cmd_tools",
    ),
    (
        "restart",
        "stop a server and start it again",
        "Stop an MCP server (its calls in progress end in error) and start it again.",
        (_SERVER,),
        "mcp:cmd_restart",
    ),
    (
        "prompts",
        "a server's prompts and their arguments",
        "List a server's prompts: name, arguments ([optional]) and description.",
        (_SERVER,),
        "mcp:cmd_prompts",
    ),
    (
        "watch",
        "print the servers' state changes as they happen (Ctrl+C leaves)",
        "Print each server's state, then every change (started, failed, restarting...) "
        "until Ctrl+C; --json: the daemon.event notifications as NDJSON.",
        (_arg("server", metavar="SERVER", nargs="?", help="only this server's changes"),),
        "mcp:cmd_watch",
    ),
)


def _add_actions(
    p: argparse.ArgumentParser,
    glob: argparse.ArgumentParser,
    dest: str,
    actions: tuple[SubAction, ...],
) -> None:
    """One sub-parser per row of ``actions``, each with the global options."""
    sub = p.add_subparsers(dest=dest, metavar="ACTION", required=True)
    for name, help, description, arguments, handler in actions:
        action = sub.add_parser(name, parents=[glob], help=help, description=description)
        for names, options in arguments:
            action.add_argument(*names, **options)
        action.set_defaults(func=handler)


def _add_mcp(p: argparse.ArgumentParser, glob: argparse.ArgumentParser) -> None:
    _add_actions(p, glob, "mcp_command", MCP_ACTIONS)


def _quiet(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--quiet", "-q", action="store_true", help=help)


def _continue(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--continue",
        "-c",
        dest="cont",
        action="store_true",
        help="the live agent used last (the newest last_active_at), instead of AGENT",
    )


def _template(p: argparse._ActionsContainer, what: str) -> None:
    p.add_argument(
        "--format",
        metavar="TEMPLATE",
        help=f"print {what} through TEMPLATE: {{field}} or {{usage.cost_usd}} (the --json "
        "keys, dotted for nested ones), \\t \\n escapes, {{ }} for braces; an unknown "
        "field lists the fields",
    )


# the notation of the WORKTREE column, said in `ikictl ls --help` and docs/ikictl.md
LS_NOTATION = """\
WORKTREE (shown when some listed agent works in a git worktree of its own,
made with `fork --worktree` or `new --worktree`): its branch, then
  +N  N commits on the branch that its base (the commit it started from) lacks
  *N  N files with uncommitted changes in the worktree (new files too)
  (missing)  the worktree folder is gone;  (pruned)  deleted by prune/rm
e.g. `ikigai/fix-1 +2 *3`: 2 commits ahead, 3 files changed and not committed.
`ikictl worktrees` lists them all; `ikictl show AGENT` gives one in full.
DAEMON (shown when the listed agents are not all run by the daemon asked,
among several sharing one database): the id of the daemon that runs each
live agent (`ikictl daemons` lists the daemons)."""


# the worktree commands' parsers live with them (imported only when one is built)
def _add_diff(p: argparse.ArgumentParser) -> None:
    from ikictl.worktree import add_diff

    add_diff(p)


def _add_merge(p: argparse.ArgumentParser) -> None:
    from ikictl.worktree import add_merge

    add_merge(p)


def _add_worktrees(p: argparse.ArgumentParser) -> None:
    from ikictl.worktree import add_worktrees

    add_worktrees(p)


def _add_daemons(p: argparse.ArgumentParser) -> None:
    from ikictl.daemons import add_daemons

    add_daemons(p)


def _add_move(p: argparse.ArgumentParser) -> None:
    from ikictl.daemons import add_move

    add_move(p)


def _add_ls(p: argparse.ArgumentParser) -> None:
    p.description = f"{p.description}\n\n{LS_NOTATION}"
    p.add_argument("--all", "-a", action="store_true", help="include dead agents")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--quiet", "-q", action="store_true", help="only the full uuids, one a line (for scripts)"
    )
    _template(g, "each agent on a line")


def _add_show(p: argparse.ArgumentParser) -> None:
    _agent(p)
    _template(p, "the agent")


def _add_history(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument("--limit", "-n", type=int, metavar="N", help="only the last N messages")
    p.add_argument("--before", type=int, metavar="ID", help="page back: messages before this id")
    p.add_argument(
        "--full", action="store_true", help="whole contents and thinking, not one line each"
    )
    p.add_argument(
        "--tools",
        action="store_true",
        help="by turn: prompts, thinking, tool calls with their arguments and results, answers",
    )
    p.add_argument(
        "--signatures",
        action="store_true",
        help="with --json: include the thinking blocks' signatures (opaque provider data)",
    )


def _seconds(text: str) -> float:
    """--interval: a number of seconds above 0 (argparse names the flag)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 3600 seconds, not {text}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {text}")
    return value


def _add_top(p: argparse.ArgumentParser) -> None:
    p.description = """\
A live view of every agent, like htop: the tree of agents, each one's state
(running, waiting_for_provider, waiting_for_approval, compacting, idle...),
model, output tokens per second over the last few seconds, spend and budget,
and what it waits on; above them each provider key's queue (calls in flight /
cap, queued by priority, paused until). It redraws every --interval seconds,
and at once when an agent's state changes (at most 4 times a second).

Keys: q quit, s cycle the sort (tree, cost, tok/s, state), f cycle the filter
through the trees (then all again). Ctrl+C quits too.

--json prints one snapshot (the fleet.snapshot result, docs/protocol.md) and
exits; --json --interval S prints one JSON line every S seconds until Ctrl+C
(or --count N). When stdout is not a terminal, top prints one plain snapshot."""
    p.add_argument(
        "--interval",
        "-i",
        type=_seconds,
        metavar="S",
        help="seconds between refreshes (default 1; with --json: stream a snapshot every S)",
    )
    p.add_argument(
        "--count",
        "-n",
        type=_positive,
        metavar="N",
        help="with --json: print N snapshots, one every --interval (default 1 s), then stop",
    )


def _add_rename(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument("name", metavar="NAME", help="the new name (unique among live agents)")


def _purge(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--purge",
        action="store_true",
        help=f"also delete {what} messages for good (history a live fork inherits is kept)",
    )


def _add_rm(p: argparse.ArgumentParser) -> None:
    p.add_argument("agents", metavar="AGENT", nargs="+", help="uuid, unique uuid prefix or name")
    _purge(p, "their")
    p.add_argument(
        "--force",
        "-f",
        action="store_true",
        help="a live agent too: kill it (and its descendants) first; with --prune-worktree, "
        "its worktree even with uncommitted changes",
    )
    _prune_worktree(p, "each agent's")
    _quiet(p, "print only the removed uuids, one a line")


def _add_prune(p: argparse.ArgumentParser) -> None:
    _purge(p, "their")
    p.add_argument(
        "--worktrees",
        action="store_true",
        help="instead of the dead agents: delete the git worktrees (folder and branch) of "
        "dead agents, keeping, with the reason, one with uncommitted changes (a branch "
        "with commits on no other branch is kept too, its folder deleted) unless --force",
    )
    p.add_argument(
        "--force",
        "-f",
        action="store_true",
        help="with --worktrees: delete them even with uncommitted changes or unmerged commits",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list the dead agents (--worktrees: the worktrees) it would remove; remove none",
    )
    p.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="do not ask (required when stdin is not a terminal)",
    )
    _quiet(p, "print only the removed uuids, one a line")


def _add_export(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument(
        "--format",
        choices=["json", "markdown"],
        default="json",
        help="json (default): the document `ikictl import` reads; markdown: a transcript to read",
    )
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (default: stdout)")
    p.add_argument(
        "--no-signatures",
        action="store_true",
        help="leave out the blocks' signatures (opaque provider data; kept by default, so an "
        "imported agent shows its provider its own earlier thinking)",
    )


def _add_import(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="a JSON export (`ikictl export`); `-` reads stdin")
    p.add_argument(
        "--name",
        "-n",
        help="the new agent's name (default: the exported one's; with a suffix "
        "when a live agent has it)",
    )
    _quiet(p, "print only the new agent's uuid")


def _add_watch(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument(
        "--from",
        dest="from_seq",
        type=int,
        metavar="SEQ",
        help="replay the kept events from SEQ first",
    )
    p.add_argument(
        "--until-idle",
        action="store_true",
        help="leave when the agent has no turn running or queued",
    )
    p.add_argument("--no-thinking", action="store_true", help="hide the model's thinking")


def _add_model(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument(
        "model",
        metavar="M/T",
        help="MODEL[/THINKING] or /THINKING, e.g. gpt-4o/none, provider/model/high",
    )
    p.add_argument(
        "--queue",
        action="store_true",
        help="if a turn is running, switch after it instead of refusing",
    )


def _add_system(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument(
        "text",
        metavar="TEXT",
        nargs="?",
        help='the new system prompt (`-` reads stdin, "" clears it); none: show it',
    )


def _add_priority(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument(
        "level",
        metavar="LEVEL",
        choices=(*PRIORITIES, "auto"),
        help="interactive or background for all its turns (forks inherit it); "
        "auto: each turn's, by who started it",
    )


def _add_cancel(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument(
        "--at-boundary",
        action="store_true",
        help="stop after the current model call or tool, keeping its output",
    )


def _prune_worktree(p: argparse.ArgumentParser, who: str) -> None:
    p.add_argument(
        "--prune-worktree",
        action="store_true",
        help=f"also delete {who} git worktree (made with --worktree): its folder and its "
        "branch; a branch with commits no other branch holds is kept (merge them: ikictl "
        "merge) unless --force. Refused, with nothing done, while the worktree has "
        "uncommitted changes, unless --force (they are lost)",
    )


def _add_kill(p: argparse.ArgumentParser) -> None:
    _agent(p)
    _prune_worktree(p, "its")
    p.add_argument(
        "--force",
        "-f",
        action="store_true",
        help="with --prune-worktree: delete the worktree even with uncommitted changes, and "
        "its branch even with unmerged commits",
    )
