"""``ikictl``: control the ikigai daemon from the command line and from scripts.

Start-up time matters (scripts run it in loops): only argparse, os and sys are
imported here; each command's module (socket client, rendering, REPL, the
catalog) is imported when that command runs, and only that command's
sub-parser is built when the command is named on the command line.

Exit codes: 0 ok, 1 the turn ended in error (or did not complete) or a
compaction failed, 2 usage error or refused, 3 the daemon is unreachable,
4 no such agent (or an ambiguous one) or schedule, 5 a merge stopped on a
conflict (nothing merged), 6 no daemon runs the agent at the moment (its
daemon was lost or stopped), 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys

from ikictl import _parsers
from ikictl._errors import (
    EXIT_CONFLICT,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    DaemonUnreachable,
    UsageError,
)
from ikictl._parsers import _agent, _continue, _mcp, _policy, _priority, _quiet
from ikictl.budget import _add_budget, budget_args  # noqa: F401 - found as _add_<command>
from ikictl.schedule import _add_schedule, _check_schedule  # noqa: F401 - found by name
from protocol.version import __version__

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

EPILOG = """\
AGENT is a uuid, a unique prefix of one, or a name. PROMPT `-` reads stdin.
Exit codes: 0 ok, 1 the turn (or the compaction) failed, 2 usage error or
refused, 3 daemon unreachable, 4 agent (or schedule) not found or ambiguous,
5 merge conflict (nothing merged), 6 the agent's daemon is lost or stopped
(try again: another adopts a lost one's agents), 130 interrupted.
With no daemon answering, ikictl starts one (same IKIGAI_HOME) unless
--no-autostart, IKIGAI_AUTOSTART=0 or config "autostart": false."""

# name -> (help, "module:function"); the arguments are added by _add_<name> below
COMMANDS: dict[str, tuple[str, str]] = {
    "new": ("create an agent, optionally with a first prompt (streamed)", "commands:cmd_new"),
    "send": ("prompt an agent and stream its answer", "commands:cmd_send"),
    "watch": ("attach to an agent's live event stream", "commands:cmd_watch"),
    "fork": ("fork an agent (a child that shares its history)", "commands:cmd_fork"),
    "model": ("switch an agent's model and thinking level", "commands:cmd_model"),
    "system": ("show or set an agent's system prompt", "commands:cmd_system"),
    "priority": (
        "set an agent's place in the provider's queue: interactive or background",
        "commands:cmd_priority",
    ),
    "policy": (
        "show or set an agent's tool policy (what its tool calls may do unasked)",
        "policy:cmd_policy",
    ),
    "budget": ("show or set what an agent and its descendants may spend", "budget:cmd_budget"),
    "top": ("a live view of every agent and the provider queues, like htop", "top:cmd_top"),
    "cancel": ("cancel an agent's running turn", "commands:cmd_cancel"),
    "kill": ("end an agent and all its descendants", "commands:cmd_kill"),
    "rename": ("give an agent another name", "admin:cmd_rename"),
    "rm": ("remove dead agents from the listings (--purge: delete their history)", "admin:cmd_rm"),
    "prune": (
        "remove every dead agent (asks first; -y on a script); --worktrees: their git worktrees",
        "admin:cmd_prune",
    ),
    "ls": ("list agents as a tree: state, model, thinking, tokens, cost", "commands:cmd_ls"),
    "show": ("one agent's details, usage and last turn", "commands:cmd_show"),
    "history": ("an agent's messages, oldest first", "histview:cmd_history"),
    "export": ("write an agent and its whole history as JSON or Markdown", "transfer:cmd_export"),
    "import": (
        "create an agent from a JSON export, with its history and model",
        "transfer:cmd_import",
    ),
    "usage": ("tokens and cost of an agent (or everything)", "commands:cmd_usage"),
    "clear": ("start a fresh context for an agent", "commands:cmd_clear"),
    "mark": ("set a checkpoint in an agent's context", "commands:cmd_mark"),
    "rewind": ("return an agent's context to a mark", "commands:cmd_rewind"),
    "compact": (
        "summarize the oldest part of an agent's context so it can go on (history keeps all)",
        "compact:cmd_compact",
    ),
    "diff": ("an agent's changes in its git worktree since it started", "worktree:cmd_diff"),
    "merge": (
        "merge an agent's worktree branch into the parent's checkout (only a clean one)",
        "worktree:cmd_merge",
    ),
    "worktrees": (
        "the agents' git worktrees: branch, commits ahead, uncommitted files, disk use",
        "worktree:cmd_worktrees",
    ),
    "schedule": (
        "prompt an agent on its own: cron, every N minutes, once at or in (add, ls, show...)",
        "",
    ),
    "mail": ("send mail between agents, read an inbox", ""),
    "schema": ("save JSON Schemas by name for send --schema NAME (save, ls, show, rm)", "schemas:"),
    "models": ("list the models (from the daemon, or the local catalog)", "commands:cmd_models"),
    "status": ("is the daemon running? version, uptime, agents", "commands:cmd_status"),
    "daemons": (
        "the daemons sharing this one's database: id, host, state, agents, heartbeat",
        "daemons:cmd_daemons",
    ),
    "move": ("hand an idle agent to another daemon of the database", "daemons:cmd_move"),
    "daemon": ("start, stop, restart or reload the daemon, or read its log", ""),
    "keys": ("set, remove or list the providers' API keys (never shown)", "keys:cmd_keys"),
    "chat": ("an interactive REPL on an agent, with slash commands", "repl:cmd_chat"),
    "acp": (
        "serve an editor (Zed, JetBrains, Neovim) over the Agent Client Protocol on stdio",
        "acp:cmd_acp",
    ),
    "approvals": ("list the tool calls waiting for an answer", "approvals:cmd_approvals"),
    "approve": ("allow a pending tool call (once, or remembered)", "approvals:cmd_approve"),
    "deny": ("refuse a pending tool call (the model reads the reason)", "approvals:cmd_deny"),
    "mcp": ("the MCP servers: list, tools, restart, prompts, watch", ""),
    "completion": ("print the bash or zsh completion script", "completion:cmd_completion"),
}
HIDDEN = {
    "_agents": "commands:cmd_agents_for_completion",
    "_mcp": "mcp:cmd_servers_for_completion",
}
# the commands made of sub-actions: built with the global options' parent, parsed whole
SUBACTIONS = ("mail", "daemon", "mcp", "schedule", "schema")


def _globals(parser: argparse.ArgumentParser, default: object) -> None:
    """Options every command takes, before or after the command name."""
    g = parser.add_argument_group("global options")
    g.add_argument(
        "--json",
        action="store_true",
        default=default,
        help="print JSON (events as NDJSON while streaming)",
    )
    g.add_argument(
        "--no-autostart",
        action="store_true",
        default=default,
        help="fail (exit 3) instead of starting a daemon",
    )
    g.add_argument(
        "--socket",
        metavar="PATH",
        default=default,
        help="the control socket (default: IKIGAI_SOCKET, IKIGAI_HOME/run/ikigai.sock, ...)",
    )


def _prompt(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument(
        "prompt",
        metavar="PROMPT",
        nargs=None if required else "?",
        help="the prompt (`-` reads stdin)",
    )


def _streaming(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-thinking", action="store_true", help="hide the model's thinking")
    p.add_argument(
        "--no-wait", action="store_true", help="start the turn and return at once (print its id)"
    )
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="stdout not a terminal: keep thinking, tool lines and the usage line on it "
        "(default: stdout gets the answer alone, the rest goes to stderr)",
    )


def _add_new(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        "-m",
        metavar="M/T",
        help="MODEL[/THINKING], e.g. claude-sonnet-4-5/med (default: config)",
    )
    p.add_argument("--name", "-n", help="a name to call it by (unique among live agents)")
    p.add_argument("--system", "-s", metavar="TEXT", help="the system prompt")
    _cwd(p, "the folder its tools run in (default: the current directory)")
    _policy(p, "the agent")
    _mcp(p, "the agent", "the servers config marks default")
    _priority(p, "the agent", "each turn's: a person's prompt is interactive, mail background")
    budget_args(p, "the agent")
    from ikictl.worktree import worktree_args

    worktree_args(p, "the agent", "--cwd (default: the current directory)", many=False)
    from ikictl.daemons import on_arg

    on_arg(p)
    _prompt(p, False)
    _streaming(p)
    _quiet(p, "print only the new agent's uuid (with PROMPT: after the turn; the turn's exit code)")


def _cwd(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--cwd", "-C", metavar="DIR", help=help)


def _add_send(p: argparse.ArgumentParser) -> None:
    p.usage = "ikictl send [options] AGENT PROMPT\n       ikictl send [options] -c PROMPT"
    p.add_argument("agent", metavar="AGENT", nargs="?", help="uuid, unique uuid prefix or name")
    _prompt(p, False)
    _continue(p)
    _streaming(p)
    from ikictl.attach_args import attach_options
    from ikictl.send_args import prompt_options

    prompt_options(p)
    attach_options(p)


def _check_send(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """AGENT PROMPT, or -c PROMPT: which one the words are depends on -c."""
    if args.cont:
        if args.prompt is not None:
            p.error("with -c/--continue give only the PROMPT (the agent is the one used last)")
        args.agent, args.prompt = None, args.agent
        if args.prompt is None:
            p.error("the following arguments are required: PROMPT")
    elif args.prompt is None:
        missing = "PROMPT" if args.agent is not None else "AGENT, PROMPT"
        p.error(f"the following arguments are required: {missing}")


def _add_fork(p: argparse.ArgumentParser) -> None:
    _agent(p, "the parent: uuid, unique prefix or name")
    p.add_argument(
        "--model", "-m", metavar="M/T", help="the child's MODEL[/THINKING] (default: the parent's)"
    )
    p.add_argument(
        "--at",
        type=int,
        metavar="MESSAGE",
        help="fork at this message id of the parent's history (default: its end)",
    )
    p.add_argument("--name", "-n", help="the child's name")
    _cwd(p, "the folder the child's tools run in (default: the parent's)")
    _policy(p, "the child (it narrows the parent's, never widens it)")
    _mcp(p, "the child", "the parent's")
    _priority(p, "the child", "the parent's")
    budget_args(p, "the child")
    from ikictl.worktree import worktree_args

    worktree_args(p, "each child", "the parent's folder (or --cwd)", many=True)
    p.add_argument(
        "--count",
        type=int,
        metavar="N",
        help="make N children at once, each with PROMPT (one transaction); "
        "prints each child and its turn, streams nothing (--name NAME: NAME-1, NAME-2...)",
    )
    p.add_argument(
        "--prompts",
        metavar="FILE",
        help="make one child per line of FILE (`-`: stdin), each with that line as its prompt",
    )
    _prompt(p, False)
    _streaming(p)
    _quiet(p, "print only the child's uuid (with PROMPT: after the turn; the turn's exit code)")


def _add_usage(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "agent", metavar="AGENT", nargs="?", help="one agent (default: the whole database)"
    )
    p.add_argument(
        "--tree", action="store_true", help="include the agent's descendants (and show them)"
    )


def _add_label(p: argparse.ArgumentParser, help: str) -> None:
    _agent(p)
    p.add_argument("label", metavar="LABEL", nargs="?", help=help)


def _add_clear(p: argparse.ArgumentParser) -> None:
    _agent(p)


def _add_mark(p: argparse.ArgumentParser) -> None:
    _add_label(p, "a name for the mark")


def _add_rewind(p: argparse.ArgumentParser) -> None:
    _add_label(p, "the mark to return to (default: the last one)")


def _add_models(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "provider",
        metavar="PROVIDER",
        nargs="?",
        help="only this provider's models (e.g. anthropic)",
    )
    p.add_argument(
        "--offline", action="store_true", help="read the local catalog, do not ask the daemon"
    )


def _add_status(p: argparse.ArgumentParser) -> None:
    pass


def _add_chat(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "agent", metavar="AGENT", nargs="?", help="the agent to talk to (default: a new one)"
    )
    _continue(p)
    p.add_argument("--model", "-m", metavar="M/T", help="model of the new agent (without AGENT)")
    p.add_argument("--name", "-n", help="name of the new agent (without AGENT)")
    _cwd(p, "the folder the new agent's tools run in (default: the current directory)")
    _policy(p, "the new agent (without AGENT)")
    _mcp(p, "the new agent", "the servers config marks default")
    p.add_argument("--no-thinking", action="store_true", help="hide the model's thinking")


def _add_completion(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=["bash", "zsh"], help="the shell")


def _glob_parent() -> argparse.ArgumentParser:
    glob = argparse.ArgumentParser(add_help=False)
    _globals(glob, argparse.SUPPRESS)
    return glob


def _check_chat(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.cont and args.agent is not None:
        p.error("give AGENT or -c/--continue, not both")


def _fill(cmd: argparse.ArgumentParser, name: str, glob: argparse.ArgumentParser) -> None:
    add = globals().get(f"_add_{name}") or getattr(_parsers, f"_add_{name}", None)
    if add is None:  # a command whose options live with it (imported only when named)
        import importlib

        module = importlib.import_module(f"ikictl.{COMMANDS[name][1].split(':')[0]}")
        add = getattr(module, f"_add_{name}")
    if name in SUBACTIONS:
        add(cmd, glob)
    else:
        add(cmd)
        cmd.set_defaults(func=COMMANDS[name][1])


def _describe(help: str) -> str:
    return help[0].upper() + help[1:] + "."


def build_parser() -> argparse.ArgumentParser:
    """The whole parser (for --help and completion)."""
    parser = argparse.ArgumentParser(
        prog="ikictl",
        description="Control the ikigai daemon: create, prompt, fork and inspect LLM agents.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ikictl {__version__}")
    _globals(parser, None)
    glob = _glob_parent()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help, _) in COMMANDS.items():
        cmd = sub.add_parser(
            name,
            parents=[glob],
            help=help,
            description=_describe(help),
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _fill(cmd, name, glob)
    return parser


def command_parser(name: str) -> argparse.ArgumentParser:
    """One command's parser on its own (what a run builds: start-up time)."""
    glob = _glob_parent()
    if name in HIDDEN:
        cmd = argparse.ArgumentParser(prog=f"ikictl {name}", parents=[glob])
        cmd.set_defaults(func=HIDDEN[name])
        return cmd
    help = COMMANDS[name][0]
    cmd = argparse.ArgumentParser(
        prog=f"ikictl {name}",
        parents=[glob],
        description=_describe(help),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _fill(cmd, name, glob)
    return cmd


def _command_index(argv: list[str]) -> int | None:
    """Where the command word is in argv (after global options), if there is one."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--socket":
            i += 2
            continue
        if a.startswith("-"):
            if a in ("-h", "--help", "--version"):
                return None
            i += 1
            continue
        return i if a in COMMANDS or a in HIDDEN else None
    return None


def parse(argv: list[str]) -> argparse.Namespace:
    idx = _command_index(argv)
    if idx is None:
        return build_parser().parse_args(argv)
    top = argparse.ArgumentParser(prog="ikictl", add_help=False)
    _globals(top, None)
    gargs = top.parse_args(argv[:idx])
    name = argv[idx]
    cmd = command_parser(name)
    rest = argv[idx + 1 :]
    # intermixed: `ikictl fork A --model M "prompt"` puts a positional after options
    args = cmd.parse_args(rest) if name in SUBACTIONS else cmd.parse_intermixed_args(rest)
    check = globals().get(f"_check_{name}")
    if check is not None:
        check(cmd, args)
    args.command = name
    for opt in ("json", "no_autostart", "socket"):
        if getattr(args, opt, None) is None:
            setattr(args, opt, getattr(gargs, opt))
    return args


def _run(func: str, args: argparse.Namespace) -> int:
    import importlib

    module, name = func.split(":")
    command: Callable[[argparse.Namespace], int] = getattr(
        importlib.import_module(f"ikictl.{module}"), name
    )
    return command(args)


def _parse_json_errors(argv: list[str]) -> argparse.Namespace:
    """``parse`` with argparse's errors raised as UsageError, not printed as text
    (patched on the class for the call: every sub-parser is built in ``parse``)."""

    def error(self: argparse.ArgumentParser, message: str) -> NoReturn:
        usage = self.format_usage().strip().removeprefix("usage: ")
        raise UsageError(f"{message} (usage: {usage})")

    saved = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = error  # type: ignore[method-assign]
    try:
        return parse(argv)
    finally:
        argparse.ArgumentParser.error = saved  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:  # the fast path scripts use to check the install
        sys.stdout.write(f"ikictl {__version__}\n")
        return EXIT_OK
    try:
        return _main(argv)
    except Exception as e:
        # a bug, or an answer shaped like nothing we know: one line, never a traceback
        # (IKIGAI_DEBUG=1 keeps it, for a bug report)
        if os.environ.get("IKIGAI_DEBUG", "").strip() not in ("", "0"):
            import traceback

            traceback.print_exc()
        quiet = argparse.Namespace(json="--json" in argv)
        return _say(quiet, EXIT_ERROR, f"internal error: {type(e).__name__}: {e}")


def _main(argv: list[str]) -> int:
    try:
        args = _parse_json_errors(argv) if "--json" in argv else parse(argv)
    except UsageError as e:
        return _say(argparse.Namespace(json=True), EXIT_USAGE, str(e))
    args.json = bool(args.json)
    args.no_autostart = bool(args.no_autostart)
    if not getattr(args, "func", None):
        build_parser().print_help()
        return EXIT_USAGE
    try:
        return _run(args.func, args)
    except KeyboardInterrupt:
        print("ikictl: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (| head): leave quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_OK
    except Exception as e:
        return _fail(e, args)


def _fail(e: Exception, args: argparse.Namespace) -> int:
    """Map an error to a message on stderr and an exit code."""
    if isinstance(e, DaemonUnreachable):
        return _say(args, EXIT_UNREACHABLE, str(e))
    if isinstance(e, UsageError):
        return _say(args, EXIT_USAGE, str(e))
    import protocol as p

    if not isinstance(e, p.RpcError):
        raise e  # main turns it into "internal error"

    code, message, data = e.code, e.message, e.data
    if code == p.AMBIGUOUS_AGENT:
        lines = [message]
        for c in (data or {}).get("candidates", []) if isinstance(data, dict) else []:
            lines.append(
                f"  {c.get('uuid')}  {c.get('name') or '-'}  {c.get('status') or ''}".rstrip()
            )
        return _say(args, EXIT_NOT_FOUND, "\n".join(lines), code, data)
    if code == p.MERGE_CONFLICT:
        from ikictl.worktree import conflict_text

        text = message if getattr(args, "json", False) else conflict_text(message, data)
        return _say(args, EXIT_CONFLICT, text, code, data)
    if code == p.AGENT_UNAVAILABLE:
        from ikictl.daemons import unavailable_text

        text = message if getattr(args, "json", False) else unavailable_text(message, data)
        return _say(args, EXIT_UNAVAILABLE, text, code, data)
    if code in (p.AGENT_NOT_FOUND, p.SCHEDULE_NOT_FOUND):
        return _say(args, EXIT_NOT_FOUND, message, code, data)
    if code in (p.REFUSED, p.INVALID_PARAMS):
        return _say(args, EXIT_USAGE, message, code, data)
    if code == p.MCP_FAILED:  # the message names the server and why: a code adds nothing
        return _say(args, EXIT_ERROR, message, code, data)
    if code == p.TURN_FAILED:
        from ikictl.keys import with_key_hint

        text = with_key_hint(f"the turn ended in error: {message}")
        return _say(args, EXIT_ERROR, text, code, data)
    return _say(args, EXIT_ERROR, f"{message} (error {code})", code, data)


def _say(
    args: argparse.Namespace,
    exit_code: int,
    message: str,
    code: int | None = None,
    data: object = None,
) -> int:
    if getattr(args, "json", False):
        import json

        err: dict[str, object] = {"message": message, "exit": exit_code}
        if code is not None:
            err["code"] = code
        if data is not None:
            err["data"] = data
        print(json.dumps({"error": err}, ensure_ascii=False), file=sys.stderr)
    else:
        from ikictl.render import safe

        print(f"ikictl: {safe(message)}", file=sys.stderr)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
