"""A server that answers a call with a line that is not valid JSON-RPC (too
deep for the parser, invalid UTF-8, not JSON, not a response) ends that call
at once with an error naming the server and the fault, not a timeout after
call_timeout; the session stays and the next call works. A line whose id
cannot be read, or that is the server's own request, ends no call."""

from __future__ import annotations

import re

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from agents.tools.mcp import McpHub
from agents.tools.mcp._spec import ServerState

from .conftest import fake_spec

CALL_TIMEOUT = 60.0  # a call waiting for it would fail the test's own bound
WITHIN = 20.0  # the bad call and the next one (the start is bounded by connect_timeout)
DEEP = 10_000

HEAD = b'{"jsonrpc":"2.0","id":@ID@,"result":'


def nested(depth: int) -> bytes:
    return b'{"content":' + b"[" * depth + b"]" * depth + b"}"


# (the line, a pattern of the fault the error must name)
CASES = {
    "deep": (HEAD + nested(DEEP) + b"}", r"nested deeper than 200 levels"),
    # a TypeScript server writes the id after the result
    "deep, id last": (
        b'{"result":' + nested(DEEP) + b',"jsonrpc":"2.0","id":@ID@}',
        r"nested deeper than 200 levels",
    ),
    # deeper than the scan looks: the id is found at the end of the line
    "a million deep, id last": (
        b'{"result":' + nested(1_000_000) + b',"jsonrpc":"2.0","id":@ID@}',
        r"nested deeper than 200 levels",
    ),
    "invalid UTF-8": (
        HEAD + b'{"content":[{"type":"text","text":"caf\xc3 \xff\xfe"}]}}',
        r"invalid UTF-8 at byte \d+",
    ),
    "not JSON": (HEAD + b'{"content": oops}}', r"not JSON \(expected value at line 1 column \d+\)"),
    "not a response": (
        HEAD + b"5}",
        r"not a JSON-RPC response \(result: Input should be an object\)",
    ),
}


def answered(fault: str) -> re.Pattern[str]:
    return re.compile(
        r"the MCP server fake answered the call to answer_badly \(request \d+\) with a line "
        r"that is not valid JSON-RPC: " + fault
    )


async def answer_badly(hub: McpHub, line: bytes, then: float = 3600.0):
    return await hub.call("fake", "answer_badly", {"line_hex": line.hex(), "then": then})


@pytest.mark.parametrize("case", list(CASES))
async def test_a_malformed_answer_ends_its_call_at_once(start_hub, case):
    line, fault = CASES[case]
    box = await start_hub({"fake": fake_spec(call_timeout=CALL_TIMEOUT)})
    hub = box.hub
    await hub.tools("fake")
    pid = hub.state("fake").pid
    with trio.fail_after(WITHIN), capture_logs() as logs:
        t0 = trio.current_time()
        out = await answer_badly(hub, line)
        took = trio.current_time() - t0
        assert out.is_error and answered(fault).fullmatch(out.content), out.content
        assert took < 5.0  # at once, not after call_timeout
        out = await hub.call("fake", "echo", {"text": "next"})
        assert (out.content, out.is_error) == ("next", False)
    state = hub.state("fake")
    assert (state.state, state.pid, state.restarts) == ("ready", pid, 0)  # the same session
    assert [e for e in logs if e["event"] == "mcp.bad_output"]  # still logged as bad output
    print(f"{case}: ended after {took * 1000:.0f} ms")


async def test_a_line_without_a_readable_id_or_not_an_answer_ends_no_call(start_hub):
    """No id, or the id of the server's own (malformed) request, which lives in
    the server's numbering: the call goes on and gets its real answer."""
    hub = (await start_hub({"fake": fake_spec(call_timeout=CALL_TIMEOUT)})).hub
    lines = [
        b'{"jsonrpc":"2.0","result":' + nested(DEEP) + b"}",
        b"\xff\xfe not json, no id",
        b'{"jsonrpc":"2.0","id":@ID@,"method":"sampling/createMessage","params":'
        + nested(DEEP)
        + b"}",
        b'{"jsonrpc":"2.0","method":"notifications/message","params":' + nested(DEEP) + b"}",
    ]
    await hub.tools("fake")
    with trio.fail_after(WITHIN):
        for line in lines:
            out = await answer_badly(hub, line, then=0.2)
            assert (out.content, out.is_error) == ("the real answer, late", False), line[:80]


# what a server may write as its answer: anything, and lines framed like a
# response (its id first, or last as a TypeScript server writes it)
anything = st.binary(max_size=300)
answer_lines = st.one_of(
    anything,
    anything.map(lambda b: HEAD + b),
    anything.map(lambda b: HEAD + b + b"}"),
    anything.map(lambda b: b'{"result":' + b + b',"jsonrpc":"2.0","id":@ID@}'),
    st.integers(1, 3000).map(lambda n: HEAD + nested(n) + b"}"),
)


async def test_any_answer_line_ends_the_call_by_its_deadline_and_the_hub_lives_on(start_hub):
    """Each example is one real call on one server process: hypothesis runs
    in a thread, each call in the test's trio loop."""
    timeout = 1.0
    box = await start_hub({"fake": fake_spec(call_timeout=timeout)})
    hub = box.hub
    await hub.tools("fake")
    pid = hub.state("fake").pid
    seen = {"fast": 0, "timed out": 0}

    async def one(line: bytes) -> None:
        with trio.fail_after(timeout + 10):
            t0 = trio.current_time()
            out = await answer_badly(hub, line)
            took = trio.current_time() - t0
            assert took < timeout + 5  # its deadline, and slack for a loaded machine
            if line.startswith(HEAD):  # its id and result come first: never waits
                assert "timed out" not in out.content, (line[:200], out.content)
            if "timed out" in out.content:
                seen["timed out"] += 1
            else:
                seen["fast"] += 1
            assert (await hub.call("fake", "echo", {"text": "alive"})).content == "alive"

    @settings(
        max_examples=40,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(answer_lines)
    def prop(line: bytes) -> None:
        trio.from_thread.run(one, line)

    await trio.to_thread.run_sync(prop)
    state: ServerState = hub.state("fake")
    assert (state.state, state.pid, state.restarts) == ("ready", pid, 0)
    assert seen["fast"] > 0
    print(seen)
