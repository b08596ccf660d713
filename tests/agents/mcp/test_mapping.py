"""Pure parts of the hub: tool names made safe, schemas judged, results
mapped (with the SDK's own result types), whatever a server sends."""

from __future__ import annotations

import base64
import re

import mcp_types as types
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.tools.mcp import McpServerSpec, exposed_name
from agents.tools.mcp._results import MAX_IMAGES, MAX_TEXT, call_output, resource_output
from agents.tools.mcp._tools import MAX_DEPTH, schema_problem, tool_infos

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
