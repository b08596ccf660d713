"""``ikictl send``'s options that shape the prompt itself: its tool choice
and the schema its answer must match (agent.prompt's ``tool_choice`` and
``schema``, docs/protocol.md)."""

from __future__ import annotations

import argparse
import os
import re

from ikictl._errors import UsageError

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import Any

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def prompt_options(p: argparse.ArgumentParser) -> None:
    # agent.prompt's tool_choice: {"name": NAME} or "none" (neither: the model decides)
    tools = p.add_mutually_exclusive_group()
    tools.add_argument(
        "--tool",
        dest="tool_choice",
        type=lambda name: {"name": name},
        metavar="NAME",
        help="make the turn's first model call a call of tool NAME (one the agent has)",
    )
    tools.add_argument(
        "--no-tools",
        dest="tool_choice",
        action="store_const",
        const="none",
        help="no tool call in this turn: the model answers in text",
    )
    p.add_argument(
        "--schema",
        metavar="FILE|NAME|JSON",
        help="the answer must be JSON matching this JSON Schema: a file, a schema saved "
        "with `ikictl schema save`, or the schema itself ('{...}'); on a pipe, stdout "
        "gets the parsed answer alone, as one line of JSON",
    )


def schema_arg(value: str) -> dict[str, object] | str:
    """--schema's value as agent.prompt takes it: a JSON Schema object, or a
    saved schema's name."""
    import json

    text = value.strip()
    if text.startswith("{"):
        where = "--schema"
    elif os.path.isfile(value):
        where = f"--schema {value}"
        try:
            with open(value, "rb") as f:
                text = f.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"{where}: cannot read it: {e}") from None
    elif _NAME.fullmatch(value):
        return value
    else:
        raise UsageError(
            f"--schema {value[:80]!r}: not a file, a saved schema's name, or a JSON object"
        )
    try:
        schema = json.loads(text)
    except ValueError as e:
        raise UsageError(f"{where}: not JSON: {e}") from None
    if not isinstance(schema, dict):
        raise UsageError(f"{where}: a JSON Schema is a JSON object, not {type(schema).__name__}")
    return schema


def prompt_params(args: argparse.Namespace) -> dict[str, Any]:
    """agent.prompt's params from send's options (none given: none sent)."""
    params: dict[str, Any] = {}
    choice = getattr(args, "tool_choice", None)  # --tool NAME / --no-tools
    if choice is not None:
        params["tool_choice"] = choice
    schema = getattr(args, "schema", None)
    if schema is not None:
        params["schema"] = schema_arg(schema)
    files = getattr(args, "attachments", None)  # -a FILE, resolved by attach_args.py
    if files:
        params["attachments"] = files
    return params
