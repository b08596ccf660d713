"""Pure parts of the hub: tool names made safe, schemas judged, results
mapped (with the SDK's own result types), whatever a server sends."""

from __future__ import annotations

import base64
import json
import re
import time

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.tools.mcp import McpServerSpec, exposed_name
from agents.tools.mcp._results import MAX_IMAGES, MAX_TEXT, call_output, resource_output
from agents.tools.mcp._tools import MAX_DEPTH, schema_problem, tool_infos
from agents.tools.mcp._transport import JSON_DEPTH, answer_id, line_fault

SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(st.text(min_size=1, max_size=300))
def test_exposed_names_are_safe_for_every_provider(tool):
    name = exposed_name("srv", tool)
    assert SAFE.match(name)
    assert name.startswith("srv__") or len("srv__" + tool) > 64


def test_long_names_stay_apart_and_collisions_are_resolved():
    a, b = "x" * 80 + "a", "x" * 80 + "b"
    assert exposed_name("srv", a) != exposed_name("srv", b)
    assert all(len(exposed_name("srv", n)) == 64 for n in (a, b))
    infos = tool_infos(
        "srv",
        [
            types.Tool(name="get.time", input_schema={"type": "object"}),
            types.Tool(name="get time", input_schema={"type": "object"}),
            types.Tool(name="get.time", input_schema={"type": "object"}),
        ],
    )
    offered = [i.exposed for i in infos if i.rejected is None]
    assert offered[0] == "srv__get_time" and len(set(offered)) == 2
    assert all(SAFE.match(n) for n in offered)
    assert infos[2].rejected == "another tool of the server has the same name"


@settings(max_examples=200)
@given(json_values)
def test_any_schema_is_judged_without_raising(schema):
    problem = schema_problem(schema)
    assert problem is None or isinstance(problem, str)
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        assert problem is not None


def test_deep_and_huge_schemas_are_rejected():
    deep: dict = {"type": "string"}
    for _ in range(10_000):  # far deeper than recursion allows
        deep = {"type": "object", "properties": {"a": deep}}
    assert "nested more than" in (schema_problem(deep) or "")
    ok: dict = {"type": "string"}
    for _ in range(MAX_DEPTH // 2 - 1):
        ok = {"type": "object", "properties": {"a": ok}}
    assert schema_problem(ok) is None
    huge = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(5000)}}
    assert "KB limit" in (schema_problem(huge) or "")
    assert "not object" in (schema_problem({"type": "array"}) or "")


def test_results_of_every_content_type():
    png = base64.b64encode(b"\x89PNG fake").decode()
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="first"),
            types.ImageContent(type="image", data=png, mime_type="image/png"),
            types.ImageContent(type="image", data="not base64!!", mime_type="image/png"),
            types.ImageContent(type="image", data=png, mime_type="image/x-weird"),
            types.AudioContent(type="audio", data=png, mime_type="audio/wav"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///a.txt", text="inside"),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///b.bin", blob=png, mime_type="application/zip"
                ),
            ),
            types.ResourceLink(type="resource_link", uri="file:///c", name="c file"),
        ],
        is_error=False,
    )
    out = call_output(result)
    assert len(out.images) == 1 and out.images[0].data == png
    lines = out.content.split("\n")
    assert lines[0] == "first"
    assert "[image: image/png, not valid base64]" in lines
    assert "[image: image/x-weird, not shown]" in lines
    assert "[audio: audio/wav, not shown]" in lines
    assert "[resource file:///a.txt]" in lines and "inside" in lines
    assert any(x.startswith("[binary resource file:///b.bin (application/zip") for x in lines)
    assert "[resource link file:///c: c file]" in lines


def test_structured_content_errors_and_limits():
    out = call_output(types.CallToolResult(content=[], structured_content={"t": 21.5}))
    assert out.content == '{"t": 21.5}'
    out = call_output(
        types.CallToolResult(
            content=[types.TextContent(type="text", text="21.5")], structured_content={"t": 21.5}
        )
    )
    assert out.content == "21.5"  # the text already says it
    out = call_output(types.CallToolResult(content=[], is_error=True))
    assert out.is_error and out.content == "the tool failed and said nothing"
    many = [types.TextContent(type="text", text="y" * 400_000) for _ in range(10)]
    out = call_output(types.CallToolResult(content=many))
    assert len(out.content) <= MAX_TEXT + 100 and out.content.endswith("[... more output cut ...]")
    png = base64.b64encode(b"png").decode()
    images = [types.ImageContent(type="image", data=png, mime_type="image/png")] * 40
    out = call_output(types.CallToolResult(content=images))
    assert len(out.images) == MAX_IMAGES and "more than 16 images" in out.content
    res = types.ReadResourceResult(contents=[])
    assert resource_output(res).content == "(the resource is empty)"


def test_spec_needs_one_target_and_shows_no_secret():
    for bad in ({}, {"command": "x", "url": "http://h/mcp"}):
        try:
            McpServerSpec("s", **bad)
        except ValueError as exc:
            assert "exactly one of command or url" in str(exc)
        else:
            raise AssertionError("ValueError expected")
    spec = McpServerSpec("s", url="https://me:pw@h.example:8443/mcp?token=abc")
    assert spec.target == "https://h.example:8443/mcp?..." and spec.transport == "http"
    assert McpServerSpec("s", command="uvx", args=("mcp-server-git", "a b")).target == (
        "uvx mcp-server-git 'a b'"
    )


