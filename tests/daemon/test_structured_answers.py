"""``agent.prompt {schema}`` over the real socket of a real ikigaid, against
the fake provider over loopback (as strict as each API about the schema
fields): each wire API is asked its native way, or through the
``final_result`` tool for a model without structured output; the answer is
validated, corrected once, or the turn ends ``invalid_output`` with the raw
text kept; saved schemas by name; a queued schema survives kill -9; every
bad schema is refused naming ``schema`` with nothing stored."""

from __future__ import annotations

import json
import signal

import pytest
import trio

from protocol import INVALID_PARAMS, TURN_FAILED
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Reply, Stall, ToolCall

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}
GOOD = {"name": "Ada", "age": 36, "tags": ["math"]}
NATIVE = {
    "messages": "anthropic/claude-sonnet-4-5",
    "chat": "openai/gpt-4o",
    "responses": "openai/gpt-5",
    "generate_content": "google/gemini-2.5-flash",
}


def _native_schema(api: str, body: dict) -> object:
    """The response schema as the request carries it, per API."""
    if api == "messages":
        fmt = body["output_config"]["format"]
        assert fmt["type"] == "json_schema"
        return fmt["schema"]
    if api == "chat":
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        return fmt["json_schema"]["schema"]
    if api == "responses":
        fmt = body["text"]["format"]
        assert fmt["type"] == "json_schema" and fmt["strict"] is True
        return fmt["schema"]
    gen = body["generationConfig"]
    assert gen["responseMimeType"] == "application/json"
    return gen.get("responseJsonSchema", gen.get("responseSchema"))


@pytest.fixture
def bare_home(daemon_home, fake_provider):
    """Agents without tools: Gemini 2.5 takes a response schema only then."""
    write_home(daemon_home, fake_provider, tools={"enabled": []})
    return daemon_home


@pytest.mark.parametrize("api", list(NATIVE))
async def test_each_wire_api_is_asked_natively_and_the_answer_parsed(nursery, bare_home, fake_provider, api):
    d = DaemonProcess(bare_home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", model=NATIVE[api]))["agent"]["uuid"]
        fake_provider.push(Reply(text=json.dumps(GOOD)))
        with trio.fail_after(30):
            done = await c.call("agent.prompt", agent=uuid, text="who?", schema=PERSON, wait=True)
        assert done["status"] == "completed", done
        assert done["data"] == GOOD and json.loads(done["reply"]) == GOOD
        sent = _native_schema(api, fake_provider.requests[-1].json)
        assert isinstance(sent, dict) and "name" in json.dumps(sent)
        # a prompt without a schema has no data, and asks nothing of the kind
        fake_provider.push(Reply(text="plain"))
        with trio.fail_after(30):
            plain = await c.call("agent.prompt", agent=uuid, text="hi", wait=True)
        assert "data" not in plain and plain["reply"] == "plain"
        body = json.dumps(fake_provider.requests[-1].json)
        assert "json_schema" not in body and "responseMimeType" not in body
    finally:
        d.stop()


async def test_a_wrong_answer_is_corrected_once(nursery, daemon, fake_provider):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model="openai/gpt-4o"))["agent"]["uuid"]
    await c.call("agent.subscribe", agent=uuid)
    fake_provider.push(Reply(text='{"name": "Ada", "age": -1, "tags": []}'), Reply(text=json.dumps(GOOD)))
    queued = await c.call("agent.prompt", agent=uuid, text="who?", schema=PERSON)
    events = await c.events_until(lambda ev: ev["turn"] == queued["turn"] and ev["event"]["type"] == "turn_ended")
    ended = events[-1]["event"]
    assert ended["status"] == "completed" and ended["data"] == GOOD, ended
    notes = [e["event"]["text"] for e in events if e["event"]["type"] == "notice"]
    assert any("does not match the schema (at /age: -1 is less than the minimum of 0)" in n for n in notes), notes
    second = fake_provider.requests[-1].json["messages"]
    assert second[-2]["role"] == "assistant" and "-1" in json.dumps(second[-2])
    assert second[-1]["role"] == "user" and "at /age" in json.dumps(second[-1])
    # history keeps both answers and the correction, in order
    history = await c.call("agent.history", agent=uuid)
    kinds = [m["kind"] for m in history["messages"]]
    assert kinds == ["user", "assistant", "user", "assistant"], kinds


async def test_two_wrong_answers_end_the_turn_invalid_output_with_the_raw_text(nursery, daemon, fake_provider):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model="anthropic/claude-sonnet-4-5"))["agent"]["uuid"]
    fake_provider.push(Reply(text="Sure! Ada, 36."), Reply(text='{"name": "Ada"}'))
    with trio.fail_after(30), pytest.raises(RpcFailure) as e:
        await c.call("agent.prompt", agent=uuid, text="who?", schema=PERSON, wait=True)
    assert e.value.code == TURN_FAILED
    data = e.value.error["data"]
    assert data["status"] == "error" and data["error"]["category"] == "invalid_output"
    assert "'age' is a required property" in data["error"]["message"]
    assert data["reply"] == '{"name": "Ada"}' and data["data"] is None
    assert len(fake_provider.requests) == 2
    # the agent goes on: its next turn is whole and valid for the API
    fake_provider.push(Reply(text="ok"))
    with trio.fail_after(30):
        assert (await c.call("agent.prompt", agent=uuid, text="fine", wait=True))["status"] == "completed"


