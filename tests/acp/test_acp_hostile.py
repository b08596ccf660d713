"""Hostile input to ``ikictl acp``: whatever an editor writes on its stdin,
every request with a usable id gets exactly one answer with that id (a result,
or an error with an integer code, a message and little of the input quoted),
every other line that is not a notification or an answer gets one error with
``"id": null``, the process stays up, and the daemon and its agents are not
disturbed. Plus the editor that never answers a permission request (denied
after ``--permission-timeout``, the request withdrawn) and the editor that
goes away mid-turn (the turn still completes in the daemon).

Raw bytes to the real ``ikictl acp`` (no client library to tidy them up), the
real daemon behind it (``daemon``, yolo) on the fake provider."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import protocol as p
from tests.ikictl.conftest import IKICTL, Daemon, wait_for

ANSWER_WITHIN = 60.0  # seconds; loaded CI machines
MAX_ERROR_LINE = 4096  # an error quotes little of what it was sent
MIB = 1 << 20
DAEMON_LIMIT = "1,048,576"  # the daemon's max_line_bytes, as the refusal names it
TOOL = "please run a tool"  # the demo responder calls bash (echo hello from a tool)
TOOL_ANSWER = "The tool ran and printed: hello from a tool"
_SURROGATE = re.compile("[\ud800-\udfff]")


class Editor:
    """``ikictl acp ARGS`` with pipes, as an editor starts it, and a thread
    filing each line it writes (each must be a JSON object: the editor parses it)."""

    _runs = itertools.count(1)

    def __init__(self, daemon: Daemon, *args: str) -> None:
        self.stderr = daemon.home / f"acp-{next(self._runs)}.stderr"
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                [*IKICTL, "acp", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                env=daemon.env, cwd=daemon.home,
            )
        self.lines: list[tuple[dict[str, Any], int]] = []  # (message, bytes of its line)
        self.garbled: list[bytes] = []
        self.changed = threading.Condition()
        self.ids = itertools.count(1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            with self.changed:
                if isinstance(message, dict):
                    self.lines.append((message, len(line)))
                else:
                    self.garbled.append(line[:300])
                self.changed.notify_all()

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def answers(self) -> list[dict[str, Any]]:
        """What answers the editor's requests (not the agent's own messages)."""
        with self.changed:
            return [m for m, _ in self.lines if "method" not in m]

    def wait(self, done: Callable[[list[dict[str, Any]]], bool], what: str) -> list[dict[str, Any]]:
        """Every message so far, once ``done(messages)`` holds."""
        deadline = time.monotonic() + ANSWER_WITHIN
        with self.changed:
            while True:
                messages = [m for m, _ in self.lines]
                if done(messages):
                    return messages
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no {what} in {ANSWER_WITHIN:g} s (exit {self.proc.poll()})\n{self.stderr_tail()}")
                self.changed.wait(min(left, 1.0))

    def send(self, method: str, params: Any) -> str:
        rid = f"t-{next(self.ids)}"
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.write(json.dumps(message).encode() + b"\n")
        return rid

    def answer_to(self, rid: str, what: str) -> dict[str, Any]:
        answered = self.wait(lambda ms: any(m.get("id") == rid and "method" not in m for m in ms), what)
        return next(m for m in answered if m.get("id") == rid and "method" not in m)

    def call(self, method: str, params: Any) -> dict[str, Any]:
        return self.answer_to(self.send(method, params), f"answer to {method}")

    def new_session(self) -> str:
        answer = self.call("session/new", {"cwd": str(self.stderr.parent), "mcpServers": []})
        assert "result" in answer, answer
        return str(answer["result"]["sessionId"])

    def close(self) -> int:
        """Close stdin (the editor goes): ikictl acp's exit code."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError(f"ikictl acp still running 30 s after its stdin closed\n{self.stderr_tail()}") from None

    def stderr_tail(self) -> str:
        return self.stderr.read_text(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def hostile_editor(daemon: Daemon) -> Iterator[tuple[Editor, str]]:
    """One ``ikictl acp`` for the module's hostile lines, initialized, with a live session."""
    e = Editor(daemon, "--permission-timeout", "2")
    try:
        assert e.call("initialize", {"protocolVersion": 1})["result"]["protocolVersion"] == 1
        yield e, e.new_session()
    finally:
        e.close()


def _history(daemon: Daemon, agent: str) -> list[dict[str, Any]]:
    return daemon.ikictl("--json", "history", agent).json()["messages"]  # type: ignore[index]


def assert_unharmed(daemon: Daemon, e: Editor, session: str) -> None:
    """The process is up, the same daemon answers, and a real prompt on the
    session still completes."""
    assert e.proc.poll() is None, f"ikictl acp exited\n{e.stderr_tail()}"
    status = daemon.ikictl("--json", "status").json()
    assert daemon.proc is not None and status["pid"] == daemon.proc.pid  # type: ignore[index]
    done = e.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]})
    assert done.get("result") == {"stopReason": "end_turn"}, done
    assert daemon.ikictl("--json", "show", session).json()["status"] == "running"  # type: ignore[index]


