"""The commands that talk to the daemon (one function per command).

Each takes the parsed ``argparse.Namespace`` and returns the exit code; errors
from the daemon propagate as ``RpcError`` / ``DaemonUnreachable`` and are
mapped to exit codes by ``ikictl.cli.main``.
"""

from __future__ import annotations

import argparse
import os
import sys

import protocol as p
from ikictl import render
from ikictl._errors import EXIT_OK, UsageError
from ikictl.attach_args import attachments_arg
from ikictl.budget import budget_param, print_budgets
from ikictl.client import Client, connect
from ikictl.daemons import ls_cells as daemon_cells
from ikictl.daemons import show_line as daemon_line
from ikictl.daemons import status_lines
from ikictl.worktree import (
    created_line,
    ls_cells,
    show_block,
    states,
    worktree_gone,
    worktree_param,
)

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from ikictl.stream import EventPrinter
    from protocol.results import Created, ListedAgent, MessageId, ModelInfo, ModelRow, Queued


def client(args: argparse.Namespace, *, autostart: bool = True) -> Client:
    return connect(args.socket, autostart=autostart and not args.no_autostart)


def folder_arg(text: str | None) -> str | None:
    """--cwd as the daemon needs it: absolute (relative to this shell's folder)."""
    if text is None:
        return None
    return os.path.abspath(os.path.expanduser(text))


def policy_arg(args: argparse.Namespace) -> str | None:
    """The ``policy`` param of agent.create/agent.fork: --yolo is the policy
    named yolo (argparse already refused both)."""
    return "yolo" if getattr(args, "yolo", False) else getattr(args, "policy", None)


def mcp_arg(args: argparse.Namespace) -> list[str] | None:
    """The ``mcp`` param of agent.create/agent.fork: None (absent: the config's
    defaults, or the parent's) unless --mcp or --no-mcp was given; ``[]`` is none.
    The names are checked by the daemon, which knows the configured ones."""
    if getattr(args, "no_mcp", False):
        return []
    text = getattr(args, "mcp", None)
    if text is None:
        return None
    names: list[str] = []
    for name in text.split(","):
        name = name.strip()
        if name and name not in names:
            names.append(name)
    return names


def prompt_text(value: str | None) -> str | None:
    """PROMPT as given; ``-`` reads it from stdin.

    Text must be UTF-8 and hold no NUL byte (a binary file, not a prompt; the
    providers and PostgreSQL refuse NUL too); other control characters (tabs,
    escape sequences of a captured log) are accepted as they are."""
    if value is None:
        return None
    if value != "-":
        return _checked(value.encode("utf-8", "surrogateescape"), "the prompt")
    text = _checked(sys.stdin.buffer.read(), "the prompt on stdin").removesuffix("\n")
    if not text.strip():
        raise UsageError("the prompt read from stdin is empty")
    return text


