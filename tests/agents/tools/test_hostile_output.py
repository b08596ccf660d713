"""Whatever a tool prints, what reaches the model is valid Unicode (no lone
surrogate: they become U+FFFD), bounded, and a malformed external-tool answer
is an error result naming what is wrong; nothing escapes the tool runner
(issue 13: hostile tool output).

Real processes: an external tool and bash print bytes chosen by hypothesis.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.tools import (
    ToolContext,
    ToolOutput,
    ToolRegistry,
    ToolSpec,
    builtin_tools,
    discover_external_tools,
    external_tool,
)
from providers.types import ToolResultBlock

from .helpers import call, run
from .test_external import script

MAX_OUTPUT = 3000
# prints the file $PAYLOAD as it is
ECHO = """
    if [ "$1" = --schema ]; then echo '{"name": "echoer"}'; exit 0; fi
    cat > /dev/null
    cat "$PAYLOAD"
"""
HYPOTHESIS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def echoer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return script(tmp_path_factory.mktemp("tools"), "echoer", ECHO, python=False)


@pytest.fixture
def reg(echoer: Path) -> ToolRegistry:
    spec = external_tool(
        echoer,
        name="echoer",
        description="",
        parameters={"type": "object"},
        timeout=10,
        max_output=MAX_OUTPUT,
    )
    return ToolRegistry([*builtin_tools(max_output=MAX_OUTPUT), spec])


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    return tmp_path / "payload"


def ctx_for(payload: Path) -> ToolContext:
    return ToolContext(agent_uuid="a", cwd=payload.parent, env={"PAYLOAD": str(payload)})


def assert_sendable(result: ToolResultBlock, limit: int = MAX_OUTPUT) -> None:
    """The result can be stored and sent: UTF-8 encodable, msgspec encodable, bounded
    (``limit`` characters and the note saying how many were cut)."""
    result.content.encode("utf-8")
    msgspec.json.encode(result)
    assert len(result.content) <= limit + 40


async def echo(reg: ToolRegistry, payload: Path, data: bytes) -> ToolResultBlock:
    await trio.Path(payload).write_bytes(data)
    return await reg.run(call("echoer"), ctx_for(payload))


json_texts = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
).map(json.dumps)
# lone surrogates, escaped the way JSON writes them
surrogate_escapes = st.lists(
    st.integers(0xD800, 0xDFFF).map(lambda c: f"\\u{c:04x}") | st.text(max_size=3), max_size=6
).map(lambda parts: json.dumps({"content": "X"}).replace("X", "".join(parts)))
tool_outputs = (
    st.binary(max_size=3000)
    | json_texts.map(str.encode)
    | surrogate_escapes.map(str.encode)
    | st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n)
    | st.binary(max_size=40).map(lambda b: b'{"content": "' + b + b'"}')
)


@HYPOTHESIS
@given(tool_outputs)
async def test_any_bytes_from_an_external_tool(reg, payload, data):
    result = await echo(reg, payload, data)
    assert_sendable(result)
    assert "\ud800" not in result.content
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        value = None
        assert result.is_error
        assert result.content.startswith("tool echoer printed ")
    if isinstance(value, dict) and "content" in value and isinstance(value["content"], str):
        # the answer's own text, lone surrogates replaced
        expected = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value["content"])
        if len(expected) <= MAX_OUTPUT:
            assert result.content == expected


@HYPOTHESIS
@given(st.binary(max_size=5000))
async def test_any_bytes_from_bash(reg, payload, data):
    await trio.Path(payload).write_bytes(data)
    result = await run(reg, ctx_for(payload), "bash", command='cat "$PAYLOAD"')
    assert_sendable(result)
    assert not result.is_error
    text = data.decode("utf-8", errors="replace").removesuffix("\n")
    if len(text) < MAX_OUTPUT - 600:
        assert result.content == (text or "(no output)")


async def test_a_lone_surrogate_in_a_json_answer_becomes_a_replacement_character(reg, payload):
    result = await echo(reg, payload, b'{"content": "a\\ud800b\\udfffc\\ud83d\\ude00"}')
    assert (result.content, result.is_error) == ("a\ufffdb\ufffdc\U0001f600", False)
    assert_sendable(result)
    # in keys and nested values of a non-text answer too
    result = await echo(reg, payload, b'{"content": {"k\\udc00": ["\\ud800"]}}')
    assert (result.content, result.is_error) == ('{"k\ufffd": ["\ufffd"]}', False)
    result = await echo(reg, payload, b'["\\udbff"]')
    assert result.content == '["\ufffd"]'


@pytest.mark.parametrize("depth", [101, 1000, 30_000])
async def test_deeply_nested_json_is_a_clear_error(reg, payload, depth):
    result = await echo(reg, payload, b"[" * depth + b"]" * depth)
    assert result.is_error
    assert result.content.startswith(
        "tool echoer printed JSON nested deeper than 100 levels: '[[[["
    )
    assert_sendable(result)


async def test_json_nested_100_levels_is_fine(reg, payload):
    result = await echo(reg, payload, b"[" * 100 + b"]" * 100)
    assert (result.content, result.is_error) == ("[" * 100 + "]" * 100, False)


async def test_output_that_is_not_utf8_is_a_clear_error(reg, payload):
    result = await echo(reg, payload, b'{"content": "caf\xe9"}')
    assert result.is_error
    assert result.content == (
        "tool echoer printed output that is not UTF-8 text (byte 16): '{\"content\": \"caf\ufffd\"}'"
    )
    # surrogates written as UTF-8 bytes are not UTF-8 either
    result = await echo(reg, payload, b'"\xed\xa0\x80"')
    assert result.content.startswith("tool echoer printed output that is not UTF-8 text (byte 1)")


async def test_gigantic_output_is_bounded(reg, payload):
    result = await echo(reg, payload, b'{"content": "' + b"x" * 50_000 + b'"}')
    assert not result.is_error
    assert "characters cut" in result.content
    assert_sendable(result)
    result = await echo(reg, payload, b"y" * 5_000_000)
    assert result.is_error
    assert result.content.startswith("tool echoer printed more than")
    assert_sendable(result)


# ------------------------------------------------------------------ --schema


async def test_hostile_schemas_are_skipped_or_cleaned(tmp_path):
    folder = tmp_path / "tools"
    deep = "[" * 5000 + "]" * 5000
    script(folder, "deep", f"""echo '{{"parameters": {{"type": "object", "x": {deep}}}}}'""", python=False)
    script(folder, "latin1", "printf '{\"description\": \"caf\\351\"}'", python=False)
    script(
        folder,
        "lone",
        """echo '{"description": "bad \\ud800 text", "parameters": {"properties": {"a\\udc00": {}}}}'""",
        python=False,
    )
    specs, warnings = await discover_external_tools([folder])
    assert sorted(warnings) == [
        f"{folder / 'deep'}: --schema printed JSON nested deeper than 100 levels; skipped",
        f"{folder / 'latin1'}: --schema printed output that is not UTF-8 text (byte 20); skipped",
    ]
    (lone,) = specs
    assert lone.description == "bad \ufffd text"
    assert lone.parameters == {"type": "object", "properties": {"a\ufffd": {}}}
    msgspec.json.encode(ToolRegistry(specs).definitions())


# ------------------------------------------------------------------ the registry itself


def returning(value: object, max_output: int = 500) -> ToolSpec:
    async def handler(args: dict, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(value)  # type: ignore[arg-type]

    return ToolSpec("t", "", {"type": "object"}, handler, max_output=max_output)


async def test_every_handlers_text_is_cleaned_and_bounded(ctx):
    reg = ToolRegistry([returning("\ud800" * 2000)])
    result = await run(reg, ctx, "t")
    assert_sendable(result, 500)
    assert set(result.content.split("\n")[0]) == {"\ufffd"}


async def test_an_unknown_tool_with_a_hostile_name_gets_a_bounded_clean_answer(ctx):
    reg = ToolRegistry(builtin_tools())
    result = await reg.run(call("x\udc80" * 100_000), ctx)
    assert result.is_error
    # quoted with repr: the surrogate is written as an escape, and cut short
    assert result.content.startswith("unknown tool 'x\\udc80x\\udc80")
    assert len(result.content) < 1000
    result.content.encode("utf-8")
