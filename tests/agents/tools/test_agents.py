from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.tools import AgentOpError, ToolContext, ToolRegistry, agent_tools

from .helpers import run


class FakeOps:
    """A stand-in for the supervisor: records each call, answers from a script."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.refuse: str | None = None
        self.ended: list[str] = ["c1", "c2"]
        self.waited: list[dict[str, Any]] = []

    def _check(self) -> None:
        if self.refuse:
            raise AgentOpError(self.refuse)

    async def fork(
        self, parent: str, *, prompt: str | None, model: str | None, name: str | None
    ) -> str:
        self.calls.append(("fork", parent, prompt, model, name))
        self._check()
        return "child-uuid"

    async def kill(self, caller: str, target: str) -> list[str]:
        self.calls.append(("kill", caller, target))
        self._check()
        return self.ended

    async def send(self, sender: str, to: str, text: str) -> int:
        self.calls.append(("send", sender, to, text))
        self._check()
        return 42

    async def wait(
        self,
        caller: str,
        agents: list[str],
        timeout: float | None,  # noqa: ASYNC109
    ) -> list[dict[str, Any]]:
        self.calls.append(("wait", caller, agents, timeout))
        self._check()
        return self.waited


@pytest.fixture
def ops() -> FakeOps:
    return FakeOps()


@pytest.fixture
def actx(tmp_path: Path, ops: FakeOps) -> ToolContext:
    return ToolContext(agent_uuid="parent", cwd=tmp_path, ops=ops)


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry(agent_tools(wait_max=600))


def test_the_four_tools(reg):
    assert reg.names() == ["fork", "kill", "send", "wait"]
    assert reg.get("wait").timeout > 600


async def test_fork(reg, actx, ops):
    result = await run(reg, actx, "fork", prompt="do it", model="gpt-5/high", name="helper")
    assert not result.is_error
    assert result.content == (
        "forked agent child-uuid (helper); it is working on the prompt. "
        "Use wait to get its reply, send to tell it more, kill to stop it."
    )
    result = await run(reg, actx, "fork", prompt="again")
    assert result.content.startswith("forked agent child-uuid; it is working")
    assert ops.calls == [
        ("fork", "parent", "do it", "gpt-5/high", "helper"),
        ("fork", "parent", "again", None, None),
    ]


async def test_fork_needs_a_prompt(reg, actx, ops):
    result = await run(reg, actx, "fork", prompt="")
    assert (
        result.content == "invalid arguments for tool 'fork': argument 'prompt': must not be empty"
    )
    assert ops.calls == []


async def test_kill(reg, actx, ops):
    result = await run(reg, actx, "kill", agent="c1")
    assert (result.content, result.is_error) == ("ended 2 agents: c1, c2", False)
    ops.ended = []
    result = await run(reg, actx, "kill", agent="c3")
    assert result.content == "no agent was running to end (c3 had already ended)"
    assert ops.calls == [("kill", "parent", "c1"), ("kill", "parent", "c3")]


async def test_send(reg, actx, ops):
    result = await run(reg, actx, "send", to="c1", text="hello")
    assert (result.content, result.is_error) == ("sent message 42 to c1", False)
    assert ops.calls == [("send", "parent", "c1", "hello")]


async def test_wait_lists_status_and_reply(reg, actx, ops):
    ops.waited = [
        {"agent": "c1", "status": "done", "reply": "the answer is 4"},
        {"agent": "c2", "status": "running", "reply": None},
        {"agent": "c3", "status": "dead", "reply": ""},
    ]
    result = await run(reg, actx, "wait", agents=["c1", "c2", "c3"], timeout=5)
    assert not result.is_error
    assert result.content == (
        "agent c1: done\nthe answer is 4\n\nagent c2: running (no reply)\n\nagent c3: dead (no reply)"
    )
    assert ops.calls == [("wait", "parent", ["c1", "c2", "c3"], 5.0)]


async def test_wait_timeout_defaults_to_and_is_capped_by_wait_max(reg, actx, ops):
    await run(reg, actx, "wait", agents=["c1"])
    await run(reg, actx, "wait", agents=["c1"], timeout=10_000)
    assert ops.calls == [("wait", "parent", ["c1"], 600), ("wait", "parent", ["c1"], 600)]


async def test_wait_validates_the_agent_list(reg, actx, ops):
    result = await run(reg, actx, "wait", agents=[])
    assert result.content == (
        "invalid arguments for tool 'wait': argument 'agents': must have at least 1 item(s), got 0"
    )
    result = await run(reg, actx, "wait", agents="c1")
    assert result.content == (
        "invalid arguments for tool 'wait': argument 'agents': expected array, got string"
    )
    assert ops.calls == []


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("fork", {"prompt": "p"}),
        ("kill", {"agent": "x"}),
        ("send", {"to": "x", "text": "t"}),
        ("wait", {"agents": ["x"]}),
    ],
)
async def test_agent_op_error_is_an_error_result(reg, actx, ops, name, args):
    ops.refuse = "no agent named 'x'"
    result = await run(reg, actx, name, **args)
    assert (result.content, result.is_error) == ("no agent named 'x'", True)
    assert len(ops.calls) == 1


@pytest.mark.parametrize("name", ["fork", "kill", "send", "wait"])
async def test_without_ops_the_tools_are_not_available(reg, ctx, name):
    args = {"fork": {"prompt": "p"}, "kill": {"agent": "x"}, "send": {"to": "x", "text": "t"}}
    result = await run(reg, ctx, name, **args.get(name, {"agents": ["x"]}))
    assert (result.content, result.is_error) == ("agent tools are not available here", True)
