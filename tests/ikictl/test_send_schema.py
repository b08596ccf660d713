"""``ikictl send --schema`` and ``ikictl schema``: the real ikictl against a
real ikigaid, the fake provider over loopback in this process (so the test
reads the request bodies the daemon sent)."""

from __future__ import annotations

import json

import pytest

from tests.fakes.script import Reply, ToolCall

from .test_send_tool import gpt_daemon, ikictl

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "people": {"type": "integer"}},
    "required": ["city", "people"],
    "additionalProperties": False,
}


@pytest.fixture
async def ikigaid(fake_provider):
    async with gpt_daemon(fake_provider) as d:
        yield d


async def test_on_a_pipe_send_schema_prints_the_parsed_answer_alone(ikigaid, fake_provider, tmp_path):
    """The schema from a file, inline, or saved by name; a first answer the
    retry corrected never reaches stdout."""
    await ikictl(ikigaid, "new", "--name", "t", "-q")
    schema_file = tmp_path / "city.json"
    schema_file.write_text(json.dumps(CITY))
    fake_provider.push(Reply(text='```json\n{"city": "Lyon", "people": 522000}\n```'))
    out, _ = await ikictl(ikigaid, "send", "t", "--schema", str(schema_file), "biggest?")
    assert out == '{"city": "Lyon", "people": 522000}\n'
    fmt = fake_provider.requests[-1].json["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"]["required"] == ["city", "people"]
    fake_provider.push(Reply(text='{"city": "Lyon"}'), Reply(text='{"city": "Nice", "people": 1}'))
    out, err = await ikictl(ikigaid, "send", "t", "--schema", json.dumps(CITY), "again")
    assert out == '{"city": "Nice", "people": 1}\n'
    assert "does not match the schema" in err and "Lyon" not in out
    await ikictl(ikigaid, "schema", "save", "city", "-", "-d", "a city", stdin=json.dumps(CITY).encode())
    out, _ = await ikictl(ikigaid, "schema", "ls")
    assert out.startswith("city  ") and out.rstrip().endswith("a city")
    fake_provider.push(Reply(text='{"city": "Pau", "people": 2}'))
    out, _ = await ikictl(ikigaid, "send", "t", "--schema", "city", "small?")
    assert json.loads(out) == {"city": "Pau", "people": 2}
    out, _ = await ikictl(ikigaid, "schema", "show", "city")
    assert json.loads(out) == CITY
    await ikictl(ikigaid, "schema", "rm", "city")
    _, err = await ikictl(ikigaid, "schema", "rm", "city", code=4)
    assert "no saved schema is named city" in err


async def test_send_schema_failures_exit_1_with_the_reason_and_nothing_on_stdout(ikigaid, fake_provider):
    await ikictl(ikigaid, "new", "--name", "t", "-q")
    fake_provider.push(Reply(text="no"), Reply(text="still no"))
    out, err = await ikictl(ikigaid, "send", "t", "--schema", json.dumps(CITY), "x", code=1)
    assert out == ""
    assert "invalid_output" in err and "the answer is not JSON" in err
    _, err = await ikictl(ikigaid, "send", "t", "--schema", '{"type": 3}', "x", code=2)
    assert err.startswith("ikictl: schema: not a valid JSON Schema at /type"), err
    _, err = await ikictl(ikigaid, "send", "t", "--schema", "{nope", "x", code=2)
    assert err.startswith("ikictl: --schema: not JSON"), err
    _, err = await ikictl(ikigaid, "send", "t", "--schema", "no such/file.json", "x", code=2)
    assert "not a file, a saved schema's name, or a JSON object" in err
    _, err = await ikictl(ikigaid, "send", "t", "--schema", "[1]", "x", code=2)
    assert "not a file, a saved schema's name, or a JSON object" in err
    _, err = await ikictl(ikigaid, "send", "t", "--schema", "unsaved", "x", code=2)
    assert "no saved schema is named 'unsaved'" in err
    assert len(fake_provider.requests) == 2


async def test_an_answer_through_the_tool_is_printed_too(ikigaid, fake_provider):
    """A model without structured output answers through final_result (no
    text streams): on a pipe stdout still gets the answer alone; --json
    gives the turn_ended event with ``data``."""
    await ikictl(ikigaid, "new", "--name", "t", "--model", "openai/my-finetune", "-q")
    fake_provider.push(Reply(tool_calls=[ToolCall("final_result", {"city": "Metz", "people": 3}, id="c1")]))
    out, _ = await ikictl(ikigaid, "--json", "send", "t", "--schema", json.dumps(CITY), "x")
    events = [json.loads(line) for line in out.splitlines()]
    ended = [e for e in events if e.get("event", {}).get("type") == "turn_ended"]
    assert ended and ended[-1]["event"]["data"] == {"city": "Metz", "people": 3}
    assert fake_provider.requests[-1].json["tool_choice"] == "required"
    fake_provider.push(Reply(tool_calls=[ToolCall("final_result", {"city": "Ay", "people": 4}, id="c2")]))
    out, _ = await ikictl(ikigaid, "send", "t", "--schema", json.dumps(CITY), "y")
    assert out == '{"city": "Ay", "people": 4}\n'
