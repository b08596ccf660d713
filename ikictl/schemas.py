"""``ikictl schema``: JSON Schemas saved by name in the daemon's database,
for ``ikictl send --schema NAME`` and ``agent.prompt {schema: NAME}``."""

from __future__ import annotations

import argparse
import sys

from ikictl._calls import client as _client
from ikictl._calls import json_out as _json
from ikictl._errors import EXIT_NOT_FOUND, EXIT_OK, UsageError

DESCRIPTION = """\
Save JSON Schemas by name, for prompts whose answer must be JSON matching
one: `ikictl send AGENT --schema NAME "..."`. Saved in the daemon's database,
so every daemon sharing it knows them. A schema is checked when it is saved
(a valid JSON Schema, 2020-12 unless its $schema names another draft)."""


def _action(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    glob: argparse.ArgumentParser,
    name: str,
    help: str,
) -> argparse.ArgumentParser:
    p = sub.add_parser(name, parents=[glob], help=help, description=help[0].upper() + help[1:])
    p.set_defaults(func=f"schemas:cmd_{name}")
    return p


def _add_schema(p: argparse.ArgumentParser, glob: argparse.ArgumentParser) -> None:
    p.description = DESCRIPTION
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    sub = p.add_subparsers(dest="schema_command", metavar="ACTION", required=True)
    save = _action(sub, glob, "save", "save a JSON Schema by name (replacing one of that name)")
    save.add_argument("name", metavar="NAME", help="letters, digits, _ . - (up to 128)")
    save.add_argument("file", metavar="FILE", help="the schema, a JSON file (`-` reads stdin)")
    save.add_argument("--description", "-d", default="", help="what it is for")
    _action(sub, glob, "ls", "list the saved schemas")
    show = _action(sub, glob, "show", "print a saved schema")
    show.add_argument("name", metavar="NAME")
    rm = _action(sub, glob, "rm", "delete a saved schema")
    rm.add_argument("name", metavar="NAME")


def cmd_save(args: argparse.Namespace) -> int:
    import json

    where = "stdin" if args.file == "-" else args.file
    try:
        if args.file == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as f:
                raw = f.read()
        schema = json.loads(raw.decode("utf-8"))
    except OSError as e:
        raise UsageError(f"{where}: cannot read it: {e.strerror}") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"{where}: not JSON: {e}") from None
    if not isinstance(schema, dict):
        raise UsageError(f"{where}: a JSON Schema is a JSON object, not {type(schema).__name__}")
    res = _client(args).schema_save(args.name, schema, description=args.description)
    if not _json(args, res):
        print(f"saved schema {res['name']}")
    return EXIT_OK


def cmd_ls(args: argparse.Namespace) -> int:
    rows = _client(args).schema_list()
    if not _json(args, rows):
        if not rows:
            print("no saved schema (ikictl schema save NAME FILE)")
        width = max((len(r["name"]) for r in rows), default=0)
        for r in rows:
            when = r["updated_at"][:19].replace("T", " ")
            print(f"{r['name']:<{width}}  {when}  {r['description']}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    import json

    res = _client(args).schema_show(args.name)
    if not _json(args, res):
        print(json.dumps(res["schema"], indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_rm(args: argparse.Namespace) -> int:
    res = _client(args).schema_delete(args.name)
    if not _json(args, res):
        if not res["deleted"]:
            print(f"ikictl: no saved schema is named {args.name}", file=sys.stderr)
            return EXIT_NOT_FOUND
        print(f"deleted schema {args.name}")
    return EXIT_OK