# ---------------------------------------------------------------- what must be answered


def _has_surrogate(value: Any) -> bool:
    """A lone surrogate anywhere in a parsed value, keys too."""
    return bool(_SURROGATE.search(json.dumps(value, ensure_ascii=False)))


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _usable(rid: object) -> bool:
    """An id an answer can carry back (protocol.lines.id_problem's rule)."""
    if type(rid) is int:
        return -p.MAX_INT <= rid <= p.MAX_INT
    return isinstance(rid, str) and len(rid) <= p.MAX_ID and not _has_surrogate(rid)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def wanted(line: bytes) -> tuple[bool, Any]:
    """What JSON-RPC 2.0 asks of one line: (is it answered, with which id)."""
    if not line.strip():
        return False, None  # a blank line
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return True, None  # a parse error
    if not isinstance(message, dict) or _depth(message) > p.MAX_DEPTH:
        return True, None
    has_id, rid = "id" in message, message.get("id")
    if rid is not None and not _usable(rid):
        return True, None
    if message.get("jsonrpc") != "2.0":
        return True, rid
    if "method" not in message:
        # an answer to a request of the agent's is not answered; anything else is invalid
        return not (has_id and ("result" in message or "error" in message)), rid
    method = message["method"]
    envelope = {k: v for k, v in message.items() if k != "params"}
    if not isinstance(method, str) or not 0 < len(method) <= p.MAX_NAME or _has_surrogate(envelope):
        return True, rid  # not a request: invalid, answered even without an id
    return has_id, rid  # a notification is never answered, whatever its params


# ---------------------------------------------------------------- strategies

SESSION = "<session>"  # replaced by the module's live session id
FRESH = "<fresh id>"  # replaced by an id no other line used, to find its answer
ABSENT = "<absent>"  # a member left out
ID_MARK = b"@ID@"  # in a raw line: a fresh id, JSON-encoded

_lone = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2)
_text = st.text(max_size=30) | st.builds(lambda a, s, b: a + s + b, st.text(max_size=5), _lone, st.text(max_size=5))
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12,
).map(lambda v: v)  # mapped: one choice beside the others in a one_of, not a dozen


def _mostly(meaningful: Any, other: Any = _json, n: int = 4) -> st.SearchStrategy[Any]:
    """``meaningful`` n-1 times in n, ``other`` (any JSON value) otherwise."""
    return st.integers(1, n).flatmap(lambda k: meaningful if k < n else other)


