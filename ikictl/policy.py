"""An agent's tool policy on the command line: ``ikictl policy AGENT`` shows
its chain, ``ikictl policy AGENT NAME`` sets its own policy from its next tool
call on (a running turn's included), ``--default`` gives it back the
configured default (a fork: its parent's chain). A fork keeps its ancestors'
policies before its own, so it can only narrow them (docs/protocol.md,
``agent.set_policy``).

Stdlib only at import: this module is imported when the command is named."""

from __future__ import annotations

import argparse

from ikictl._errors import EXIT_OK, UsageError
from ikictl._parsers import _agent


def _add_policy(p: argparse.ArgumentParser) -> None:
    _agent(p)
    # NAME or --default: checked by cmd_policy (intermixed parsing takes no
    # positional in a mutually exclusive group)
    p.add_argument(
        "name",
        metavar="NAME",
        nargs="?",
        help="the policy to set (built-in: default, yolo; or one from config); "
        "none: show the agent's",
    )
    p.add_argument(
        "--default",
        action="store_true",
        help="no policy of its own: the configured default (a fork: its parent's chain)",
    )


def cmd_policy(args: argparse.Namespace) -> int:
    from ikictl import render
    from ikictl.commands import _out, client

    if args.default and args.name is not None:
        raise UsageError("give NAME or --default, not both")
    c = client(args)
    if args.name is None and not args.default:
        info = c.show(args.agent)
        if not _out(args, {"agent": info["uuid"], "policy": info.get("policy") or []}):
            print(f"{args.agent}: policy {render.safe_line(render.chain_text(info))}")
        return EXIT_OK
    res = c.set_policy(args.agent, None if args.default else args.name)
    if not _out(args, res):
        chain = " > ".join(render.safe_line(n) for n in res["policy"])
        print(f"{args.agent}: policy {chain}{' (its default)' if args.default else ''}")
    return EXIT_OK
