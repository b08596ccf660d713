"""An agent's place in the provider limiter from the command line: ``new`` /
``fork --priority``, ``ikictl priority AGENT LEVEL``, the refusal of any other
level (by ikictl, and by the daemon naming the field), and the waiting line
the renderer draws for a ``provider_wait`` event."""

from __future__ import annotations

import io
import json
import socket

import msgspec

from agents.events import ProviderWait
from ikictl.stream import EventPrinter

from .conftest import Daemon


def _draw(event: ProviderWait, *, color: bool = False) -> str:
    out = io.StringIO()
    printer = EventPrinter(out, color=color)
    wire = msgspec.to_builtins(event)  # as the daemon sends it: a tagged JSON object
    printer.event({"subscription": 1, "agent": "u", "turn": "t1", "seq": 3, "event": wire})
    return out.getvalue()


def test_a_wait_is_one_dim_line() -> None:
    wait = ProviderWait(provider="anthropic", position=3, expected_wait_s=4.2, reason="rate")
    assert _draw(wait) == "[waiting for anthropic: 3rd in line, ~4 s (rate)]\n"
    assert _draw(wait, color=True) == "\x1b[2m[waiting for anthropic: 3rd in line, ~4 s (rate)]\x1b[0m\n"
    first = ProviderWait(provider="openai", position=1, expected_wait_s=0.0, reason="paused")
    assert _draw(first) == "[waiting for openai: 1st in line, ~0 s (paused)]\n"
    # a provider name with terminal control in it (a custom provider) is drawn harmless
    hostile = ProviderWait(provider="x\x1b[2Jy", position=12, expected_wait_s=1e12, reason="rate")
    assert "\x1b[2J" not in _draw(hostile) and "12th in line (rate)" in _draw(hostile)


def _rpc(d: Daemon, method: str, params: dict) -> dict:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(d.socket))
        s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode() + b"\n")
        return json.loads(s.makefile("rb").readline())


def test_priority_is_set_at_birth_inherited_by_forks_and_changed(daemon: Daemon) -> None:
    a = daemon.ikictl("new", "--name", "pa", "--priority", "background", "--json").json()
    assert a["agent"]["priority"] == "background"
    b = daemon.ikictl("fork", "pa", "--name", "pb", "--json").json()
    assert b["agent"]["priority"] == "background"
    c = daemon.ikictl("fork", "pa", "--name", "pc", "--priority", "interactive", "--json").json()
    assert c["agent"]["priority"] == "interactive"
    assert daemon.ikictl("priority", "pb", "interactive").out == "pb: priority interactive\n"
    assert daemon.ikictl("show", "pb", "--json").json()["priority"] == "interactive"
    assert daemon.ikictl("priority", "pb", "auto").out.startswith("pb: priority auto")
    assert daemon.ikictl("show", "pb", "--json").json()["priority"] is None
    # another level: refused by ikictl before it asks, and by the daemon naming the field
    assert "invalid choice: 'urgent'" in daemon.ikictl("priority", "pb", "urgent", code=2).err
    daemon.ikictl("new", "--name", "pd", "--priority", "urgent", code=2)
    err = _rpc(daemon, "agent.set_priority", {"agent": "pb", "priority": "urgent"})["error"]
    assert err["code"] == -32602 and "priority" in err["message"]
    err = _rpc(daemon, "agent.create", {"name": "pe", "priority": "high"})["error"]
    assert err["code"] == -32602 and "priority" in err["message"]