def _members(fields: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """An object of ``fields``, each now and then left out, a stray member now and then."""
    given = st.fixed_dictionaries({k: _mostly(v, st.just(ABSENT), 8) for k, v in fields.items()})
    return st.tuples(given, _mostly(st.just({}), st.dictionaries(_text, _json, max_size=2))).map(
        lambda t: {**t[1], **{k: v for k, v in t[0].items() if v != ABSENT}}
    )


_session = _mostly(st.sampled_from([SESSION] * 3 + ["nobody", "", "x" * 300]))
_cwd = _mostly(st.sampled_from(["/tmp", "relative", "/no/such", "", "/" + "d" * 5000]))
_servers = _mostly(st.just([]))
_block = _members(
    {
        "type": _mostly(st.sampled_from(["text", "image", "audio", "resource", "resource_link", "x"])),
        "text": _mostly(st.sampled_from(["hi", "", "  "])),
        "mimeType": _mostly(st.sampled_from(["image/png", "image/bmp", "text/plain"])),
        "data": _mostly(st.sampled_from(["iVBORw0KGgo=", "%%%"])),
        "uri": _mostly(st.sampled_from(["file:///x", ""])),
        "resource": _members({"uri": _text, "text": _text, "blob": _text, "mimeType": _text}),
    }
)
_opened = {"sessionId": _session, "cwd": _cwd, "mcpServers": _servers}
PARAMS: dict[str, dict[str, Any]] = {  # each ACP method's members, mostly as they should be
    "initialize": {
        "protocolVersion": _mostly(st.integers(-5, 1 << 70) | st.sampled_from([1, "1", 1.5])),
        # {} only for now: any other value is salvaged by the SDK to a plain dict
        # that bridge.initialize calls model_dump on (-32603 Internal error)
        "clientCapabilities": st.just({}),
    },
    "authenticate": {"methodId": _mostly(_text)},
    "session/new": {"cwd": _cwd, "mcpServers": _servers},
    "session/load": _opened,
    "session/resume": _opened,
    "session/fork": _opened,
    "session/list": {"cwd": _cwd, "cursor": _mostly(st.sampled_from(["0", "50", "-1", "abc", "9" * 30]))},
    "session/close": {"sessionId": _session},
    "session/prompt": {"sessionId": _session, "prompt": _mostly(st.lists(_block, max_size=3))},
    "session/cancel": {"sessionId": _session},
    "session/set_mode": {"sessionId": _session, "modeId": _mostly(st.sampled_from(["yolo", "nope", "", "x" * 300]))},
    "session/set_config_option": {
        "sessionId": _session,
        "configId": _mostly(st.sampled_from(["model", "thinking", "policy", "colour"])),
        "value": _mostly(st.sampled_from(["high", "yolo", "nope", "anthropic/claude-sonnet-4-5", "x/y", "a" * 300])),
    },
}
METHODS = [*PARAMS, "session/update", "fs/read_text_file", "_ikigai/x", "$/cancel_request", "nope"]
_odd_ids = st.one_of(
    st.integers(-p.MAX_INT - 5, p.MAX_INT + 5),
    st.integers(min_value=1 << 64),
    st.floats(),
    st.text(min_size=p.MAX_ID - 3, max_size=p.MAX_ID + 40),
    _json,
)
# half a fresh id (a request to answer), one in five none (a notification), else odd
_ids = st.integers(0, 9).flatmap(lambda k: st.just(FRESH) if k < 5 else st.just(ABSENT) if k < 7 else _odd_ids)
_shaped = st.sampled_from(METHODS).flatmap(
    lambda method: st.fixed_dictionaries(
        {
            "jsonrpc": _mostly(st.just("2.0"), st.sampled_from(["1.0", 2.0, ABSENT]) | _json, 8),
            "id": _ids,
            "method": _mostly(st.just(method), _text | _json, 8),
            "params": _mostly(_members(PARAMS.get(method, {})), _json, 8),
        }
    )
)
# the editor's answers to requests it was never sent: taken and dropped
_answer = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": _ids},
    optional={"result": _json, "error": _json},
)


def _deep(depth: int, wrap: bool) -> bytes:
    nested = b"[" * depth + b"]" * depth
    if not wrap:
        return nested
    return b'{"jsonrpc":"2.0","id":@ID@,"method":"session/list","params":{"cwd":' + nested + b"}}"


# a few MB: a string, a method name, a param of an unknown method
_huge = st.one_of(
    st.integers(MIB, 4 * MIB).map(lambda n: b'"' + b"x" * n + b'"'),
    st.integers(MIB, 3 * MIB).map(lambda n: b'{"jsonrpc":"2.0","id":@ID@,"method":"' + b"m" * n + b'"}'),
    st.integers(MIB, 3 * MIB).map(lambda n: b'{"jsonrpc":"2.0","id":@ID@,"method":"nope","params":{"x":"' + b"y" * n + b'"}}'),
).map(lambda b: b)
_raw = st.one_of(
    st.binary(max_size=200),  # mostly not UTF-8
    st.text(max_size=60).map(str.encode),  # mostly not JSON
    _json.filter(lambda v: not isinstance(v, dict)).map(lambda v: json.dumps(v).encode()),
    st.builds(_deep, st.integers(p.MAX_DEPTH + 1, 3000), st.booleans()),
    st.sampled_from([b"NaN", b"Infinity", b"-Infinity"]).map(
        lambda c: b'{"jsonrpc":"2.0","id":@ID@,"method":"initialize","params":{"protocolVersion":%s}}' % c
    ),
    _huge,
    # lone surrogates, escaped (raw ones are not UTF-8, above)
    st.sampled_from(
        [
            b'"\\ud800"',
            b'{"jsonrpc":"2.0","id":"\\udfff","method":"session/list"}',
            b'{"jsonrpc":"2.0","id":@ID@,"method":"session/\\ud800"}',
            b'{"jsonrpc":"2.0","id":@ID@,"method":"session/new","params":{"cwd":"/tmp/\\ud83d","mcpServers":[]}}',
            b'{"jsonrpc":"2.0","id":@ID@,"method":"session/load","params":{"sessionId":"\\udc00","cwd":"/","mcpServers":[]}}',
            b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"\\ud800"}}',
            b'{"jsonrpc":"2.0","id":@ID@,"method":"session/list","\\ud800":1}',
        ]
    ),
).map(lambda b: b)
# a real turn now and then, among the hostile lines
_turn = {"jsonrpc": "2.0", "id": FRESH, "method": "session/prompt", "params": {"sessionId": SESSION, "prompt": [{"type": "text", "text": "hi"}]}}
# mostly JSON-RPC shaped, one in five raw, one in twenty an answer to nothing, a real turn rarely
_item = st.integers(0, 39).flatmap(
    lambda k: _shaped if k < 29 else _raw if k < 37 else _answer if k < 39 else st.just(_turn)
)