def _checked(raw: bytes, what: str) -> str:
    """``raw`` as text, or a UsageError naming the first bad byte and where it is."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(
            f"{what} is not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start}); "
            "convert it first (e.g. iconv -t UTF-8) or give text, not a binary file"
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        raise UsageError(
            f"{what} contains a NUL byte (at offset {len(text[:nul].encode())}): "
            "it looks like a binary file; give text"
        )
    return text


def printer(args: argparse.Namespace) -> EventPrinter:
    from ikictl.stream import EventPrinter

    thinking = not getattr(args, "no_thinking", False)
    if getattr(args, "quiet", False):  # ids only: the turn is followed, not shown
        sink = open(os.devnull, "w")  # noqa: SIM115 (closed with the process)
        return EventPrinter(sink, thinking=False, json_mode=args.json, live=False)
    if answer_only(args):
        return EventPrinter(thinking=thinking, side=sys.stderr)
    return EventPrinter(color=render.use_color(), thinking=thinking, json_mode=args.json)


def answer_only(args: argparse.Namespace) -> bool:
    """Does stdout get the answer alone (a pipe or file, no --json/--verbose)?
    Then what a person reads beside it goes to stderr."""
    if args.json or getattr(args, "verbose", False):
        return False
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):
        return True


def aside(args: argparse.Namespace, text: str) -> None:
    """A line about a streamed command (created, forked...): on stdout, or on
    stderr when stdout carries the answer alone; none with -q."""
    if getattr(args, "quiet", False):
        return
    streams = getattr(args, "prompt", None) is not None and not getattr(args, "no_wait", False)
    print(text, file=sys.stderr if streams and answer_only(args) else sys.stdout, flush=True)


def latest_agent(c: Client) -> str:
    """The uuid of the live agent used last (``send -c``, ``chat -c``): the
    newest ``last_active_at`` (its creation for an agent never prompted)."""
    agents = c.agents()
    live = [a for a in agents if a.get("status") == "running"]
    if not live:
        raise p.RpcError(
            p.AGENT_NOT_FOUND,
            "no live agent to continue; create one with `ikictl new` (`ikictl ls -a` lists all)",
        )
    best = max(live, key=lambda a: (_when(a.get("last_active_at") or a["created_at"]), a["uuid"]))
    return best["uuid"]


def _when(text: object) -> float:
    from datetime import UTC, datetime

    try:
        t = datetime.fromisoformat(str(text))
    except ValueError:
        return 0.0  # unreadable: never the newest
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def bounded(value: int | None, option: str, low: int) -> None:
    """Refuse an option the daemon would refuse, in this command's terms (the
    daemon's message names the protocol's field, not the option)."""
    if value is None:
        return
    if value < low:
        raise UsageError(f"{option} must be {low} or more")
    if value > p.MAX_INT:
        raise UsageError(f"{option} must be at most {p.MAX_INT}")


def _out(args: argparse.Namespace, value: object) -> bool:
    """With --json print ``value`` and say so."""
    if args.json:
        render.dump_json(value)
        return True
    return False


def _model_lines(model: ModelInfo) -> None:
    for w in model.get("warnings") or []:
        print(f"note: {w}")


def _stream(args: argparse.Namespace, c: Client, agent: str, text: str) -> int:
    from ikictl.send_args import prompt_params
    from ikictl.stream import run_turn

    prompt = prompt_params(args)  # send's --tool / --no-tools / --schema
    if args.no_wait:
        res = c.enqueue(agent, text, **prompt)
        if not getattr(args, "quiet", False) and not _out(args, res):
            _print_started(res)
        return EXIT_OK
    shown = printer(args)
    if "schema" in prompt:
        from ikictl.answer_print import answer_printer

        shown = answer_printer(args, shown, answer_only(args))
    return run_turn(c, agent, text, shown, **prompt)


def _then_id(args: argparse.Namespace, code: int, uuid: str) -> int:
    """-q: the new agent's uuid, once its first turn (if any) has ended."""
    if args.quiet:
        print(uuid, flush=True)
    return code


def _print_started(res: Queued) -> None:
    pos = res.get("position", 0)
    if pos:
        print(f"turn {res['turn']} queued: {pos} turn(s) ahead")
    else:
        print(f"turn {res['turn']} started")


# ---------------------------------------------------------------- agents


def cmd_new(args: argparse.Namespace) -> int:
    text = prompt_text(args.prompt)
    c = client(args)
    res = c.create(
        model=args.model,
        name=args.name,
        system=args.system,
        cwd=folder_arg(args.cwd) or os.getcwd(),
        policy=policy_arg(args),
        mcp=mcp_arg(args),
        priority=args.priority,
        budget=budget_param(args),
        worktree=worktree_param(args),
        on=args.on,
    )
    return _born(args, c, res, text, f"created {render.label(res['agent'])}")


