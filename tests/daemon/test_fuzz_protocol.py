"""The protocol fuzz: thousands of generated and mutated request lines against
the real daemon (real process, real Unix socket, real SQLite, the fake provider
on loopback) while a canary agent streams long turns to a subscriber of its own.

After every case the daemon is alive, answers ``daemon.status`` on a new
connection, and no answer was an internal error (-32603); every line it sent
was JSON and no error quoted more than a bounded excerpt. At the end the
canary's subscriber got every seq in order, with no gap, and each of its turns
completed with the exact scripted text.

Run with ``-s`` to see the figures (cases run and survived, request lines).
"""

from __future__ import annotations

import json
import re
import socket
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.params import PARAMS
from tests.daemon.conftest import DaemonProcess, write_home
from tests.fakes.demo import last_turn
from tests.fakes.script import Reply
from tests.fakes.server import ThreadedFakeProvider

CANARY = "canary-kq"
THROWAWAY = ["tw-a", "tw-b", "tw-c"]
# what would change the canary's stream or state if aimed at it: only throwaway
# agents (or nobody) may be their target
MUTATING = {"agent.kill", "agent.cancel", "agent.clear", "agent.rewind", "agent.mark", "agent.set_model", "agent.set_system", "agent.prompt", "mail.send", "agent.compact", "agent.rename", "agent.remove", "schedule.add"}
EXCLUDED = {"daemon.shutdown", "daemon.reload"}  # the daemon must keep running as it is
METHODS = sorted(set(PARAMS) - EXCLUDED)
CODES = {-32700, -32600, -32601, -32602, -32001, -32002, -32003, -32004, -32005, -32007, -32008, -32009}

MAX_EXAMPLES = 6000
BUDGET = 60.0  # seconds of fuzzing at most; cases after it are not run (and not counted)
CANARY_PIECES, CANARY_DELAY = 60, 0.05  # 3 s a turn: a turn is always streaming


def _canary_text(n: int) -> str:
    return f"turn {n}: " + "".join(f"w{i} " for i in range(CANARY_PIECES))


def _responder(request: Any) -> Reply | None:
    user, _tool, _size = last_turn(request.json)
    found = re.fullmatch(r"canary-turn-(\d+)", user.strip())
    if found:
        return Reply(text=_canary_text(int(found.group(1))), pieces=CANARY_PIECES, delay=CANARY_DELAY)
    return None  # the default: a short "ok"


# ------------------------------------------------------------------ blocking JSON-RPC


class Conn:
    def __init__(self, path: Path, timeout: float = 30) -> None:
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(timeout)
        self.s.connect(str(path))
        self.buf = b""

    def lines(self):
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                yield line
            data = self.s.recv(1 << 16)
            if not data:
                return
            self.buf += data

    def call(self, method: str, params: dict | None = None, rid: int = 1) -> dict:
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode() + b"\n")
        for line in self.lines():
            msg = json.loads(line)
            if msg.get("id") == rid:
                return msg
        raise AssertionError(f"the connection closed before the answer to {method}")

    def close(self) -> None:
        self.s.close()


