"""``ikictl chat``: an interactive REPL on one agent.

Lines are prompts, streamed as they arrive; lines starting with ``/`` are
commands (``/help`` lists them). Ctrl+C cancels the running turn; a second
Ctrl+C (or Ctrl+D, or /exit) leaves. Line editing and history by readline,
kept in IKIGAI_HOME/ikictl_history (or $XDG_STATE_HOME/ikigai/ikictl_history).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

import protocol as p
from ikictl import render
from ikictl._errors import EXIT_INTERRUPTED, DaemonUnreachable, UsageError
from ikictl.client import Client
from ikictl.commands import (
    client,
    folder_arg,
    latest_agent,
    mcp_arg,
    model_text,
    policy_arg,
)
from ikictl.stream import EventPrinter, run_turn

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from protocol.results import AgentInfo

HELP = """\
commands (anything else is a prompt to the current agent):
  /model [MODEL]/THINKING       switch the model, e.g. /model gpt-4o/none; /model /high
                                changes only the thinking level
  /fork ["prompt"] [--model M/T] [--name N]
                                fork the current agent and switch to the child
  /kill [AGENT]                 end an agent (default: the current one) and its descendants
  /agents                       the agent tree (* marks the current one)
  /switch AGENT                 talk to another agent
  /clear                        start a fresh context
  /mark [label]                 set a checkpoint
  /rewind [label]               return to a checkpoint (default: the last one)
  /compact [N]                  summarize the oldest part of the context (history keeps
                                it all); N: keep the newest N turns as they are
  /system [text]                show or set the system prompt ("" clears it)
  /send AGENT "text"            mail another agent (it takes it as its next prompt)
  /history [N]                  the last N messages (default 10)
  /usage                        tokens and cost of the current agent
  /help                         this help
  /exit                         leave (Ctrl+D too)