# Not on the live session for now: a session/prompt whose agent.prompt is still
# on its way while a session/load or session/resume of the same session replaces
# its Session object waits on the detached one for good (bridge.prompt ->
# Session.outcome after Session.detach): that request is never answered.
_REOPEN = ("session/load", "session/resume", "session/close")


class Lines:
    """One example's lines made concrete: fresh ids in, and what each wants."""

    def __init__(self, session: str, fresh: Iterator[int], spare: str = "nobody") -> None:
        self.session, self.spare = session, spare
        self.fresh = fresh
        self.data = b""
        self.ids: list[Any] = []  # the ids that must be answered, once each
        self.nulls = 0  # the errors with "id": null
        self.ours: set[Any] = set()

    def _fresh(self, like: Any) -> Any:
        n = next(self.fresh)
        if isinstance(like, str) and like != FRESH:
            rid: Any = f"h{n}-{like}"[: max(len(like), len(str(n)) + 2)]  # as long as it was
        elif isinstance(like, int) and like < 0:
            rid = -(10**9 + n)
        else:
            rid = 10**9 + n
        self.ours.add(rid)
        return rid

    def add(self, item: bytes | dict[str, Any]) -> None:
        if isinstance(item, bytes):
            line = item.replace(b"\n", b" ")
            while ID_MARK in line:
                line = line.replace(ID_MARK, json.dumps(self._fresh(FRESH)).encode(), 1)
        else:
            message = {k: v for k, v in item.items() if v != ABSENT}
            rid = message.get("id")
            if rid == FRESH or (rid is not None and _usable(rid)):
                message["id"] = self._fresh(rid)
            params = message.get("params")
            if message.get("method") in _REOPEN and isinstance(params, dict) and params.get("sessionId") == SESSION:
                # a prompt racing a load of its session is never answered (see _REOPEN)
                message["params"] = {**params, "sessionId": self.spare}
            text = json.dumps(message, allow_nan=True)  # NaN too: a parse error to answer
            line = text.replace(json.dumps(SESSION), json.dumps(self.session)).encode()
        answered, rid = wanted(line)
        if answered and rid is None:
            self.nulls += 1
        elif answered:
            assume(rid in self.ours and rid not in self.ids)  # never an id another line used
            self.ids.append(rid)
        self.data += line + b"\n"


def _answered(e: Editor, lines: Lines) -> None:
    """Write the lines and check what comes back."""
    with e.changed:
        before = len(e.lines)
    nulls_before = sum(1 for a in e.answers() if a.get("id") is None)
    e.write(lines.data)

    def all_in(messages: list[dict[str, Any]]) -> bool:
        answers = [m for m in messages if "method" not in m]
        ids = {a.get("id") for a in answers}
        nulls = sum(1 for a in answers if a.get("id") is None) - nulls_before
        return all(i in ids for i in lines.ids) and nulls >= lines.nulls

    e.wait(all_in, f"answers to {lines.ids} and {lines.nulls} errors with id null")
    # an unknown method is answered at once: a line answered twice, or a
    # notification answered, has been written by now
    e.call("_ikigai/sentinel", {})
    assert e.proc.poll() is None, f"ikictl acp exited\n{e.stderr_tail()}"
    assert not e.garbled, e.garbled
    with e.changed:
        new = [(m, size) for m, size in e.lines[before:] if "method" not in m]
        everything = [m for m, _ in e.lines if "method" not in m]
    for rid in lines.ids:
        mine = [a for a in everything if a.get("id") == rid]
        assert len(mine) == 1, mine
    for answer, size in new:
        assert answer.get("jsonrpc") == "2.0" and "id" in answer, answer
        rid = answer["id"]
        assert rid is None or rid in lines.ids or str(rid).startswith("t-"), f"unasked: {answer}"
        assert ("result" in answer) != ("error" in answer), answer
        if "error" in answer:
            error = answer["error"]
            assert type(error.get("code")) is int and isinstance(error.get("message"), str), answer
            assert error["code"] != p.INTERNAL_ERROR, f"not a clear error: {answer}"
            assert size < MAX_ERROR_LINE, f"{size} bytes: {str(answer)[:500]}"
    nulls = sum(1 for a in everything if a.get("id") is None) - nulls_before
    assert nulls == lines.nulls, [m for m, _ in new if m.get("id") is None]


