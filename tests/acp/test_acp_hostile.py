"""Hostile input to ``ikictl acp``: whatever an editor writes on its stdin,
every request line is answered (a result or an error with its id), every line
that is no request is answered with ``"id": null`` (a notification, never),
the process stays up, and the daemon and its agents are not disturbed.

The lines are written to the real ``ikictl acp`` process as raw bytes (no
client library in between to tidy them up), against the real daemon."""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

# ``daemon`` (tests/acp/conftest.py): yolo, so a real prompt never waits on a permission
from tests.ikictl.conftest import IKICTL, Daemon

ANSWER_WITHIN = 30.0  # seconds; loaded CI machines
MAX_ERROR_LINE = 4096  # an error quotes little of what it was sent
MAX_INT = (1 << 53) - 1


class Editor:
    """``ikictl acp`` with pipes, and a thread filing what it writes."""

    def __init__(self, daemon: Daemon) -> None:
        self.proc = subprocess.Popen(
            [*IKICTL, "acp", "--permission-timeout", "1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=daemon.env,
            cwd=daemon.home,
        )
        self.lines: list[bytes] = []
        self.changed = threading.Condition()
        self.ids = itertools.count(1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def answers(self) -> list[dict[str, Any]]:
        with self.changed:
            return [json.loads(line) for line in self.lines]

    def wait(self, done: Any, what: str) -> list[dict[str, Any]]:
        """The answers so far, once ``done(answers)`` holds."""
        deadline = time.monotonic() + ANSWER_WITHIN
        with self.changed:
            while True:
                answers = [json.loads(line) for line in self.lines]
                if done(answers):
                    return answers
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(
                        f"no {what} within {ANSWER_WITHIN} s (exit {self.proc.poll()})"
                    )
                self.changed.wait(left)

    def call(self, method: str, params: Any) -> dict[str, Any]:
        rid = f"t-{next(self.ids)}"
        self.write(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
            + b"\n"
        )
        answers = self.wait(lambda a: any(m.get("id") == rid for m in a), f"answer to {method}")
        return next(m for m in answers if m.get("id") == rid)


@pytest.fixture(scope="module")
def editor(daemon: Daemon) -> Iterator[tuple[Editor, str]]:
    e = Editor(daemon)
    assert e.call("initialize", {"protocolVersion": 1})["result"]["protocolVersion"] == 1
    session = e.call("session/new", {"cwd": str(daemon.home), "mcpServers": []})["result"][
        "sessionId"
    ]
    try:
        yield e, session
    finally:
        if e.proc.stdin is not None:
            e.proc.stdin.close()
        e.proc.wait(30)


def _usable(rid: object) -> bool:
    if isinstance(rid, bool):
        return False
    if isinstance(rid, int):
        return -MAX_INT <= rid <= MAX_INT
    return isinstance(rid, str) and len(rid) <= 256


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=12,
)
METHODS = [
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/list",
    "session/resume",
    "session/fork",
    "session/close",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "session/set_config_option",
    "fs/read_text_file",
    "_ikigai/x",
    "$/cancel_request",
    "nope",
]
SESSION = "<session>"  # replaced by the module's live session id
_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "audio", "resource", "resource_link", "x"]) | _json},
    optional={
        "text": st.text(max_size=40) | _json,
        "mimeType": st.sampled_from(["image/png", "image/bmp", "text/plain"]) | _json,
        "data": st.sampled_from(["iVBORw0KGgo=", "%%%"]) | _json,
        "uri": st.sampled_from(["file:///x", ""]) | _json,
        "name": _json,
        "resource": st.fixed_dictionaries(
            {}, optional={"uri": _json, "text": _json, "blob": _json, "mimeType": _json}
        ),
    },
)
_params = st.fixed_dictionaries(
    {},
    optional={
        "sessionId": st.sampled_from([SESSION, SESSION, "nobody", "", "x" * 300]) | _json,
        "prompt": st.lists(_block, max_size=3) | _json,
        "cwd": st.sampled_from(["/tmp", "relative", "/no/such", ""]) | _json,
        "mcpServers": st.just([]) | _json,
        "protocolVersion": st.integers(-5, 1 << 40) | _json,
        "configId": st.sampled_from(["model", "thinking", "policy", "colour"]) | _json,
        "value": st.sampled_from(["high", "yolo", "default", "anthropic/claude-sonnet-4-5", "x/y"])
        | _json,
        "modeId": st.sampled_from(["yolo", "default", "nope"]) | _json,
        "cursor": st.sampled_from(["0", "50", "-1", "abc", "9" * 30]) | _json,
        "methodId": _json,
    },
)
_ids = st.integers(-MAX_INT - 5, MAX_INT + 5) | st.text(max_size=300) | st.floats() | _json
_request = st.fixed_dictionaries(
    {"method": st.sampled_from(METHODS) | st.text(max_size=20), "params": _params | _json},
    optional={"jsonrpc": st.just("2.0") | _json, "id": _ids},
)
_garbage = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"{",
            b"[1, 2]",
            b"5",
            b'"text"',
            b"\xff\xfe\xed\xa0\x80",
            b"[" * 200 + b"]" * 200,
            b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": NaN}}',
            b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "nope"}',
        ]
    ),
)