Ctrl+C cancels the running turn; a second Ctrl+C leaves."""

SLASH = [
    "/model",
    "/fork",
    "/kill",
    "/agents",
    "/switch",
    "/clear",
    "/mark",
    "/rewind",
    "/compact",
    "/system",
    "/send",
    "/history",
    "/usage",
    "/help",
    "/exit",
    "/quit",
]


class _Leave(Exception):
    pass


def history_file() -> Path:
    home = os.environ.get("IKIGAI_HOME")
    if home:
        return Path(home) / "ikictl_history"
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "ikigai" / "ikictl_history"


class Chat:
    def __init__(self, c: Client, info: AgentInfo, *, thinking: bool) -> None:
        self.c = c
        self.info = info  # agent.show's answer, or the agent of agent.fork's
        self.color = render.use_color()
        self.style = render.Style(self.color)
        self.thinking = thinking
        self.interrupts = 0  # consecutive Ctrl+C

    # ------------------------------------------------------------ helpers

    @property
    def uuid(self) -> str:
        return self.info["uuid"]

    @property
    def name(self) -> str:
        return self.info.get("name") or self.uuid[:8]

    def say(self, text: str, code: str = render.DIM) -> None:
        print(self.style(code, text), flush=True)

    def refresh(self, ref: str | None = None) -> None:
        self.info = self.c.show(ref or self.uuid)

    def prompt_text(self) -> str:
        return f"{self.name}> "

    def turn(self, text: str) -> None:
        printer = EventPrinter(color=self.color, thinking=self.thinking)
        code = run_turn(self.c, self.uuid, text, printer)
        if code == EXIT_INTERRUPTED:
            if printer.abandoned:
                raise _Leave
            self.interrupts = 1

    # ------------------------------------------------------------ the loop

    def loop(self) -> int:
        self.say(
            f"chatting with {render.label(self.info)} · {render.model_of(self.info)}/"
            f"{self.info.get('thinking_level')}. /help lists commands; Ctrl+D leaves."
        )
        while True:
            try:
                line = input(self.prompt_text())
            except EOFError:
                print()
                return 0
            except UnicodeDecodeError as e:
                self.say(
                    f"that line is not valid UTF-8 (byte 0x{e.object[e.start]:02x}); not sent",
                    render.RED,
                )
                continue
            except KeyboardInterrupt:
                print()
                if self.interrupts:
                    return 0
                self.interrupts = 1
                self.say("(Ctrl+C again, Ctrl+D or /exit to leave)")
                continue
            self.interrupts = 0
            line = line.strip()
            if not line:
                continue
            try:
                if line.startswith("/"):
                    self.command(line)
                else:
                    self.turn(line)
            except _Leave:
                return 0
            except UsageError as e:  # the line itself is wrong (too large, not UTF-8)
                self.say(f"error: {render.safe(str(e))}", render.RED)
            except p.RpcError as e:
                self.say(f"error: {render.safe(e.message)}", render.RED)
                for cand in (
                    (e.data or {}).get("candidates", []) if isinstance(e.data, dict) else []
                ):
                    self.say(
                        f"  {cand.get('uuid')}  {cand.get('name') or '-'}  "
                        f"{cand.get('status') or ''}"
                    )
            except KeyboardInterrupt:
                print()
                self.interrupts = 1

    # ------------------------------------------------------------ slash commands

    def command(self, line: str) -> None:
        try:
            words = shlex.split(line)
        except ValueError:
            words = line.split()
        cmd, rest = words[0], words[1:]
        handler = getattr(self, "do_" + cmd[1:], None) if cmd[1:].isidentifier() else None
        if handler is None:
            self.say(f"unknown command {cmd}; /help lists them", render.RED)
            return
        handler(rest)

    def do_help(self, rest: list[str]) -> None:
        print(HELP)

    def do_exit(self, rest: list[str]) -> None:
        raise _Leave

    do_quit = do_exit

    def do_model(self, rest: list[str]) -> None:
        if not rest:
            self.say(f"{self.name}: {render.model_of(self.info)}/{self.info.get('thinking_level')}")
            return
        model = model_text(self.c, self.uuid, rest[0])
        res = self.c.set_model(self.uuid, model)
        self.say(f"{self.name}: {res.get('description')}")
        for w in res.get("warnings") or []:
            self.say(f"note: {w}")
        self.refresh()

    def do_fork(self, rest: list[str]) -> None:
        parser = argparse.ArgumentParser(prog="/fork", add_help=False, exit_on_error=False)
        parser.add_argument("--model", "-m")
        parser.add_argument("--name", "-n")
        parser.add_argument("prompt", nargs="*")
        try:
            a = parser.parse_intermixed_args(rest)
        except (argparse.ArgumentError, SystemExit) as e:
            self.say(f'/fork: {e}; usage: /fork ["prompt"] [--model M/T] [--name N]', render.RED)
            return
        res = self.c.fork(self.uuid, model=a.model, name=a.name)
        parent = self.name
        self.info = res["agent"]
        self.say(
            f"forked {parent} -> {render.label(self.info)} · "
            f"{res['model'].get('description')} (now talking to it)"
        )
        if a.prompt:
            self.turn(" ".join(a.prompt))

    def do_kill(self, rest: list[str]) -> None:
        target = rest[0] if rest else self.uuid
        res = self.c.kill(target)
        killed = res.get("killed") or []
        self.say(f"killed {', '.join(killed)}")
        if self.uuid in killed:
            parent = self.info.get("parent")
            if parent and parent not in killed:
                self.refresh(parent)
                self.say(f"now talking to {render.label(self.info)}")
            else:
                self.refresh()
                self.say("the current agent is dead: /switch to another or /exit")

    def do_agents(self, rest: list[str]) -> None:
        every = bool(rest and rest[0] in ("-a", "--all"))
        agents = self.c.agents(include_dead=every)
        render.agent_tree(agents, sys.stdout, mark=self.uuid, color=self.color)

    def do_switch(self, rest: list[str]) -> None:
        if not rest:
            self.say("usage: /switch AGENT", render.RED)
            return
        self.refresh(rest[0])
        self.say(
            f"now talking to {render.label(self.info)} · "
            f"{render.model_of(self.info)}/{self.info.get('thinking_level')}"
        )

    def do_clear(self, rest: list[str]) -> None:
        res = self.c.clear(self.uuid)
        self.say(f"{self.name}: context cleared (message #{res['message_id']})")

    def do_mark(self, rest: list[str]) -> None:
        label = " ".join(rest) or None
        res = self.c.mark(self.uuid, label)
        lab = f" {label!r}" if label else ""
        self.say(f"{self.name}: mark{lab} set (message #{res['message_id']})")

    def do_rewind(self, rest: list[str]) -> None:
        label = " ".join(rest) or None
        res = self.c.rewind(self.uuid, label)
        lab = f" {label!r}" if label else " (the last one)"
        self.say(f"{self.name}: rewound to mark{lab} (message #{res['message_id']})")

    def do_compact(self, rest: list[str]) -> None:
        if len(rest) > 1 or (rest and not rest[0].isdecimal()):
            self.say("usage: /compact [N] (N: the newest turns to keep, 0 or more)", render.RED)
            return
        from ikictl.compact import compact, outcome_text

        res = compact(self.c, self.uuid, int(rest[0]) if rest else None, who=self.name)
        failed, line = outcome_text(res, self.name)
        self.say(line, render.RED if failed else render.DIM)

    def do_system(self, rest: list[str]) -> None:
        if not rest:
            self.refresh()
            print(self.info.get("system_prompt") or "(no system prompt)")
            return
        text = " ".join(rest)
        self.c.set_system(self.uuid, text)
        self.say(f"{self.name}: system prompt {'set' if text else 'cleared'}")

    def do_send(self, rest: list[str]) -> None:
        if len(rest) < 2:
            self.say('usage: /send AGENT "text"', render.RED)
            return
        res = self.c.send_mail(rest[0], " ".join(rest[1:]), sender=self.uuid)
        self.say(f"mail #{res['id']} sent to {rest[0]}")

    def do_history(self, rest: list[str]) -> None:
        limit = int(rest[0]) if rest and rest[0].isdigit() else 10
        res = self.c.history(self.uuid, limit=limit)
        render.history(res.get("messages") or [], sys.stdout, style=self.style)

    def do_usage(self, rest: list[str]) -> None:
        rep = self.c.usage(self.uuid)
        render.usage_report(rep, sys.stdout, names={self.uuid: render.label(self.info)})


def _setup_readline() -> Path | None:
    try:
        import readline
    except ImportError:  # no line editing, still works
        return None
    path = history_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(2000)

    def complete(text: str, state: int) -> str | None:
        matches = [c + " " for c in SLASH if c.startswith(text)] if text.startswith("/") else []
        return matches[state] if state < len(matches) else None

    readline.set_completer(complete)
    readline.set_completer_delims(" \t\n")
    readline.parse_and_bind("tab: complete")
    return path


def _save_history(path: Path | None) -> None:
    if path is None:
        return
    try:
        import readline

        readline.write_history_file(path)
    except OSError:
        pass


def cmd_chat(args: argparse.Namespace) -> int:
    existing = args.agent or args.cont
    if existing and policy_arg(args):
        # an agent's policy is set when it is made: silently ignoring it would mislead
        raise UsageError("--policy/--yolo are for a new agent (chat without AGENT or -c)")
    if existing and mcp_arg(args) is not None:
        raise UsageError("--mcp/--no-mcp are for a new agent (chat without AGENT or -c)")
    c = client(args)
    if args.cont:
        args.agent = latest_agent(c)
    info: AgentInfo
    if args.agent:
        info = c.show(args.agent)
    else:
        res = c.create(
            model=args.model,
            name=args.name,
            cwd=folder_arg(args.cwd) or os.getcwd(),
            policy=policy_arg(args),
            mcp=mcp_arg(args),
        )
        info = res["agent"]
        print(f"created {render.label(info)} · {res['model'].get('description')}")
    chat = Chat(c, info, thinking=not args.no_thinking)
    hist = _setup_readline() if sys.stdin.isatty() else None
    try:
        return chat.loop()
    except DaemonUnreachable:
        raise
    finally:
        _save_history(hist)
        c.close()
