"""The JSON Schema of every control method's result, from protocol/results.py:

    python -m protocol.schema > docs/protocol.schema.json

One document: ``properties`` maps each method name to the schema of its
result (``{"$ref": "protocol.schema.json#/properties/agent.list"}`` validates
one answer), the shared shapes are under ``$defs``. tests/daemon/
test_schema_doc.py fails when the committed file differs from this output.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import msgspec

import protocol as p
from protocol.results import RESULTS, AllUsage, Forked


def schema() -> dict[str, Any]:
    methods = sorted(RESULTS)
    # AllUsage and Forked too: the other answers of agent.usage and agent.fork,
    # which RESULTS cannot name
    results, defs = msgspec.json.schema_components(
        [*(RESULTS[m] for m in methods), AllUsage, Forked], ref_template="#/$defs/{name}"
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ikigai control protocol: the result of each method",
        "description": (
            "Generated from protocol/results.py by `python -m protocol.schema`. "
            "protocol_version is daemon.status's: it changes only when a change is "
            "incompatible. agent.prompt with wait: true answers as agent.wait does; "
            "agent.usage without an agent answers AllUsage; agent.fork with count or "
            "prompts answers Forked."
        ),
        "protocol_version": p.PROTOCOL_VERSION,
        "type": "object",
        "properties": dict(zip(methods, results[: len(methods)], strict=True)),
        "$defs": dict(sorted(defs.items())),
    }


def text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def main() -> None:
    sys.stdout.write(text())


if __name__ == "__main__":
    main()
