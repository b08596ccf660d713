"""What the commands of the families imported on demand (schedule,
worktree) share: the client of the command line's socket, and ``--json``
output. Stdlib only at import, as they are."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from ikictl.client import Client


def client(args: argparse.Namespace) -> Client:
    from ikictl.client import connect

    return connect(args.socket, autostart=not args.no_autostart)


def json_out(args: argparse.Namespace, value: object) -> bool:
    """Print ``value`` as JSON when ``--json`` was given; True when it was."""
    if args.json:
        from ikictl import render

        render.dump_json(value)
        return True
    return False
