"""ikictl talks to the daemon through the client's typed methods (issue 28),
and the ``ikictl mcp`` actions are one table their parsers are built from."""

from __future__ import annotations

import argparse
import ast
import importlib

from ikictl import _parsers
from ikictl.cli import command_parser, parse
from ikictl.completion import _q, bash, zsh

from .conftest import ROOT

# the two methods called by name: ikictl reads their events from the
# connection's one queue of notifications (ikictl.stream._subscribe says why)
BY_NAME = {"AGENT_SUBSCRIBE", "DAEMON_SUBSCRIBE"}


def _raw_calls() -> list[str]:
    """``file:line METHOD`` of every ``x.call(METHOD, ...)`` in ikictl/."""
    found = []
    for path in sorted((ROOT / "ikictl").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != "call":
                continue
            first = node.args[0] if node.args else None
            name = first.attr if isinstance(first, ast.Attribute) else ast.unparse(first) if first else "?"
            if name not in BY_NAME:
                found.append(f"{path.name}:{node.lineno} {name}")
    return found


def test_ikictl_calls_the_typed_methods_not_methods_by_name() -> None:
    assert _raw_calls() == []


def _words(text: str | None) -> str:
    return " ".join((text or "").split())  # argparse wraps lines to the terminal's width


def test_the_mcp_actions_are_built_from_one_table() -> None:
    mcp = command_parser("mcp")
    subs = next(a for a in mcp._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert list(subs) == [row[0] for row in _parsers.MCP_ACTIONS]
    listing = _words(mcp.format_help())
    for name, help, description, arguments, handler in _parsers.MCP_ACTIONS:
        assert f"{name} {help}" in listing  # `ikictl mcp --help`
        own = _words(subs[name].format_help())  # `ikictl mcp NAME --help`
        assert _words(description) in own and "--socket PATH" in own
        for names, options in arguments:
            assert (options.get("metavar") or names[0]) in own and _words(options["help"]) in own
        module, func = handler.split(":")
        assert callable(getattr(importlib.import_module(f"ikictl.{module}"), func))
        needed = [n for n, o in arguments if not n[0].startswith("-") and o.get("nargs") != "?"]
        args = parse(["mcp", name, *("git" for _ in needed)])
        assert args.mcp_command == name and args.func == handler
    assert parse(["mcp", "ls", "-l"]).long and parse(["mcp", "watch"]).server is None
    names = " ".join(row[0] for row in _parsers.MCP_ACTIONS)
    assert f'compgen -W "{names} ' in bash()
    script = zsh()
    assert all(f"'{row[0]}:{_q(row[2])}'" in script for row in _parsers.MCP_ACTIONS)
