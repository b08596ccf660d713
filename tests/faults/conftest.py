"""The fault-injection suite: the real ikigaid process, the fake provider's faults.

Every test starts one daemon (a real subprocess, IKIGAI_HOME in a temporary
folder) and runs several *cases* against it at once, each case being one agent
with its own script of replies. The fake provider tells the cases apart by a
tag in the prompt (``[case:NAME]``), which every request of that agent carries
(the prompt stays in the replayed history), so concurrent cases never take one
another's replies and each case counts exactly its own requests.

The daemon's retry policy is not configurable (agents.retry.RetryPolicy() is
built with its defaults in daemon/process/service.py): rate-limit and overload cases
use a short ``retry-after-ms`` (honored as is), and the cases that must wait
the built-in 1 s / 2 s backoff run concurrently so a test waits for them once.
"""

from __future__ import annotations

import json
import socket
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import connect
from tests.fakes.recorded import RecordedRequest
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider

READ_TIMEOUT = 0.5  # seconds: stalls and silent servers time out fast


def free_port() -> int:
    """A loopback port nobody listens on (connection refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Script:
    """A responder for the fake provider: replies per case tag, requests per case tag."""

    def __init__(self) -> None:
        self.replies: dict[str, list[Reply]] = {}
        self.requests: dict[str, list[RecordedRequest]] = defaultdict(list)
        self.times: dict[str, list[float]] = defaultdict(list)  # time.monotonic() of each request

    def add(self, tag: str, replies: list[Reply]) -> None:
        assert tag not in self.replies, tag
        self.replies[tag] = list(replies)

    def __call__(self, request: RecordedRequest) -> Reply | None:
        for tag, queue in self.replies.items():
            if f"[case:{tag}]".encode() in request.body:
                self.requests[tag].append(request)
                self.times[tag].append(time.monotonic())
                if queue:
                    return queue.pop(0)
                # nothing left: answer with an error nobody retries, so an
                # unexpected extra request shows up as a count, not a hang
                from tests.fakes.script import HttpError

                return Reply(fault=HttpError(400, f"case {tag}: no scripted reply left"))
        return None


@dataclass
class Case:
    tag: str
    replies: list[Reply]
    model: str = "claude-sonnet-4-5/low"
    prompt: str = "hello"


@dataclass
class Outcome:
    case: Case
    uuid: str
    turn: str
    events: list[dict[str, Any]]  # the turn's `event` objects, in seq order
    history: list[dict[str, Any]]
    requests: list[RecordedRequest] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    @property
    def ended(self) -> dict[str, Any]:
        assert self.events[-1]["type"] == "turn_ended", self.events[-1]
        return self.events[-1]

    @property
    def status(self) -> str:
        return self.ended["status"]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    @property
    def text(self) -> str:
        return "".join(e["text"] for e in self.of("text_delta"))

    @property
    def kinds(self) -> list[str]:
        # the policy's decision rows are checked by tests/agents/test_gate.py
        return [m["kind"] for m in self.history if m["kind"] != "permission"]

    def attempts_with_output(self) -> list[bool]:
        """For each provider attempt of the turn: did it publish any output block event?"""
        out, seen = [], False
        for e in self.events:
            if e["type"] in ("text_delta", "thinking_delta", "tool_call_start", "tool_call_delta", "tool_call_done"):
                seen = True
            elif e["type"] == "retry":
                out.append(seen)
                seen = False
        out.append(seen)
        return out

    def assert_retries(self, errors: list[str], *, delay: tuple[float, float] | None = None) -> None:
        """One `error` event per failed attempt with these categories, one
        `retry` event before each new attempt numbered 2, 3, ... with a
        delay in ``delay``, and discarded_output exactly when output was shown."""
        got = [e["error"]["category"] for e in self.of("error")]
        assert got == errors, (self.case.tag, got, self.events)
        retries = self.of("retry")
        n_retry = len(retries)
        assert [r["attempt"] for r in retries] == list(range(2, 2 + n_retry)), (self.case.tag, retries)
        output = self.attempts_with_output()
        for r, shown in zip(retries, output, strict=False):
            assert r.get("discarded_output", False) == shown, (self.case.tag, r, output)
            if delay is not None:
                assert delay[0] <= r["delay"] <= delay[1], (self.case.tag, r)
        for r, err in zip(retries, self.of("error"), strict=False):
            assert r["error"]["category"] == err["error"]["category"]

    def assert_waited(self, at_least: float) -> None:
        """The fake saw consecutive requests at least ``at_least`` s apart."""
        gaps = [b - a for a, b in zip(self.times, self.times[1:], strict=False)]
        assert all(g >= at_least * 0.95 for g in gaps), (self.case.tag, gaps)


class FaultDaemon:
    """The real daemon process pointed at the fake provider, and a way to run cases."""

    def __init__(self, home: Path, fake: FakeProvider, script: Script, nursery: trio.Nursery) -> None:
        self.home = home
        self.fake = fake
        self.script = script
        self.nursery = nursery
        self.proc = DaemonProcess(home)
        self.refused_port = free_port()

    def configure(self) -> None:
        write_home(self.home, self.fake)
        cfg = json.loads((self.home / "config.json").read_text())
        for p in cfg["providers"].values():
            p["read_timeout"] = READ_TIMEOUT
            p["connect_timeout"] = READ_TIMEOUT
        # custom OpenAI-compatible services that cannot be reached
        cfg["providers"]["refused"] = {
            "base_url": f"http://127.0.0.1:{self.refused_port}/v1",
            "api": "chat",
            "key_env": None,
            "connect_timeout": READ_TIMEOUT,
        }
        cfg["providers"]["nodns"] = {
            "base_url": "http://no-such-host.invalid/v1",
            "api": "chat",
            "key_env": None,
            "connect_timeout": READ_TIMEOUT,
        }
        (self.home / "config.json").write_text(json.dumps(cfg))

    async def start(self) -> None:
        self.configure()
        await self.proc.start()

    async def run(self, case: Case, *, limit: float = 20, agent: str | None = None) -> Outcome:
        """Create an agent for the case (or prompt ``agent`` again) and follow one turn."""
        if agent is None:
            self.script.add(case.tag, case.replies)
        else:  # the same agent again: its requests carry its first tag
            self.script.replies[case.tag] = list(case.replies)
            self.script.requests[case.tag].clear()
            self.script.times[case.tag].clear()
        c = await connect(self.nursery, str(self.proc.socket))
        if agent is None:
            created = await c.call("agent.create", name=case.tag, model=case.model)
            uuid = created["agent"]["uuid"]
        else:
            uuid = agent
        await c.call("agent.subscribe", agent=uuid)
        turn = (await c.call("agent.prompt", agent=uuid, text=f"[case:{case.tag}] {case.prompt}"))["turn"]
        params = await c.events_until(lambda e: e["turn"] == turn and e["event"]["type"] == "turn_ended", limit)
        events = [p["event"] for p in params if p["turn"] == turn]
        history = (await c.call("agent.history", agent=uuid))["messages"]
        await c.stream.aclose()
        return Outcome(
            case=case,
            uuid=uuid,
            turn=turn,
            events=events,
            history=history,
            requests=list(self.script.requests[case.tag]),
            times=list(self.script.times[case.tag]),
        )

    async def run_all(self, *cases: Case, limit: float = 20) -> dict[str, Outcome]:
        """Run the cases at once; their outcomes by tag."""
        out: dict[str, Outcome] = {}

        async def one(case: Case) -> None:
            out[case.tag] = await self.run(case, limit=limit)

        async with trio.open_nursery() as n:
            for case in cases:
                n.start_soon(one, case)
        return out

    @property
    def log_text(self) -> str:
        path = self.home / "logs" / "ikigaid.log"
        return path.read_text() if path.exists() else ""

    def assert_clean_log(self) -> None:
        """Handled faults leave no traceback and no crashed turn in the daemon's log."""
        text = self.log_text
        assert text, "the daemon wrote no log"
        for bad in ("Traceback", '"exception"', "turn crashed", "internal error"):
            assert bad not in text, f"{bad!r} in the daemon log:\n{text[-4000:]}"

    def stop(self) -> None:
        self.proc.stop()


@pytest.fixture
async def fault_daemon(fake_provider: FakeProvider, nursery: trio.Nursery):
    home = Path(tempfile.mkdtemp(prefix="ikf-", dir="/tmp"))  # short: socket paths are limited
    script = Script()
    fake_provider.responder = script
    d = FaultDaemon(home, fake_provider, script, nursery)
    await d.start()
    try:
        yield d
    finally:
        d.stop()
        import shutil

        shutil.rmtree(home, ignore_errors=True)


def assert_history(o: Outcome, kinds: list[str], *, reply: str | None = None) -> None:
    """Exactly these history rows; the last assistant row holds the whole reply."""
    assert o.kinds == kinds, (o.case.tag, o.history)
    if reply is not None:
        assistants = [m for m in o.history if m["kind"] == "assistant"]
        assert assistants, o.case.tag
        assert assistants[-1]["content"] == reply, (o.case.tag, assistants[-1])