def _final_result_steps() -> list[Reply]:
    return [
        Reply(tool_calls=[ToolCall("glob", {"pattern": "*.none"}, id="c1")]),
        Reply(tool_calls=[ToolCall("final_result", GOOD, id="c2")]),
        Reply(text="next"),
    ]


async def test_claude_without_structured_output_answers_through_final_result(nursery, daemon, fake_provider):
    """Its tools stay offered (a tool is required each step: final_result
    ends the turn), thinking goes for those forced calls, and the history
    stays valid for the API (every call has its result)."""
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model="anthropic/claude-sonnet-4-20250514/low"))["agent"]["uuid"]
    fake_provider.push(*_final_result_steps())
    with trio.fail_after(30):
        done = await c.call("agent.prompt", agent=uuid, text="who?", schema=PERSON, wait=True)
    assert done["status"] == "completed" and done["data"] == GOOD, done
    first = fake_provider.requests[0].json
    tools = {t["name"]: t for t in first["tools"]}
    assert tools["final_result"]["input_schema"] == PERSON and "glob" in tools
    assert first["tool_choice"] == {"type": "any"} and "thinking" not in first
    assert "output_config" not in first
    with trio.fail_after(30):
        assert (await c.call("agent.prompt", agent=uuid, text="and?", wait=True))["reply"] == "next"
    last = fake_provider.requests[-1].json
    assert "final_result" not in json.dumps(last.get("tools", []))  # only for the schema's turn
    results = [
        b for m in last["messages"] if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"
    ]
    assert [r["tool_use_id"] for r in results] == ["c1", "c2"]


async def test_a_chat_model_unknown_to_the_catalog_answers_through_final_result(nursery, daemon, fake_provider):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model="openai/my-finetune"))["agent"]["uuid"]
    fake_provider.push(*_final_result_steps())
    with trio.fail_after(30):
        done = await c.call("agent.prompt", agent=uuid, text="who?", schema=PERSON, wait=True)
    assert done["status"] == "completed" and done["data"] == GOOD, done
    first = fake_provider.requests[0].json
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert tools["final_result"]["parameters"]["properties"] == PERSON["properties"]
    assert first["tool_choice"] == "required" and "response_format" not in first
    with trio.fail_after(30):
        assert (await c.call("agent.prompt", agent=uuid, text="and?", wait=True))["reply"] == "next"
    answered = [m["tool_call_id"] for m in fake_provider.requests[-1].json["messages"] if m["role"] == "tool"]
    assert answered == ["c1", "c2"]


async def test_a_schema_whose_root_is_not_an_object_goes_wrapped_in_the_tool(nursery, daemon, fake_provider):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model="anthropic/claude-sonnet-4-20250514"))["agent"]["uuid"]
    listing = {"type": "array", "items": {"type": "integer"}, "minItems": 2}
    fake_provider.push(
        Reply(tool_calls=[ToolCall("final_result", {"result": [1]}, id="a")]),
        Reply(tool_calls=[ToolCall("final_result", {"result": [1, 2]}, id="b")]),
    )
    with trio.fail_after(30):
        done = await c.call("agent.prompt", agent=uuid, text="numbers", schema=listing, wait=True)
    assert done["data"] == [1, 2] and done["reply"] == "[1, 2]"
    second = json.dumps(fake_provider.requests[1].json["messages"][-1])
    assert "is too short" in second and "Call final_result again" in second


BAD = [
    ({"type": "nope"}, "schema: not a valid JSON Schema at /type"),
    ({"type": "object", "properties": []}, "schema: not a valid JSON Schema at /properties"),
    ({"type": "object", "required": "name"}, "schema: not a valid JSON Schema at /required"),
    ({"$ref": "#/$defs/missing"}, "schema: not a usable JSON Schema"),
    ("no-such-saved", "schema: no saved schema is named 'no-such-saved'"),
]


