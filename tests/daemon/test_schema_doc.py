"""docs/protocol.schema.json is what ``python -m protocol.schema`` writes
today: a change of protocol/results.py without regenerating it fails here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import protocol as p
from protocol import results as R
from protocol import schema

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "protocol.schema.json"


def test_the_committed_schema_is_what_the_module_writes() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "protocol.schema"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == COMMITTED.read_text(encoding="utf-8"), (
        "docs/protocol.schema.json is stale: run `python -m protocol.schema > docs/protocol.schema.json`"
    )


def test_every_method_has_a_result_schema() -> None:
    doc = json.loads(COMMITTED.read_text(encoding="utf-8"))
    methods = {v for k, v in vars(p).items() if k.isupper() and isinstance(v, str) and "." in v}
    notifications = {p.EVENT, p.SUBSCRIPTION_END, p.DAEMON_EVENT}
    assert methods - notifications == set(doc["properties"]) == set(R.RESULTS)
    assert doc["protocol_version"] == p.PROTOCOL_VERSION


def test_the_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(R.RESULTS, "agent.rename", R.Ok)
    assert schema.text() != COMMITTED.read_text(encoding="utf-8")


def test_answers_validate_against_it() -> None:
    doc = json.loads(COMMITTED.read_text(encoding="utf-8"))

    def valid(method: str, value: object) -> bool:
        check = {
            "$ref": f"#/properties/{method}",
            "$defs": doc["$defs"],
            "properties": doc["properties"],
        }
        return jsonschema.Draft202012Validator(check).is_valid(value)

    assert valid("agent.remove", {"removed": ["019a"], "purged_rows": 3})
    assert not valid("agent.remove", {"removed": "019a", "purged_rows": 3})
    assert not valid("agent.remove", {"removed": []})