_FRESH_IDS = itertools.count(1)
_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])


def test_every_line_is_answered_and_nothing_breaks(
    hostile_editor: tuple[Editor, str], daemon: Daemon
) -> None:
    e, session = hostile_editor
    spare = e.new_session()  # what session/load, resume and close get instead of the live one

    @settings(_SETTINGS, max_examples=150)
    @given(items=st.lists(_item, min_size=1, max_size=5))
    @example(items=[{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nobody"}}])
    @example(items=[{"jsonrpc": "2.0", "id": None, "method": "nope"}, b"", b" \t"])
    @example(items=[{"jsonrpc": "2.0", "id": FRESH, "result": {"outcome": {"outcome": "cancelled"}}}])
    @example(items=[_deep(p.MAX_DEPTH + 1, True), _deep(100, False)])
    @example(items=[{"jsonrpc": "2.0", "id": FRESH, "method": "session/new", "params": {"cwd": "/\udc00", "mcpServers": []}}])
    def run(items: list[Any]) -> None:
        lines = Lines(session, _FRESH_IDS, spare)
        for item in items:
            lines.add(item)
        _answered(e, lines)

    run()
    assert_unharmed(daemon, e, session)


# ---------------------------------------------------------------- bad prompts on a live session

_IMAGES = ("image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp")
_KINDS = ("text", "image", "audio", "resource", "resource_link")
_bad_block = st.one_of(
    st.builds(  # a kind of block ACP does not have
        lambda kind, text: {"type": kind, "text": text},
        st.text(max_size=20).filter(lambda t: t not in _KINDS),
        st.text(max_size=20),
    ),
    st.builds(  # an image of a type no model takes
        lambda media: {"type": "image", "mimeType": media, "data": "iVBORw0KGgo="},
        st.sampled_from(["image/bmp", "image/svg+xml", "text/html", ""])
        | st.text(max_size=30).filter(lambda m: m.lower() not in _IMAGES),
    ),
    st.builds(  # a picture that is not base64
        lambda media, data: {"type": "image", "mimeType": media, "data": "!" + data},
        st.sampled_from(_IMAGES),
        st.text(max_size=20),
    ),
    st.just({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}),
    st.sampled_from(["application/pdf", "audio/wav", "x/y"]).map(  # binary, not a picture
        lambda media: {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAAA", "mimeType": media}}
    ),
)
_fine_block = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=40)),
    st.just({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}),
    st.just({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "a"}}),
)
_bad_prompt = st.one_of(
    st.builds(lambda a, bad, b: [*a, bad, *b], st.lists(_fine_block, max_size=2), _bad_block, st.lists(_fine_block, max_size=2)),
    st.sampled_from([[], [{"type": "text", "text": " \n\t"}], [{"type": "text", "text": ""}]]),
    st.integers(MIB + 1024, 3 * MIB).map(lambda n: [{"type": "text", "text": "x" * n}]),
)