def _born(args: argparse.Namespace, c: Client, res: Created, text: str | None, what: str) -> int:
    """After agent.create / agent.fork: say so, then stream the first prompt."""
    info, model = res["agent"], res["model"]
    if args.json and not args.quiet:
        render.dump_json(res) if text is None else render.ndjson(res)
    else:
        aside(args, f"{what} · {model.get('description')}")
        for w in model.get("warnings") or []:
            aside(args, f"note: {w}")
        if (line := created_line(info)) is not None:
            aside(args, line)
    if text is None:
        return _then_id(args, EXIT_OK, info["uuid"])
    return _then_id(args, _stream(args, c, info["uuid"], text), info["uuid"])


def cmd_send(args: argparse.Namespace) -> int:
    args.attachments = attachments_arg(args)  # -a FILE: checked, stdin read, before connecting
    text = prompt_text(args.prompt)
    assert text is not None
    c = client(args)
    return _stream(args, c, latest_agent(c) if args.cont else args.agent, text)


def cmd_fork(args: argparse.Namespace) -> int:
    bounded(args.at, "--at", 0)
    if args.count is not None or args.prompts is not None:
        return _fork_many(args)
    text = prompt_text(args.prompt)
    c = client(args)
    res = c.fork(
        args.agent,
        model=args.model,
        at=args.at,
        name=args.name,
        cwd=folder_arg(args.cwd),
        policy=policy_arg(args),
        mcp=mcp_arg(args),
        priority=args.priority,
        budget=budget_param(args),
        worktree=worktree_param(args),
    )
    return _born(args, c, res, text, f"forked {args.agent} -> {render.label(res['agent'])}")


def _prompts_file(path: str) -> str:
    if path == "-":
        return _checked(sys.stdin.buffer.read(), "the prompts on stdin")
    try:
        with open(path, "rb") as f:
            return _checked(f.read(), f"--prompts {path}")
    except OSError as e:
        raise UsageError(f"--prompts {path}: cannot read it: {e.strerror}") from None


def _fork_many(args: argparse.Namespace) -> int:
    """fork --count N / --prompts FILE: the children in one call, listed; no streaming."""
    prompts: list[str] | None = None
    if args.prompts is not None:
        if args.count is not None or args.prompt is not None:
            raise UsageError("--prompts gives each child its prompt: no --count or PROMPT with it")
        lines = _prompts_file(args.prompts)
        prompts = [line for line in lines.splitlines() if line.strip()]
        if not prompts:
            raise UsageError(f"--prompts {args.prompts}: no prompt in it (one per line)")
    else:
        bounded(args.count, "--count", 1)
    c = client(args)
    res = c.fork_many(
        args.agent,
        prompts=prompts,
        count=args.count,
        prompt=prompt_text(args.prompt),
        model=args.model,
        at=args.at,
        name=args.name,
        cwd=folder_arg(args.cwd),
        policy=policy_arg(args),
        mcp=mcp_arg(args),
        priority=args.priority,
        budget=budget_param(args),
        worktree=worktree_param(args),
    )
    children = res["children"]
    if args.json:
        render.dump_json(res)
    elif args.quiet:
        for child in children:
            print(child["agent"]["uuid"])
    else:
        for child in children:
            turn = f" · turn {child['turn']}" if child["turn"] else ""
            print(f"forked {args.agent} -> {render.label(child['agent'])}{turn}")
            if (line := created_line(child["agent"])) is not None:
                print(f"  {line}")
    return EXIT_OK


def cmd_watch(args: argparse.Namespace) -> int:
    from ikictl.stream import EventPrinter, watch

    bounded(args.from_seq, "--from", 1)
    pr = EventPrinter(
        color=render.use_color(), thinking=not args.no_thinking, json_mode=args.json, headers=True
    )
    return watch(client(args), args.agent, pr, from_seq=args.from_seq, until_idle=args.until_idle)


def model_text(c: Client, agent: str, text: str) -> str:
    """``/LEVEL`` (only the thinking level) spelled out with the agent's
    current provider and model, which the daemon's model syntax needs."""
    if not text.strip().startswith("/"):
        return text
    info = c.show(agent)
    return f"{info['provider']}/{info['model']}{text.strip()}"


