"""``ikictl top``: the live view through a pseudo-terminal (a frame holds the
agents, their states and the provider's queue line; keys sort and filter;
``q`` and Ctrl+C quit with the terminal restored; a resize redraws at the new
width), ``--json`` against the documented schema (strict msgspec decoding,
as tests/client does), the plain snapshot on a pipe, and bad flags.

The daemon is real, with the key's cap at one call in flight, so the demo
responder's long story holds the slot and the next agent's call waits in
the limiter; the default policy makes a bash call wait for approval."""

from __future__ import annotations

import fcntl
import json
import re
import shlex
import shutil
import struct
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest

from ikigai.client import Client
from protocol import results as R

from .conftest import IKICTL, Daemon, start_daemon, stop_daemon, write_config
from .ptyexpect import PtyProcess

STATES = {"root": "idle", "kid": "waiting_for_llm", "waiter": "waiting_for_provider", "asker": "waiting_for_approval"}


def _decode(value: object) -> R.FleetSnapshot:
    return msgspec.convert(value, type=R.FleetSnapshot, strict=True)


def _until(c: Client, pred: Callable[[R.FleetSnapshot], bool], what: str, limit: float = 30) -> R.FleetSnapshot:
    """Snapshots by the long poll (each waits for a change) until ``pred``."""
    deadline = time.monotonic() + limit
    snap = _decode(c.fleet())
    while not pred(snap):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {limit} s: {snap}")
        snap = _decode(c.fleet(since=snap["version"], wait_s=0.5))
    return snap


def _states(snap: R.FleetSnapshot) -> dict[str, str]:
    return {a["name"]: a["state"] for a in snap["agents"]}


