#!/usr/bin/env python3
"""Extract: one structured record from each file of a folder, by forks of
one agent working in parallel; prints the records as JSON lines.

    python examples/extract.py invoices/                 # the daemon's default model
    python examples/extract.py invoices/ --model gpt-4o --jobs 4

The record's shape is the ``Invoice`` dataclass below: the client library
turns it into a JSON Schema, the daemon has each answer validated against it
(a wrong one is corrected once, then the turn fails ``invalid_output``), and
each outcome's ``data`` comes back as an ``Invoice``. A file that yields no
valid record is named on stderr, and the exit code is 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated

import msgspec

import ikigai

INSTRUCTIONS = (
    "You extract invoice records. Each prompt gives you one document; answer with "
    "the invoice's fields as they appear in it. A field the document lacks is an "
    "empty string (or 0 for the total)."
)
MAX_BYTES = 200_000  # a file bigger than this is skipped: it is not an invoice


@dataclasses.dataclass
class Invoice:
    vendor: str
    invoice_number: str
    date: str  # as written in the document
    total: Annotated[float, msgspec.Meta(ge=0)]  # a credit note is not an invoice
    currency: str


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="the folder of documents (text files)")
    ap.add_argument("--model", help="provider/model/thinking (default: the daemon's)")
    ap.add_argument("--jobs", type=int, default=8, help="forks working at once (default 8)")
    ap.add_argument("--name", default="extract", help="the agents' name (default extract)")
    ap.add_argument("--socket", help="the daemon's control socket")
    args = ap.parse_args(argv)
    files = sorted(
        f for f in args.folder.iterdir() if f.is_file() and f.stat().st_size <= MAX_BYTES
    )
    if not files:
        print(f"{args.folder}: no file to read", file=sys.stderr)
        return 1

    failed = 0
    with ikigai.connect(args.socket) as c:
        root = c.create(model=args.model, name=args.name, system=INSTRUCTIONS)["agent"]["uuid"]
        for start in range(0, len(files), max(1, args.jobs)):
            batch = files[start : start + max(1, args.jobs)]
            # one fork per file, made in one call; each prompt runs in the daemon at once
            forks = c.fork_many(root, count=len(batch), name=f"{args.name}-{start // args.jobs}")
            turns = []
            for path, child in zip(batch, forks["children"], strict=True):
                text = f"The document {path.name}:\n\n{path.read_text(errors='replace')}"
                turns.append((path, c.prompt(child["agent"]["uuid"], text, schema=Invoice)))
            for path, turn in turns:
                outcome = turn.wait()
                if outcome["status"] != "completed":
                    failed += 1
                    error = outcome.get("error") or {}
                    why = f"{error.get('category')}: {error.get('message')}"
                    print(f"{path.name}: {why}", file=sys.stderr)
                    continue
                record: Invoice = outcome["data"]
                print(json.dumps({"file": path.name, **dataclasses.asdict(record)}), flush=True)
    print(f"{len(files)} files, {failed} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