def cmd_model(args: argparse.Namespace) -> int:
    c = client(args)
    model = model_text(c, args.agent, args.model)
    res = c.set_model(args.agent, model, queue=args.queue)
    if not _out(args, res):
        print(f"{args.agent}: {res.get('description')}")
        _model_lines(res)
    return EXIT_OK


def cmd_system(args: argparse.Namespace) -> int:
    c = client(args)
    if args.text is None:
        info = c.show(args.agent)
        if not _out(args, {"system": info.get("system_prompt") or ""}):
            print(info.get("system_prompt") or "(no system prompt)")
        return EXIT_OK
    text = prompt_text(args.text)
    assert text is not None  # TEXT was given
    res = c.set_system(args.agent, text)
    if not _out(args, res):
        print(f"{args.agent}: system prompt {'set' if text else 'cleared'}")
    return EXIT_OK


def cmd_priority(args: argparse.Namespace) -> int:
    level = None if args.level == "auto" else args.level
    res = client(args).set_priority(args.agent, level)
    if not _out(args, res):
        level = res.get("priority") or "auto (each turn's, by who started it)"
        print(f"{args.agent}: priority {level}")
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    res = client(args).cancel(args.agent, at_boundary=args.at_boundary)
    if not _out(args, res):
        if res.get("cancelled"):
            when = " at the next boundary" if args.at_boundary else ""
            print(f"{args.agent}: cancelled the running turn{when}")
        else:
            print(f"{args.agent}: no turn was running")
    return EXIT_OK


def cmd_kill(args: argparse.Namespace) -> int:
    if args.force and not args.prune_worktree:
        raise UsageError("--force goes with --prune-worktree (a live agent is killed anyway)")
    c = client(args)
    res = c.kill(args.agent, prune_worktree=args.prune_worktree, force=args.force)
    tree = res.get("worktree")
    if not _out(args, res):
        killed = res.get("killed") or []
        more = len(killed) - 1
        tail = f" and {more} descendant{'s' if more != 1 else ''}" if more > 0 else ""
        print(f"killed {args.agent}{tail}: {', '.join(killed)}")
        if tree:
            print(worktree_gone(tree))
        elif args.prune_worktree:
            print(f"{args.agent} had no worktree: no other thing deleted")
    return EXIT_OK


def cmd_ls(args: argparse.Namespace) -> int:
    template = None
    if args.format is not None:
        from ikictl.fields import Template

        template = Template(args.format)  # a bad one is refused before the daemon is asked
    c = client(args)
    agents = c.agents(include_dead=args.all)
    if args.quiet:
        sys.stdout.write("".join(f"{a['uuid']}\n" for a in agents))
    elif template is not None:
        sys.stdout.write(template.render_all(agents, "ListedAgent"))
    elif not _out(args, agents):
        trees = ls_cells(agents, states(c, agents, pruned=args.all))
        render.agent_tree(
            agents,
            sys.stdout,
            color=render.use_color(),
            worktrees=trees,
            daemons=daemon_cells(c, agents),
        )
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    template = None
    if args.format is not None:
        from ikictl.fields import Template

        template = Template(args.format)
    info = client(args).show(args.agent)
    if template is not None:
        sys.stdout.write(template.render_all([info], "ShownAgent"))
    elif not _out(args, info):
        render.show_agent(info, sys.stdout)
        daemon_line(info, sys.stdout)
        show_block(info.get("worktree"), sys.stdout)
        print_budgets(info.get("budget"), sys.stdout)
    return EXIT_OK


def cmd_usage(args: argparse.Namespace) -> int:
    c = client(args)
    if args.agent is None:  # the whole database: one report per root agent
        whole = c.usage_all()
        if not _out(args, whole):
            render.whole_usage(whole, sys.stdout)
        return EXIT_OK
    rep = c.usage(args.agent, descendants=args.tree)
    agents: list[ListedAgent] | None = None
    if args.tree:
        agents = c.agents(include_dead=True)
    if _out(args, rep):
        return EXIT_OK
    who = rep["agent_uuid"]
    names: dict[str, str] = {}
    if agents is not None:
        by = {a["uuid"]: a for a in agents}
        keep = [a for a in agents if _under(a, who, by)]
        names = {a["uuid"]: render.label(a) for a in keep}
        render.agent_tree(keep, sys.stdout)
        print()
    if who not in names:
        names[who] = who if args.agent == who else f"{args.agent} ({who})"
    render.usage_report(rep, sys.stdout, names=names)
    print_budgets(rep.get("budget"), sys.stdout)
    return EXIT_OK