async def test_a_bad_schema_is_refused_naming_it_with_nothing_stored(nursery, daemon, fake_provider):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model="openai/gpt-4o"))["agent"]["uuid"]
    for schema, said in BAD:
        with trio.fail_after(30), pytest.raises(RpcFailure) as e:
            await c.call("agent.prompt", agent=uuid, text="x", schema=schema, wait=True)
        assert e.value.code == INVALID_PARAMS and e.value.error["message"].startswith(said), (schema, e.value.error)
    deep: dict = {"type": "object"}
    for _ in range(25):  # 51 levels: within a request line's 64, over a schema's 40
        deep = {"type": "object", "properties": {"a": deep}}
    with trio.fail_after(30), pytest.raises(RpcFailure) as e:
        await c.call("agent.prompt", agent=uuid, text="x", schema=deep)
    assert e.value.error["message"] == "schema: nested deeper than 40 levels"
    for wrong in (5, ["a"], True, "", "bad name!"):
        with trio.fail_after(30), pytest.raises(RpcFailure) as e:
            await c.call("agent.prompt", agent=uuid, text="x", schema=wrong)
        assert e.value.code == INVALID_PARAMS and "schema" in e.value.error["message"], wrong
    assert (await c.call("agent.history", agent=uuid))["messages"] == []
    assert fake_provider.requests == []


async def test_saved_schemas_by_name(nursery, daemon, fake_provider):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    saved = await c.call("schema.save", name="person", schema=PERSON, description="a person")
    assert saved["name"] == "person" and saved["description"] == "a person"
    assert [s["name"] for s in await c.call("schema.list")] == ["person"]
    assert (await c.call("schema.show", name="person"))["schema"] == PERSON
    with pytest.raises(RpcFailure) as e:
        await c.call("schema.save", name="broken", schema={"type": 7})
    assert e.value.code == INVALID_PARAMS and e.value.error["message"].startswith("schema: not a valid JSON Schema")
    with pytest.raises(RpcFailure) as e:
        await c.call("schema.save", name="../x", schema=PERSON)
    assert e.value.code == INVALID_PARAMS and "name" in e.value.error["message"]
    uuid = (await c.call("agent.create", model="openai/gpt-4o"))["agent"]["uuid"]
    fake_provider.push(Reply(text=json.dumps(GOOD)))
    with trio.fail_after(30):
        done = await c.call("agent.prompt", agent=uuid, text="who?", schema="person", wait=True)
    assert done["data"] == GOOD
    assert (await c.call("schema.delete", name="person")) == {"deleted": True}
    assert (await c.call("schema.delete", name="person")) == {"deleted": False}
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.prompt", agent=uuid, text="who?", schema="person")
    assert "no saved schema is named 'person'" in e.value.error["message"]


async def test_a_queued_schema_survives_a_daemon_kill(nursery, daemon, fake_provider):
    await daemon.start()
    fake_provider.push(Reply(text="slow", fault=Stall()))
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model="openai/gpt-4o"))["agent"]["uuid"]
    await c.call("agent.prompt", agent=uuid, text="first")
    with trio.fail_after(30):
        await fake_provider.wait_for_requests(1)
    queued = await c.call("agent.prompt", agent=uuid, text="who?", schema=PERSON)
    assert queued["position"] == 1
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait()
    fake_provider.push(Reply(text=json.dumps(GOOD)))
    await daemon.restart()
    c2 = await connect(nursery, str(daemon.socket))
    with trio.fail_after(30):
        done = await c2.call("agent.wait", agent=uuid, turn=queued["turn"])
    assert done["status"] == "completed" and done["data"] == GOOD
    assert fake_provider.requests[-1].json["response_format"]["type"] == "json_schema"


ARRAY = {"type": "array", "items": {"type": "integer"}}
RECURSIVE = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "child": {"$ref": "#"}},
    "required": ["name", "child"],
}
# a schema each wire API cannot be asked for, and the words of its refusal
UNFIT = {
    "messages": (RECURSIVE, "takes no recursive schema"),
    "chat": (ARRAY, "takes only an object at the root"),
    "responses": (ARRAY, "takes only an object at the root"),
    "generate_content": (RECURSIVE, "Gemini follows recursion only through a property that is not required"),
}


@pytest.mark.parametrize("api", list(NATIVE))
async def test_each_wire_api_corrects_a_wrong_answer_and_refuses_what_it_cannot_express(nursery, bare_home, fake_provider, api):
    d = DaemonProcess(bare_home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", model=NATIVE[api]))["agent"]["uuid"]
        fake_provider.push(Reply(text='{"name": "Ada", "age": -1, "tags": []}'), Reply(text=json.dumps(GOOD)))
        with trio.fail_after(30):
            done = await c.call("agent.prompt", agent=uuid, text="who?", schema=PERSON, wait=True)
        assert done["status"] == "completed" and done["data"] == GOOD, done
        second = json.dumps(fake_provider.requests[-1].json)
        assert "at /age: -1 is less than the minimum of 0" in second
        _native_schema(api, fake_provider.requests[-1].json)  # asked natively again
        before = len(fake_provider.requests)
        schema, said = UNFIT[api]
        with trio.fail_after(30), pytest.raises(RpcFailure) as e:
            await c.call("agent.prompt", agent=uuid, text="x", schema=schema)
        message = e.value.error["message"]
        assert e.value.code == INVALID_PARAMS and message.startswith(f"schema: {NATIVE[api]} ({api} API) cannot be asked for it"), message
        assert said in message, message
        assert len(fake_provider.requests) == before
    finally:
        d.stop()