def _line(message: dict[str, Any], session: str) -> bytes:
    text = json.dumps(message, allow_nan=True)
    return text.replace(json.dumps(SESSION), json.dumps(session)).encode()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(lines=st.lists(st.one_of(_request, _garbage), min_size=1, max_size=4))
@example(
    lines=[
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "session/prompt",
            "params": {"sessionId": SESSION, "prompt": [{"type": "text", "text": "x" * (2 << 20)}]},
        }
    ]
)
@example(lines=[{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nobody"}}])
def test_every_line_is_answered_and_nothing_breaks(
    editor: tuple[Editor, str], lines: list[Any]
) -> None:
    e, session = editor
    expected_ids: list[Any] = []
    nulls = 0
    data = b""
    for item in lines:
        if isinstance(item, bytes):
            raw = item.replace(b"\n", b" ")
            if not raw.strip():
                continue  # a blank line: nothing to answer
            nulls += 1  # never a request (no bytes form one here): answered with id null
            data += raw + b"\n"
            continue
        message = dict(item)
        if "id" in message and _usable(message["id"]) and message["id"] is not None:
            message["id"] = f"h-{next(e.ids)}"  # unique, to find its answer
            expected_ids.append(message["id"])
        elif "id" in message:
            nulls += 1  # an id that cannot be sent back
        elif (
            message.get("jsonrpc") != "2.0"
            or not isinstance(message.get("method"), str)
            or not message["method"]
        ):
            nulls += 1
        # else: a notification, never answered
        data += _line(message, session) + b"\n"
    before = len(e.answers())
    nulls_before = sum(1 for a in e.answers() if a.get("id") is None)
    e.write(data)

    def all_in(answers: list[dict[str, Any]]) -> bool:
        ids = {a.get("id") for a in answers}
        got_nulls = sum(1 for a in answers if a.get("id") is None) - nulls_before
        return all(i in ids for i in expected_ids) and got_nulls >= nulls

    answers = e.wait(all_in, f"answers to {expected_ids} and {nulls} null-id errors")
    assert e.proc.poll() is None, "ikictl acp exited"
    new = answers[before:]
    for i in expected_ids:
        mine = [a for a in answers if a.get("id") == i]
        assert len(mine) == 1, mine
    for a in new:
        if "error" in a:
            assert isinstance(a["error"]["code"], int) and isinstance(a["error"]["message"], str)
            assert len(json.dumps(a)) < MAX_ERROR_LINE, a
    nulls_now = sum(1 for a in answers if a.get("id") is None) - nulls_before
    assert nulls_now == nulls


def test_after_the_storm_the_session_and_the_daemon_work(
    editor: tuple[Editor, str], daemon: Daemon
) -> None:
    """Runs after the hypothesis test (file order): a real prompt still
    completes and the daemon answers as before."""
    e, session = editor
    done = e.call(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}
    )
    assert done["result"] == {"stopReason": "end_turn"}
    status = json.loads(daemon.ikictl("status", "--json").out)
    assert status["agents"]["running"] >= 1
    assert json.loads(daemon.ikictl("show", session, "--json").out)["status"] == "running"
