"""``ikictl acp``: ikigai as an Agent Client Protocol agent, for editors.

An editor (Zed, a JetBrains IDE, Neovim's CodeCompanion) starts this process
and speaks ACP on its stdin and stdout; every session is an agent of the
running daemon. This module is the command's face only: the SDK (PyPI
``agent-client-protocol``, asyncio and pydantic) is imported when the command
runs, so no other command's start-up pays for it. See docs/acp.md."""

from __future__ import annotations

import argparse

__all__ = ["cmd_acp"]


def _add_acp(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        "-m",
        metavar="M/T",
        help="model of the agents new sessions make (default: config's default_model)",
    )
    p.add_argument(
        "--policy",
        metavar="NAME",
        help="tool policy of the agents new sessions make (default: config's)",
    )
    p.add_argument(
        "--permission-timeout",
        metavar="SECONDS",
        type=float,
        default=600.0,
        help="deny a tool call the editor has not answered about within SECONDS "
        "(default 600; 0: wait as long as the daemon does: see approval_timeout)",
    )


def cmd_acp(args: argparse.Namespace) -> int:
    import asyncio
    import logging
    import sys

    if sys.stdin.isatty() and sys.stdout.isatty():
        print(
            "ikictl acp: this is the process an editor starts and talks to over stdin and "
            "stdout (the Agent Client Protocol); configure your editor to run it: see docs/acp.md",
            file=sys.stderr,
        )
    # stdout is the protocol's: the SDK's and our logs go to stderr, the editor's log
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="ikictl acp: %(message)s")
    from ikictl.acp.serve import serve

    timeout = args.permission_timeout
    if timeout is not None and timeout < 0:
        print("ikictl acp: --permission-timeout: must be 0 or more seconds", file=sys.stderr)
        return 2
    return asyncio.run(
        serve(
            socket=args.socket,
            autostart=not args.no_autostart,
            model=args.model,
            policy=args.policy,
            permission_timeout=timeout or None,
        )
    )