@pytest.fixture(scope="module")
def fleet(fake_url: str) -> Iterator[Daemon]:
    """A daemon whose anthropic key takes one call at a time, with an agent
    in each state of STATES (the long story runs half a minute: the module's
    tests read it meanwhile; the daemon's stop ends it)."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="ikt"))
    providers = {
        "anthropic": {"base_url": fake_url, "max_concurrent": 1},
        "openai": {"base_url": fake_url + "/v1"},
        "google": {"base_url": fake_url + "/v1beta"},
    }
    write_config(home, fake_url, default_model="claude-sonnet-4-5/low", policy="default", providers=providers)
    d = start_daemon(home)
    try:
        with Client.connect(str(d.socket), autostart=False) as c:
            c.call("agent.create", {"name": "root", "budget": {"max_cost_usd": 2.5}})
            # on another provider: the anthropic slot is the story's
            c.call("agent.create", {"name": "asker", "model": "openai/gpt-4o", "prompt": "run a tool please"})
            _until(c, lambda s: _states(s).get("asker") == "waiting_for_approval", "approval")
            c.call("agent.fork", {"agent": "root", "name": "kid", "prompt": "tell me a long story"})
            _until(c, lambda s: _states(s).get("kid") == "waiting_for_llm", "the story")
            c.call("agent.create", {"name": "waiter", "prompt": "tell me another long story"})
            _until(c, lambda s: _states(s) == STATES, "every state")
        yield d
    finally:
        stop_daemon(d)
        shutil.rmtree(home, ignore_errors=True)


def test_json_is_one_snapshot_of_the_documented_shape(fleet: Daemon) -> None:
    snap = _decode(fleet.ikictl("top", "--json").json())
    assert _states(snap) == STATES
    by = {a["name"]: a for a in snap["agents"]}
    assert by["kid"]["parent"] == by["root"]["uuid"] == by["kid"]["tree"]
    assert by["kid"]["budget"] is not None and by["kid"]["budget"]["max_cost_usd"] == 2.5
    assert by["waiter"]["waiting"] is not None and by["waiter"]["waiting"]["on"] == "provider"
    (lim,) = [x for x in snap["limiters"] if x["provider"] == "anthropic"]
    assert (lim["in_flight"], lim["max_concurrent"], lim["queued"]["interactive"]) == (1, 1, 1)


def test_json_interval_streams_lines_until_count(fleet: Daemon) -> None:
    t0 = time.monotonic()
    res = fleet.ikictl("top", "--json", "--interval", "0.2", "--count", "3")
    took = time.monotonic() - t0
    snaps = [_decode(json.loads(line)) for line in res.lines]
    assert len(snaps) == 3 and took >= 0.4
    assert snaps[0]["at"] < snaps[1]["at"] < snaps[2]["at"]
    assert all(_states(s)["waiter"] == "waiting_for_provider" for s in snaps)


def test_a_pipe_gets_one_plain_snapshot(fleet: Daemon) -> None:
    out = fleet.ikictl("top").out
    assert "\x1b" not in out
    assert re.search(r"^anthropic: in flight 1/1\s+queued 1 \(interactive 1, background 0\)", out, re.M)
    for name, state in {"root": "idle", "kid": "running", "waiter": "waiting_for_provider"}.items():
        assert re.search(rf"^\s*{name}\s+\S+\s+{state}\b", out, re.M), (name, out)
    assert re.search(r"^\s+kid\s", out, re.M)  # indented under root
    assert "approval of bash" in out and "anthropic: 1st in line" in out
    assert re.search(r"^root .*\$0/\$2\.50", out, re.M)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--interval", "0"], "--interval"),
        (["--interval", "-1"], "--interval"),
        (["--interval", "abc"], "--interval"),
        (["--interval", "nan"], "--interval"),
        (["--json", "--interval", "0"], "--interval"),
        (["--json", "--count", "0"], "--count"),
        (["--count", "2"], "--count"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(fleet: Daemon, args: list[str], flag: str) -> None:
    res = fleet.ikictl("top", *args, code=2)
    assert flag in res.err and res.out == ""


def test_help_answers_the_question(fleet: Daemon) -> None:
    out = fleet.ikictl("top", "--help").out
    for words in ("q quit", "s cycle the sort", "f cycle the filter", "--json", "--interval", "paused until"):
        assert words in out


def _pty(fleet: Daemon, cols: int = 200) -> PtyProcess:
    # top, then what it left the terminal as (stty runs on the same terminal);
    # the shell traps Ctrl+C (a handler, not ignored: top gets the default) to live on
    top = shlex.join([*IKICTL, "top", "--interval", "0.5"])
    cmd = f"trap : INT; {top}; echo top exit $?; stty -a"
    return PtyProcess(["sh", "-c", cmd], env=fleet.env, cols=cols)


def _restored(t: PtyProcess) -> None:
    stty = t.expect(r"top exit (\d+)[\s\S]*?(-?icanon)[\s\S]*?(-?echo)\b")
    assert stty.group(2) == "icanon" and stty.group(3) == "echo"
    assert t.raw.rfind(b"\x1b[?1049l") > t.raw.rfind(b"\x1b[?1049h") >= 0
    assert t.raw.rfind(b"\x1b[?25h") > t.raw.rfind(b"\x1b[?25l")


def test_the_live_view_draws_sorts_filters_and_quits(fleet: Daemon) -> None:
    t = _pty(fleet)
    try:
        t.expect(r"anthropic: in flight 1/1\s+queued 1")
        t.expect(r"^root\s+\S+\s+idle\b")
        t.expect(r"^\s+kid\s+\S+\s+running\b.*\d")
        t.expect(r"waiter\s+\S+\s+waiting_for_provider\s.*anthropic: 1st in line")
        t.expect(r"asker\s+\S+\s+waiting_for_approval\s.*approval of bash")
        t.send("s")
        t.expect(r"sort: cost")
        t.send("f")
        frame = t.expect(r"tree: root[\s\S]*?WAITING ON\n([\s\S]*?)(?=ikictl top|\Z)")
        assert "waiter" not in frame.group(1) and "kid" in frame.group(1)
        # a narrower terminal: the next frame is cut to it
        fcntl.ioctl(t.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 50, 0, 0))
        t.expect(r"ikictl top [^\n]{25,39}\n")
        t.send("q")
        assert t.expect(r"top exit (\d+)").group(1) == "0"
        t.pos = 0
        _restored(t)
        assert t.wait() == 0
    finally:
        t.close()


def test_ctrl_c_quits_with_the_terminal_restored(fleet: Daemon) -> None:
    t = _pty(fleet)
    try:
        t.expect(r"anthropic: in flight 1/1")
        t.ctrl_c()
        assert t.expect(r"top exit (\d+)").group(1) == "130"
        t.pos = 0
        _restored(t)
    finally:
        t.close()
