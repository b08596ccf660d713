"""Every answer of the real daemon has exactly the shape protocol/results.py
declares: msgspec decodes it into the TypedDict in strict mode, and no key is
missing or undeclared, at any depth."""

from __future__ import annotations

import typing
from typing import Any

import msgspec
import trio

from protocol import results as R
from tests.daemon.rpc import connect
from tests.fakes.script import Reply


def _exact(value: Any, kind: Any, where: str) -> None:
    """The keys of every TypedDict in ``value`` are exactly the declared ones."""
    origin = typing.get_origin(kind)
    if origin is list:
        (item,) = typing.get_args(kind)
        for i, v in enumerate(value):
            _exact(v, item, f"{where}[{i}]")
        return
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for option in typing.get_args(kind):
            if option is type(None) and value is None:
                return
        options = [o for o in typing.get_args(kind) if o is not type(None)]
        if len(options) == 1:
            _exact(value, options[0], where)
        return
    if isinstance(kind, type) and typing.is_typeddict(kind):
        hints = typing.get_type_hints(kind)
        required = kind.__required_keys__
        assert set(value) <= set(hints), f"{where}: undeclared keys {set(value) - set(hints)}"
        assert required <= set(value), f"{where}: missing keys {required - set(value)}"
        for key, v in value.items():
            _exact(v, hints[key], f"{where}.{key}")


def check(method: str, result: Any, kind: Any = None) -> Any:
    kind = kind or R.RESULTS[method]
    msgspec.convert(result, kind, strict=True)
    _exact(result, kind, method)
    return result


async def test_every_answer_has_its_declared_shape(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    check("daemon.status", await c.call("daemon.status"))
    check("models.list", await c.call("models.list"))
    check("providers.list", await c.call("providers.list"))
    check("providers.check", await c.call("providers.check", provider="anthropic"))
    fake_provider.push(Reply(text="hi there"))
    created = check("agent.create", await c.call("agent.create", name="r", prompt="hello"))
    with trio.fail_after(10):
        while (await c.call("agent.show", agent="r"))["current_turn"] is not None:  # noqa: ASYNC110 - polls the daemon
            await trio.sleep(0.02)
    check("agent.list", await c.call("agent.list", include_dead=True))
    check("agent.show", await c.call("agent.show", agent="r"))
    fake_provider.push(Reply(text="waited"))
    check("agent.prompt", await c.call("agent.prompt", agent="r", text="again", wait=True), R.TurnOutcome)
    fake_provider.push(Reply(text="queued", delay=0.05))
    check("agent.prompt", await c.call("agent.prompt", agent="r", text="more"))
    check("agent.subscribe", await c.call("agent.subscribe", agent="r"))
    check("agent.cancel", await c.call("agent.cancel", agent="r"))
    fake_provider.push(Reply(text="child"))
    check("agent.fork", await c.call("agent.fork", agent="r", name="kid"))
    check("agent.set_model", await c.call("agent.set_model", agent="kid", model="gpt-4o/low"))
    check("agent.set_system", await c.call("agent.set_system", agent="kid", text="be brief"))
    check("agent.set_priority", await c.call("agent.set_priority", agent="kid", priority="background"))
    check("agent.set_policy", await c.call("agent.set_policy", agent="kid", policy="default"))
    check("agent.history", await c.call("agent.history", agent="r", limit=3))
    check("agent.usage", await c.call("agent.usage", agent=created["agent"]["uuid"], descendants=True))
    check("agent.usage", await c.call("agent.usage"), R.AllUsage)
    check("agent.mark", await c.call("agent.mark", agent="kid", label="here"))
    check("agent.rewind", await c.call("agent.rewind", agent="kid", label="here"))
    check("agent.clear", await c.call("agent.clear", agent="kid"))
    check("mail.send", await c.call("mail.send", to="kid", text="a note"))
    check("mail.inbox", await c.call("mail.inbox", agent="kid", unread=False))
    check("agent.kill", await c.call("agent.kill", agent="kid"))
    check("agent.show", await c.call("agent.show", agent="kid"))  # a dead agent's shape too
    check("agent.unsubscribe", await c.call("agent.unsubscribe", subscription=1))
    check("daemon.reload", await c.call("daemon.reload"))