def _under(a: ListedAgent, root: str, by: dict[str, ListedAgent]) -> bool:
    at: ListedAgent | None = a
    seen = 0
    while at is not None and seen < 10_000:
        if at["uuid"] == root:
            return True
        parent = at.get("parent")
        at = by.get(parent) if parent is not None else None
        seen += 1
    return False


def _said(args: argparse.Namespace, res: MessageId, line: str) -> int:
    """After clear, mark or rewind: the answer (--json) or ``line``."""
    if not _out(args, res):
        print(line)
    return EXIT_OK


def _label(args: argparse.Namespace) -> str:
    return f" {args.label!r}" if args.label else ""


def cmd_clear(args: argparse.Namespace) -> int:
    res = client(args).clear(args.agent)
    mid = res.get("message_id")
    return _said(args, res, f"{args.agent}: context cleared (message #{mid})")


def cmd_mark(args: argparse.Namespace) -> int:
    res = client(args).mark(args.agent, args.label)
    mid = res.get("message_id")
    return _said(args, res, f"{args.agent}: mark{_label(args)} set (message #{mid})")


def cmd_rewind(args: argparse.Namespace) -> int:
    res = client(args).rewind(args.agent, args.label)
    mid = res.get("message_id")
    lab = _label(args) or " (the last one)"
    return _said(args, res, f"{args.agent}: rewound to mark{lab} (message #{mid})")


def cmd_mail_send(args: argparse.Namespace) -> int:
    text = prompt_text(args.text)
    assert text is not None  # TEXT is required
    res = client(args).send_mail(args.to, text, sender=args.sender)
    if not _out(args, res):
        print(f"mail #{res.get('id')} sent from {args.sender} to {args.to}")
    return EXIT_OK


def cmd_mail_inbox(args: argparse.Namespace) -> int:
    res = client(args).inbox(args.agent, unread=args.unread)
    if not _out(args, res):
        if not res:
            print("no unread mail" if args.unread else "no mail")
        for m in res or []:
            read = " (read)" if m.get("read_at") else " (unread)"
            print(
                f"#{m['id']} from {m.get('from') or '-'}{read}: "
                f"{render.one_line(m.get('body'), 100)}"
            )
    return EXIT_OK


# ---------------------------------------------------------------- daemon-wide


def cmd_status(args: argparse.Namespace) -> int:
    st = client(args, autostart=False).status()
    if not _out(args, st):
        render.status(st, sys.stdout)
        status_lines(st, sys.stdout)
    return EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    from ikictl._errors import DaemonUnreachable

    rows: list[ModelRow] | None = None
    if not args.offline:
        try:
            with client(args, autostart=False) as c:
                rows = c.models(args.provider)
        except DaemonUnreachable:
            rows = None
        except p.RpcError as e:
            if e.code != p.METHOD_NOT_FOUND:
                raise
    if rows is None:
        from ikictl.offline import catalog_models

        rows = catalog_models(args.provider)
    if not _out(args, rows):
        render.models(rows, sys.stdout)
    return EXIT_OK


def cmd_agents_for_completion(args: argparse.Namespace) -> int:
    """Names and short ids of live agents, one a line (for shell completion)."""
    from ikictl.client import Client, default_socket

    try:
        with Client.open(default_socket(args.socket), timeout=0.5) as c:
            agents = c.agents()
    except Exception:
        return EXIT_OK
    for a in agents:
        if a.get("name"):
            print(a["name"])
        print(render.short_of(a))
    return EXIT_OK