# ------------------------------------------------ answer lines the SDK refuses


def refusal(line: bytes) -> ValueError:
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        return exc
    raise AssertionError(f"the parser took {line[:80]!r}")


def test_json_depth_is_the_parsers():
    """The fault names JSON_DEPTH: every line refused as too deep is nested
    deeper than that, and the parser takes a line only a little deeper."""

    def objects(depth: int) -> bytes:  # a response nested ``depth`` levels
        inner = b"1"
        for _ in range(depth - 1):
            inner = b'{"a":' + inner + b"}"
        return b'{"jsonrpc":"2.0","id":1,"result":' + inner + b"}"

    types.jsonrpc_message_adapter.validate_json(objects(JSON_DEPTH), by_name=False)
    assert line_fault(objects(JSON_DEPTH + 1), refusal(objects(JSON_DEPTH + 1))) == (
        f"nested deeper than {JSON_DEPTH} levels"
    )
    arrays = JSON_DEPTH + 2
    line = b"[" * arrays + b"]" * arrays
    assert line_fault(line, refusal(line)) == f"nested deeper than {JSON_DEPTH} levels"


def test_faults_name_what_is_wrong_and_nothing_of_the_line():
    secretish = b"sk-do-not-show-me"
    line = b'{"jsonrpc":"2.0","id":1,"result":{"t":"' + secretish + b' \xff"}}'
    assert line_fault(line, refusal(line)) == "invalid UTF-8 at byte 57"
    line = b'{"jsonrpc":"2.0","id":1,"result":{"t":' + secretish + b"}}"
    assert line_fault(line, refusal(line)).startswith("not JSON (expected ")
    line = b'{"jsonrpc":"2.0","id":1,"result":"' + secretish + b'"}'
    fault = line_fault(line, refusal(line))
    assert fault == "not a JSON-RPC response (result: Input should be an object)"
    line = b'{"jsonrpc":"2.0","id":1,"error":{"code":"' + secretish + b'","message":"m"}}'
    fault = line_fault(line, refusal(line))  # not: "result: Field required"
    assert fault.startswith("not a JSON-RPC response (error.code: Input should be a valid integer")
    for text in ("[]", '{"x": 1}'):
        line = text.encode()
        assert "sk-" not in line_fault(line, refusal(line))


request_ids = st.integers(-(10**18), 10**18) | st.text("abc019-_", max_size=20)
members = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": request_ids},
    optional={"result": json_values, "error": json_values, "extra": json_values},
).filter(lambda m: "result" in m or "error" in m)


@settings(max_examples=300)
@given(
    members, st.randoms(use_true_random=False), st.sampled_from([None, (",", ":"), (" , ", " : ")])
)
def test_the_id_of_an_answer_is_read_whatever_the_order_of_its_members(message, rnd, seps):
    items = list(message.items())
    rnd.shuffle(items)
    line = json.dumps(dict(items), separators=seps).encode()
    assert answer_id(line) == message["id"]
    # and as a refused line would be: too deep, or cut short after the id
    deep = line[:-1] + b',"deep":' + b"[" * 300 + b"]" * 300 + b"}"
    assert answer_id(deep) == message["id"]


@settings(max_examples=300)
@given(
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "method": st.text(max_size=10)},
        optional={"id": request_ids, "params": json_values, "result": json_values},
    ),
    st.randoms(use_true_random=False),
)
def test_a_request_or_notification_of_the_server_answers_no_call(message, rnd):
    items = list(message.items())
    rnd.shuffle(items)
    assert answer_id(json.dumps(dict(items)).encode()) is None


@settings(max_examples=500)
@given(st.binary(max_size=2000) | st.binary(max_size=200).map(lambda b: b'{"result":' + b))
def test_any_bytes_are_read_without_raising(line):
    found = answer_id(line)
    assert found is None or isinstance(found, int | str)
    assert isinstance(line_fault(line, ValueError("x")), str)


MB = 1024 * 1024
# lines of 32 MB, the most the transport reads, shaped to make a scan slow
HOSTILE = {
    "brackets": lambda: b'{"result":' + b"[" * (32 * MB),
    "commas": lambda: b'{"result":[' + b"," * (32 * MB),
    "escaped quotes": lambda: b'{"result":"' + b'\\"' * (16 * MB),
    "backslashes": lambda: b'{"result":"' + b"\\" * (32 * MB),
    "strings": lambda: b'{"result":[' + b'"",' * (10 * MB),
    "members": lambda: b"{" + b'"a":1,' * (5 * MB),
    "id-like tail": lambda: b'{"result":' + b"[" * 100_000 + b', "id" :' * (4 * MB),
    "open key": lambda: b'{"' + b"x" * (32 * MB),
    "long string": lambda: b'{"result":"' + b"x" * (32 * MB) + b'","id":7}',
}


@pytest.mark.parametrize("shape", list(HOSTILE))
def test_reading_the_id_of_a_32_mb_line_is_bounded(shape):
    """Linear and bounded: a quadratic scan would take minutes here."""
    line = HOSTILE[shape]()
    t0 = time.perf_counter()
    found = answer_id(line)
    took = time.perf_counter() - t0
    assert took < 2.0, f"{took:.1f} s"
    assert found == (7 if shape == "long string" else None)
