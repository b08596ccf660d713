from __future__ import annotations

from typing import Any

import pytest
import trio

from agents.tools import ToolContext, ToolOutput, ToolRegistry, ToolSpec
from providers.types import Tool, ToolResultBlock

from .helpers import call

ARGS = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}


def spec(name: str, handler: Any = None, **kw: Any) -> ToolSpec:
    async def echo(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(f"{ctx.agent_uuid}:{args}")

    return ToolSpec(
        name=name,
        description=f"the {name} tool",
        parameters=kw.pop("parameters", ARGS),
        handler=handler or echo,
        **kw,
    )


def test_register_refuses_a_duplicate_name():
    reg = ToolRegistry([spec("a")])
    with pytest.raises(ValueError, match="a tool named 'a' is already registered"):
        reg.register(spec("a"))


def test_register_refuses_names_providers_refuse_and_non_object_schemas():
    reg = ToolRegistry()
    with pytest.raises(ValueError, match="must be 1-64 letters"):
        reg.register(spec("has space"))
    with pytest.raises(ValueError, match="parameters must be a JSON Schema of type object"):
        reg.register(spec("x", parameters={"type": "string"}))


def test_names_get_and_definitions_are_sorted_and_stable():
    reg = ToolRegistry([spec("zeta"), spec("alpha"), spec("mid")])
    assert reg.names() == ["alpha", "mid", "zeta"]
    assert reg.get("mid") is not None and reg.get("mid").name == "mid"
    assert reg.get("nope") is None
    assert "alpha" in reg and "nope" not in reg
    assert len(reg) == 3
    defs = reg.definitions()
    assert defs == [
        Tool(name="alpha", description="the alpha tool", parameters=ARGS, strict=False),
        Tool(name="mid", description="the mid tool", parameters=ARGS, strict=False),
        Tool(name="zeta", description="the zeta tool", parameters=ARGS, strict=False),
    ]
    assert reg.definitions() == defs


async def test_run_passes_arguments_and_context_and_names_the_result(ctx):
    reg = ToolRegistry([spec("echo")])
    c = call("echo", path="x")
    result = await reg.run(c, ctx)
    assert result == ToolResultBlock(
        tool_call_id=c.id, content="agent-1:{'path': 'x'}", is_error=False, name="echo"
    )


async def test_unknown_tool_lists_the_tools_available(ctx):
    reg = ToolRegistry([spec("b"), spec("a")])
    result = await reg.run(call("nope", path="x"), ctx)
    assert result.is_error
    assert result.content == "unknown tool 'nope'; the tools available are: a, b"
    assert result.name == "nope"


async def test_raw_arguments_are_quoted_truncated(ctx):
    reg = ToolRegistry([spec("echo")])
    result = await reg.run(call("echo", '[1, "x"]'), ctx)
    assert result.is_error
    assert result.content == (
        "the arguments for tool 'echo' must be a JSON object; got: '[1, \"x\"]'"
    )
    # text that does not parse: cut off by the output limit (issue 14 item 9)
    cut = "the arguments for tool 'echo' were cut off by the output limit (max_output_tokens)"
    result = await reg.run(call("echo", '{"path": "x"'), ctx)
    assert result.is_error and result.content.startswith(cut)
    assert result.content.endswith("got: '{\"path\": \"x\"'")
    long = "y" * 1000
    result = await reg.run(call("echo", long), ctx)
    assert result.content.startswith(cut)
    assert result.content.endswith("got: '" + "y" * 200 + "... [800 more characters]'")


async def test_invalid_arguments_name_the_field(ctx):
    ran = []

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        ran.append(args)
        return ToolOutput("ran")

    reg = ToolRegistry([spec("t", handler)])
    result = await reg.run(call("t", path=5), ctx)
    assert result.is_error
    assert (
        result.content
        == "invalid arguments for tool 't': argument 'path': expected string, got integer"
    )
    result = await reg.run(call("t"), ctx)
    assert result.content == "invalid arguments for tool 't': argument 'path': required but missing"
    assert ran == []


async def test_handler_exception_becomes_an_error_result(ctx):
    async def boom(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raise KeyError("missing thing")

    reg = ToolRegistry([spec("boom", boom)])
    result = await reg.run(call("boom", path="x"), ctx)
    assert result.is_error
    assert result.content == "tool boom failed: KeyError: 'missing thing'"
    assert "Traceback" not in result.content


async def test_handler_exception_group_is_described_by_its_leaves(ctx):
    async def fail(msg: str) -> None:
        raise ValueError(msg)

    async def group(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        async with trio.open_nursery() as n:
            n.start_soon(fail, "one")
        return ToolOutput("unreachable")

    reg = ToolRegistry([spec("group", group)])
    result = await reg.run(call("group", path="x"), ctx)
    assert result.is_error
    assert result.content == "tool group failed: ValueError: one"


async def test_handler_returning_the_wrong_type_is_an_error(ctx):
    async def bad(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return 42  # type: ignore[return-value]

    reg = ToolRegistry([spec("bad", bad)])
    result = await reg.run(call("bad", path="x"), ctx)
    assert result.is_error
    assert (
        result.content == "tool bad failed: TypeError: handler of bad returned int, not ToolOutput"
    )


async def test_timeout_is_an_error_result(ctx, autojump_clock):
    async def slow(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        await trio.sleep(1000)
        return ToolOutput("late")

    reg = ToolRegistry([spec("slow", slow, timeout=2.5)])
    start = trio.current_time()
    result = await reg.run(call("slow", path="x"), ctx)
    assert result.is_error
    assert result.content == "tool slow timed out after 2.5 s"
    assert trio.current_time() - start == pytest.approx(2.5)


async def test_cancellation_of_the_caller_propagates(ctx, autojump_clock):
    cleaned = []

    async def slow(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            await trio.sleep(1000)
        finally:
            cleaned.append(True)
        return ToolOutput("late")

    reg = ToolRegistry([spec("slow", slow, timeout=100)])
    with trio.move_on_after(1) as scope:
        await reg.run(call("slow", path="x"), ctx)
        pytest.fail("run returned although cancelled")
    assert scope.cancelled_caught
    assert cleaned == [True]


async def test_long_output_is_cut_with_a_note(ctx):
    text = "".join(f"{i:04d}\n" for i in range(1000))  # 5000 characters

    async def loud(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(text)

    reg = ToolRegistry([spec("loud", loud, max_output=300)])
    result = await reg.run(call("loud", path="x"), ctx)
    assert not result.is_error
    assert result.content.startswith(text[:200])
    assert result.content.endswith(text[-100:])
    assert "\n[... 4700 characters cut ...]\n" in result.content
    short = await ToolRegistry([spec("loud", loud, max_output=5000)]).run(
        call("loud", path="x"), ctx
    )
    assert short.content == text


async def test_run_all_is_bounded_and_keeps_the_order(ctx, autojump_clock):
    running = 0
    peak = 0
    finished: list[int] = []

    async def work(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        # later calls finish first, so the result order must come from the calls
        await trio.sleep(10 - args["n"])
        running -= 1
        finished.append(args["n"])
        return ToolOutput(f"done {args['n']}")

    params = {"type": "object", "properties": {"n": {"type": "integer"}}}
    reg = ToolRegistry([spec("work", work, parameters=params)])
    calls = [call("work", n=i) for i in range(5)]
    calls.insert(2, call("nope"))
    results = await reg.run_all(calls, ctx, limit=2)
    assert peak == 2
    assert [r.tool_call_id for r in results] == [c.id for c in calls]
    assert [r.content for r in results] == [
        "done 0",
        "done 1",
        "unknown tool 'nope'; the tools available are: work",
        "done 2",
        "done 3",
        "done 4",
    ]
    assert sorted(finished) == [0, 1, 2, 3, 4]


async def test_run_all_with_no_calls(ctx):
    assert await ToolRegistry().run_all([], ctx) == []