def test_bad_prompts_are_refused_and_never_reach_the_agent(
    hostile_editor: tuple[Editor, str], daemon: Daemon
) -> None:
    e, _ = hostile_editor
    session = e.new_session()

    @settings(_SETTINGS, max_examples=40)
    @given(prompts=st.lists(_bad_prompt, min_size=1, max_size=3))
    @example(prompts=[[{"type": "text", "text": "x" * (2 * MIB)}]])
    @example(prompts=[[{"type": "image", "mimeType": "text/html", "data": "iVBORw0KGgo="}]])
    @example(prompts=[[{"type": "video", "text": "x"}]])
    def run(prompts: list[list[dict[str, Any]]]) -> None:
        lines = Lines(session, _FRESH_IDS)
        for prompt in prompts:
            lines.add({"jsonrpc": "2.0", "id": FRESH, "method": "session/prompt",
                       "params": {"sessionId": SESSION, "prompt": prompt}})
        _answered(e, lines)
        answers = {a.get("id"): a for a in e.answers()}
        for rid, prompt in zip(lines.ids, prompts, strict=True):
            error = answers[rid].get("error")
            assert error is not None and error["code"] == p.INVALID_PARAMS, answers[rid]
            if len(json.dumps(prompt)) > MIB:
                assert DAEMON_LIMIT in error["message"], error  # the limit named

    run()
    assert not [m for m in _history(daemon, session) if m["kind"] == "user"]
    assert_unharmed(daemon, e, session)
    assert [m["content"] for m in _history(daemon, session) if m["kind"] == "user"] == ["hello"]


def test_a_line_over_the_limit_is_answered_and_the_next_one_read(
    hostile_editor: tuple[Editor, str],
) -> None:
    from ikictl.acp.wire import MAX_LINE

    e, _ = hostile_editor
    nulls = sum(1 for a in e.answers() if a.get("id") is None)
    e.write(b'{"jsonrpc":"2.0","id":1,"method":"nope","params":{"x":"' + b"x" * MAX_LINE + b'"}}\n')
    answers = e.wait(lambda ms: sum(1 for m in ms if "method" not in m and m.get("id") is None) > nulls, "its answer")
    error = [m for m in answers if "method" not in m and m.get("id") is None][-1]["error"]
    assert error["code"] == p.LINE_TOO_LONG and str(MAX_LINE) in error["message"], error
    assert e.call("session/list", {})["result"]["sessions"]


# ---------------------------------------------------------------- an editor that does not answer, or goes


def test_a_permission_the_editor_never_answers_is_denied_after_the_timeout(daemon: Daemon) -> None:
    e = Editor(daemon, "--permission-timeout", "2", "--policy", "default")  # default: bash asks
    try:
        e.call("initialize", {"protocolVersion": 1})
        session = e.new_session()
        prompt = e.send("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": TOOL}]})
        ms = e.wait(lambda ms: any(m.get("method") == "session/request_permission" for m in ms), "a permission request")
        asked = next(m for m in ms if m.get("method") == "session/request_permission")
        seen = time.monotonic()
        # never answered: after the timeout the request is withdrawn and the call denied

        def withdrawn(m: dict[str, Any]) -> bool:
            return m.get("method") == "$/cancel_request" and m["params"].get("requestId") == asked["id"]

        e.wait(lambda ms: any(map(withdrawn, ms)), "$/cancel_request for the permission request")
        assert time.monotonic() - seen > 1.0  # not at once: after the 2 s
        done = e.answer_to(prompt, "the prompt's answer")
        assert done.get("result") == {"stopReason": "end_turn"}, done
        decided = [m for m in _history(daemon, session) if m["kind"] == "permission"]
        assert len(decided) == 1 and decided[0]["data"]["decision"] == "deny", decided
        assert "did not answer within 2 s" in decided[0]["data"]["reason"], decided
        assert e.proc.poll() is None
        assert e.close() == 0
    finally:
        e.close()


def test_stdin_closed_mid_turn_exits_0_and_the_turn_completes_in_the_daemon(daemon: Daemon) -> None:
    # the turn waits on a permission request the editor leaves open: it is mid-turn for sure
    e = Editor(daemon, "--policy", "default")
    try:
        e.call("initialize", {"protocolVersion": 1})
        session = e.new_session()
        prompt = e.send("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": TOOL}]})
        e.wait(lambda ms: any(m.get("method") == "session/request_permission" for m in ms), "a permission request")
        assert e.close() == 0
    finally:
        e.close()
    assert not [a for a in e.answers() if a.get("id") == prompt]  # it left before the answer
    pending = daemon.ikictl("--json", "approvals", session).json()
    assert isinstance(pending, list) and len(pending) == 1, pending
    daemon.ikictl("approve", pending[0]["approval"])

    def completed() -> bool:
        rows = _history(daemon, session)
        return bool(rows) and rows[-1]["kind"] == "assistant" and rows[-1]["turn_status"] == "completed"

    wait_for(completed, ANSWER_WITHIN, "the turn completed")
    rows = _history(daemon, session)
    assert rows[-1]["content"] == TOOL_ANSWER, rows[-1]
    assert [m["data"]["decision"] for m in rows if m["kind"] == "permission"] == ["allow"]
