"""``ikictl send -a FILE``: the files a prompt carries (agent.prompt's
``attachments``, docs/protocol.md). A file goes as its absolute path (the
daemon reads it: same user, same machine); ``-a -`` sends the bytes of
stdin inline, their type told by their first bytes. Checked here before
the daemon is asked: a file that is not there is named at once."""

from __future__ import annotations

import argparse
import os
import sys

from ikictl._errors import UsageError

TAKES = "pictures (PNG, JPEG, GIF, WEBP), PDF, text files"


def attach_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-a",
        "--attach",
        metavar="FILE",
        action="append",
        help=f"attach FILE to the prompt (repeatable; `-` reads stdin's bytes): {TAKES}. "
        "The daemon reads the file, checks its type and size against the agent's model, "
        "and keeps it with the history",
    )


def attachments_arg(args: argparse.Namespace) -> list[dict[str, str]]:
    """The ``attachments`` of send's ``-a`` options (none: []). stdin is read
    here, so call it before the prompt's own ``-`` would read it."""
    files: list[str] = getattr(args, "attach", None) or []
    if files.count("-") > 1:
        raise UsageError("-a -: stdin can be attached once")
    if "-" in files and getattr(args, "prompt", None) == "-":
        raise UsageError("-a - reads stdin: give the prompt as an argument, not `-`")
    out: list[dict[str, str]] = []
    for name in files:
        out.append(_stdin() if name == "-" else _path(name))
    return out


def _path(name: str) -> dict[str, str]:
    path = os.path.abspath(os.path.expanduser(name))
    if not os.path.exists(path):
        raise UsageError(f"-a {name}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"-a {name}: a folder, not a file")
    return {"path": path}


def _stdin() -> dict[str, str]:
    import base64

    from protocol.filetypes import bytes_type

    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("-a -: stdin is a terminal; pipe the file in (`... -a - A TEXT < FILE`)")
    data = sys.stdin.buffer.read()
    if not data:
        raise UsageError("-a -: stdin is empty")
    kind = bytes_type(data)
    if kind is None:
        raise UsageError(f"-a -: the bytes on stdin are not one of {TAKES}")
    return {"data": base64.b64encode(data).decode("ascii"), "media_type": kind, "name": "stdin"}