class Watcher(threading.Thread):
    """The canary's subscriber, on a connection of its own, reading everything."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.conn = Conn(path, timeout=0.5)
        self.events: list[dict] = []
        self.ended: set[str] = set()
        self.next_seq: int | None = None
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.closed = False

    def run(self) -> None:
        self.conn.s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "agent.subscribe", "params": {"agent": CANARY}}).encode() + b"\n")
        while not self.stop.is_set():
            try:
                for line in self.conn.lines():
                    msg = json.loads(line)
                    if msg.get("id") == 1:
                        self.next_seq = msg["result"]["next_seq"]
                        self.ready.set()
                    elif msg.get("method") == "agent.event":
                        self.events.append(msg["params"])
                        if msg["params"]["event"]["type"] == "turn_ended":
                            self.ended.add(msg["params"]["turn"])
                    else:
                        self.events.append({"unexpected": msg})
                self.closed = True
                return
            except TimeoutError:
                continue


# ------------------------------------------------------------------ what is sent

_surrogates = st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3)
_texts = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.builds(lambda a, s, b: a + s + b, st.text(max_size=8), _surrogates, st.text(max_size=8)),
    st.sampled_from(["", " ", "\x00", "a\x00b", "\u2028", "\ufeff", "\U0001f600", "é" * 300]),
    st.integers(0, 100_000).map(lambda n: "x" * n),
)
_ints = st.one_of(
    st.integers(-5, 50),
    st.integers(),
    st.sampled_from([2**53 - 1, 2**53, 2**63, 2**64, -(2**63), 10**30, -(10**30), 10**300]),
)


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


_scalars = st.one_of(st.none(), st.booleans(), _ints, st.floats(), _texts)
_values = st.one_of(
    _scalars,
    st.integers(1, 200).map(_nested),
    st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4), max_leaves=10),
)
_plain = st.text(max_size=30)
_agent_refs = st.sampled_from([CANARY, CANARY, *THROWAWAY, *THROWAWAY, "nobody", "  tw-a  ", ""]) | _plain
_models = st.sampled_from(["claude-sonnet-4-5", "claude-sonnet-4-5/high", "gpt-4o/low", "gemini-2.5-flash", "nope/none", "x/ultra"]) | _plain
_by_field: dict[str, Any] = {
    "keep": st.integers(-2, 5),
    "server": st.sampled_from(["time", "nope"]) | _plain,
    "mcp": st.lists(st.sampled_from(["time", "nope"]) | _plain, max_size=3) | st.none(),
    "agent": _agent_refs,
    "to": _agent_refs,
    "from": _agent_refs,
    "model": _models,
    "provider": st.sampled_from(["anthropic", "openai", "google", "nope"]) | _plain,
    "name": st.sampled_from([f"{t}-{i}" for t in THROWAWAY for i in range(3)]) | _plain,
    "limit": st.integers(-2, 20),
    "before": st.integers(-2, 50),
    "at": st.integers(-2, 50),
    "from_seq": st.integers(-2, 50),
    "subscription": st.integers(-2, 5),
    "label": st.sampled_from(["m1", "m2"]) | _plain,
    "text": _plain,
    "system": _plain,
    "prompt": _plain | st.none(),
    # agent.prompt's pictures: a tiny PNG, or what is refused by name
    "attachments": st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "media_type": st.sampled_from(["image/png", "image/bmp", "IMAGE/JPG"]) | _plain,
                "data": st.sampled_from(["iVBORw0KGgo=", "not base64!", ""]) | _plain,
                "name": _plain,
                "path": _plain,
                "url": _plain,
            },
        ),
        max_size=3,
    )
    | st.none(),
    # agent.prompt's tool choice: each form, a tool the agent has or not, or what is refused
    "tool_choice": st.sampled_from(["auto", "none", "required", "any", ""])
    | st.fixed_dictionaries({"name": st.sampled_from(["bash", "glob", "nope", ""]) | _plain})
    | st.fixed_dictionaries({}, optional={"name": _values, "type": _plain})
    | st.none(),
    # agent.prompt's trace context: a valid one, or what is ignored
    "traceparent": st.sampled_from(
        ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-xyz", "", "ff-" + "0" * 50]
    )
    | _plain
    | _values,
    # agent.prompt's answer schema and schema.save's: small valid ones, broken
    # ones, saved names (most never saved), or anything
    "schema": st.sampled_from(
        [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "array", "items": {"type": "integer"}},
            {"type": "nope"},
            {"$ref": "#/$defs/none"},
            {"properties": []},
            "tw-a-0",
            "no such",
            "",
        ]
    )
    | _plain
    | _values,
    "description": _plain,
    # agent.fork's fan-out: a few children, or past the bound
    "count": st.integers(-2, 4) | st.just(1001) | st.none(),
    "prompts": st.lists(_plain, max_size=3) | st.none(),
    "cwd": st.sampled_from(["/tmp", "/", "relative", "/no/such/dir", "/etc/passwd", "/tmp/../tmp/"]) | _plain,
    "policy": st.sampled_from(["default", "yolo", "nope"]) | _plain,
    "approval": st.sampled_from(["ap-0", "ap-000000000000"]) | _plain,
    "decision": st.sampled_from(["allow", "deny", "maybe"]) | _plain,
    "remember": st.sampled_from(["once", "agent", "session", "forever"]) | _plain,
    "reason": _plain | st.none(),
    "turn": st.sampled_from(["nope-1"]) | _plain,
    "document": _values,
    "priority": st.sampled_from(["interactive", "background", "urgent"]) | st.none(),
    "budget": st.fixed_dictionaries(
        {},
        optional={
            "max_cost_usd": st.floats() | st.integers(-2, 3) | _plain,
            "max_tokens": st.integers(-2, 10**6),
            "max_turns": st.integers(-2, 50),
            "allow_unpriced": st.booleans(),
        },
    )
    | st.none(),
    # schedule.*: rules that are bad, or valid and never due while this runs
    "schedule": st.sampled_from(["1", "2", "nope", "99999999999"]) | _plain,
    "cron": st.sampled_from(["0 9 29 2 *", "61 * * * *", "* * *", "bad"]) | _plain,
    "tz": st.sampled_from(["UTC", "Europe/Paris", "Mars/Base", "../etc"]) | _plain,
    "every": st.sampled_from(["10h", "30s", "0m", "10", "x"]) | _plain,
    "in": st.sampled_from(["20h", "soon", "10"]) | _plain,
    "missed": st.sampled_from(["skip", "once", "all", "some"]) | _plain,
    "overlap": st.sampled_from(["skip", "queue", "never"]) | _plain,
    "budget_usd": st.floats() | st.integers(-2, 3) | st.none(),
    # fleet.snapshot's long poll: short waits (the canary's turns change the fleet every few seconds)
    "since": st.integers(-2, 50) | st.none(),
    "wait_s": st.sampled_from([0, 0.05, 0.5, -1, 61]) | st.floats(),
    # worktrees: the canary's cwd is no repository, so each is refused by name
    "worktree": st.booleans()
    | st.none()
    | st.fixed_dictionaries({}, optional={"branch": st.sampled_from(["ok", "bad..name", "-x", ""]) | _plain, "from": st.sampled_from(["HEAD", "nope", "-x"]) | _plain}),
    "into": st.sampled_from(["main", "nope", "-x"]) | _plain | st.none(),
    "message": _plain | st.none(),
    "agents": st.lists(_agent_refs, max_size=3) | st.none(),
    # agent.create {on}: this daemon (alone on its SQLite file), "any", or nobody
    "on": st.sampled_from(["any", "nope", ""]) | _plain | st.none(),
}
_BOOLEANS = {"wait", "queue", "at_boundary", "include_dead", "descendants", "unread", "blocks", "signatures", "purge", "force", "dry_run", "clear", "all", "fork", "allow_fast", "prune_worktree", "disk", "stat", "squash", "include_gone"}


@st.composite
def _params(draw: st.DrawFn, method: str) -> Any:
    shape = draw(st.integers(0, 19))
    if shape == 0:
        return draw(_values)  # anything at all, maybe not an object
    fields = [f.encode_name for f in msgspec.structs.fields(PARAMS[method])]
    out: dict[str, Any] = {}
    for name in fields:
        if draw(st.integers(0, 3)) == 0:
            continue  # left out
        well_typed = st.booleans() if name in _BOOLEANS else _by_field[name]
        out[name] = draw(well_typed if draw(st.integers(0, 4)) else st.one_of(_texts, _values))
    if shape == 1:
        out[draw(_texts)] = draw(_values)  # an unknown key
    return out


@st.composite
def _generated(draw: st.DrawFn) -> bytes:
    odd = draw(st.integers(0, 19))  # 0..2: one part of the envelope is wrong
    method = draw(st.sampled_from(METHODS))
    if odd == 0:
        method = draw(st.one_of(st.just(method + "\x00"), _texts))
    msg: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["1.0", 2, None])) if odd == 1 else "2.0", "method": method}
    rid = draw(st.one_of(_ints, _texts, st.floats(), st.lists(st.integers(), max_size=2))) if odd == 2 else draw(st.sampled_from([None, *range(1, 10)]))
    if rid is not None:
        msg["id"] = rid
    if draw(st.integers(0, 4)):
        msg["params"] = draw(_params(method if method in PARAMS else "daemon.status"))
    if odd == 3:
        msg[draw(_texts)] = draw(_values)
    return json.dumps(msg, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


_seeds = [
    {"jsonrpc": "2.0", "id": 1, "method": "daemon.status"},
    {"jsonrpc": "2.0", "id": 2, "method": "agent.show", "params": {"agent": CANARY}},
    {"jsonrpc": "2.0", "id": 3, "method": "agent.history", "params": {"agent": CANARY, "limit": 5}},
    {"jsonrpc": "2.0", "id": 4, "method": "agent.list", "params": {"include_dead": True}},
    {"jsonrpc": "2.0", "id": 5, "method": "agent.prompt", "params": {"agent": "tw-a", "text": "hello there"}},
    {"jsonrpc": "2.0", "id": 6, "method": "agent.subscribe", "params": {"agent": CANARY, "from_seq": 1}},
    {"jsonrpc": "2.0", "id": 7, "method": "agent.fork", "params": {"agent": "tw-b", "name": "tw-b-f", "at": 1}},
    {"jsonrpc": "2.0", "id": 8, "method": "mail.send", "params": {"to": "tw-c", "text": "hi", "from": CANARY}},
    {"jsonrpc": "2.0", "id": 9, "method": "agent.usage", "params": {"agent": CANARY, "descendants": True}},
    {"jsonrpc": "2.0", "id": 10, "method": "agent.create", "params": {"name": "tw-new", "model": "gpt-4o/low", "prompt": "x", "wait": True}},
    {"jsonrpc": "2.0", "id": "s", "method": "models.list", "params": {"provider": "anthropic"}},
    {"jsonrpc": "2.0", "id": 12, "method": "agent.kill", "params": {"agent": "tw-c"}},
]


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    line = bytearray(json.dumps(draw(st.sampled_from(_seeds))).encode())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(line)))
        op = draw(st.integers(0, 6))
        if op == 0 and at < len(line):
            line[at] ^= draw(st.integers(1, 255))  # flip
        elif op == 1:
            del line[at:]  # truncate
        elif op == 2:
            line[at:at] = b"\xed\xbf\xbf"  # a surrogate as raw bytes
        elif op == 3:
            line[at:at] = b"[" * draw(st.integers(1, 5000))
        elif op == 4:
            line[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == 5:
            line[at:at] = b"\\ud800"  # a lone surrogate escape, inside a string or not
        else:
            del line[at : at + draw(st.integers(1, 10))]
    return bytes(line)


_OVER_LIMIT = b"x" * ((1 << 20) + 10)  # over the line limit: -32004, that connection closed


def _line_of(kind: int) -> st.SearchStrategy[bytes]:
    if kind < 70:
        return _generated()
    if kind < 90:
        return _mutated()
    if kind < 95:
        return st.binary(max_size=200)
    if kind < 99:
        return st.integers(60, 20_000).map(lambda n: b"[" * n + b"]" * n)
    return st.just(_OVER_LIMIT)


_lines = st.integers(0, 99).flatmap(_line_of)


def _canary_uuid_prefixes(uuid: str):
    def refers_to_canary(value: str) -> bool:
        v = value.strip()
        return v == CANARY or (len(v) >= 4 and uuid.startswith(v.lower()))

    return refers_to_canary


def _harmless(line: bytes, refers_to_canary) -> bool:
    """False for a line that could shut the daemon down or change the canary
    (read the way the daemon reads it, or more loosely)."""
    for part in line.split(b"\n"):
        try:
            msg = json.loads(part.decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError):
            continue
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
            continue
        if msg["method"] in EXCLUDED:
            return False
        params = msg.get("params")
        if (
            msg["method"] in MUTATING
            and isinstance(params, dict)
            and any(isinstance(v, str) and refers_to_canary(v) for v in params.values())
        ):
            return False
    return True


# ------------------------------------------------------------------ the test


def _start(home: Path) -> DaemonProcess:
    d = DaemonProcess(home)
    d.out_file = home / "daemon.out"  # read by the checks below
    d.start_blocking()
    return d


def _exchange(d: DaemonProcess, lines: list[bytes], newline_at_end: bool, stats: Counter) -> list[dict]:
    """Send the lines on a new connection, half-close it, read every answer
    until the daemon closes (a freeze fails the socket timeout)."""
    c = Conn(d.socket, timeout=30)
    answers = []
    try:
        data = b"\n".join(lines) + (b"\n" if newline_at_end else b"")
        try:
            c.s.sendall(data)
            c.s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            stats["closed early"] += 1  # refused (line too long) before it was all sent
        try:
            for raw in c.lines():
                answers.append(json.loads(raw))  # every line the daemon sends is JSON
        except ConnectionResetError:
            stats["closed early"] += 1
    finally:
        c.close()
    return answers


def test_protocol_fuzz_never_hurts_the_daemon_or_the_canary() -> None:
    home = Path(tempfile.mkdtemp(prefix="ikz-", dir="/tmp"))
    stats: Counter = Counter()
    with ThreadedFakeProvider(default=Reply(text="ok"), responder=_responder) as fake:
        write_home(home, fake)
        d = _start(home)
        watcher: Watcher | None = None
        try:
            admin = Conn(d.socket)
            for name in [CANARY, *THROWAWAY]:
                assert "result" in admin.call("agent.create", {"name": name})
            uuid = admin.call("agent.show", {"agent": CANARY})["result"]["uuid"]
            refers_to_canary = _canary_uuid_prefixes(uuid)
            watcher = Watcher(d.socket)
            watcher.start()
            assert watcher.ready.wait(10)
            turns: list[str] = []

            def next_canary_turn() -> None:
                answer = admin.call("agent.prompt", {"agent": CANARY, "text": f"canary-turn-{len(turns)}"})
                turns.append(answer["result"]["turn"])

            next_canary_turn()
            started = time.monotonic()
            last: list[Any] = [None]  # the case before this one

            @settings(
                max_examples=MAX_EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
            )
            @given(st.lists(_lines, min_size=1, max_size=4), st.booleans())
            def one_case(lines: list[bytes], newline_at_end: bool) -> None:
                if time.monotonic() - started > BUDGET:
                    return
                # once dead, every later case fails here, naming the one that killed it
                assert d.proc.poll() is None, f"the daemon died after {last[0]!r:.3000}:\n" + (home / "daemon.out").read_text()[-3000:]
                last[0] = lines
                lines = [line if _harmless(line, refers_to_canary) else b'{"jsonrpc":"2.0","id":0,"method":"daemon.status"}' for line in lines]
                stats["cases"] += 1
                stats["lines"] += len(lines)
                for answer in _exchange(d, lines, newline_at_end, stats):
                    if "error" in answer:
                        error = answer["error"]
                        stats[error["code"]] += 1
                        assert error["code"] in CODES, (lines, answer)
                        assert len(error["message"]) <= 1000, (lines, answer)  # an excerpt, never the input
                    elif "result" in answer:
                        stats["results"] += 1
                assert d.proc.poll() is None, "the daemon died:\n" + (home / "daemon.out").read_text()[-3000:]
                fresh = Conn(d.socket, timeout=10)
                try:
                    assert "result" in fresh.call("daemon.status")
                finally:
                    fresh.close()
                stats["survived"] += 1
                if turns[-1] in watcher.ended:
                    next_canary_turn()

            one_case()
            elapsed = time.monotonic() - started

            # the canary: every seq, in order; each turn completed with its exact text
            deadline = time.monotonic() + 30
            while turns[-1] not in watcher.ended and time.monotonic() < deadline:
                time.sleep(0.05)
            watcher.stop.set()
            watcher.join(5)
            events = watcher.events
            assert not [e for e in events if "unexpected" in e], [e for e in events if "unexpected" in e][:3]
            assert [e["seq"] for e in events] == list(range(watcher.next_seq, watcher.next_seq + len(events)))
            assert not [e for e in events if e["event"]["type"] == "lagged"]
            for n, turn in enumerate(turns):
                mine = [e["event"] for e in events if e["turn"] == turn]
                assert mine and mine[-1]["type"] == "turn_ended" and mine[-1]["status"] == "completed", (n, mine[-1:])
                assert "".join(ev["text"] for ev in mine if ev["type"] == "text_delta") == _canary_text(n)
            print(
                f"\nprotocol fuzz: {stats['cases']} cases ({stats['lines']} request lines) run, {stats['survived']} survived "
                f"in {elapsed:.0f} s; {stats['results']} results, errors by code "
                f"{ {k: v for k, v in stats.items() if isinstance(k, int)} }; canary: {len(turns)} turns, {len(events)} events, no gap"
            )
            assert stats["cases"] >= 200 and stats["survived"] == stats["cases"]
            # nothing went wrong quietly either: no traceback in the daemon's log
            logged = "".join(f.read_text(errors="replace") for f in [home / "daemon.out", *(home / "logs").glob("*")] if f.is_file())
            assert "Traceback" not in logged, logged[logged.find("Traceback") - 500 :][:4000]
        finally:
            if watcher is not None:
                watcher.stop.set()
            d.stop()
            import shutil

            shutil.rmtree(home, ignore_errors=True)
