"""``ikictl mcp ls|tools|restart|prompts|watch``, ``--mcp`` on new/fork/chat,
the agent's servers in ``show`` and the progress line of a long MCP call.

The real ``ikictl`` runs as a process; what answers on its socket is either a
small canned JSON-RPC server of this file (answers shaped as docs/protocol.md
gives them, and hostile ones no daemon would send) or the real daemon running
the real ``mcp-server-time`` (the end of the file)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ikictl import mcp, render
from ikictl.cli import parse
from ikictl.commands import mcp_arg
from ikictl.stream import ERASE_LINE, EventPrinter

from .conftest import (
    IKICTL,
    ROOT,
    Daemon,
    clean_env,
    start_daemon,
    stop_daemon,
    wait_for,
    write_config,
)

HOSTILE = "x\x1b]0;pwned\x07 \x1b[2J\x9b31m\x7f\rFAKE"


def controls(text: str) -> set[str]:
    """The control characters of ``text`` a terminal would act on."""
    return {ch for ch in text if unicodedata.category(ch) == "Cc" and ch not in "\n\t"}


SERVERS = [
    {
        "name": "time",
        "transport": "stdio",
        "target": "python -m mcp_server_time",
        "state": "ready",
        "pid": 4242,
        "tools": 2,
        "last_error": None,
        "restarts": 0,
        "since": time.time() - 125,
    },
    {
        "name": "docs",
        "transport": "http",
        "target": "http://127.0.0.1:9000/mcp",
        "state": "failed",
        "pid": None,
        "tools": 0,
        "last_error": "connection refused by 127.0.0.1:9000",
        "restarts": 3,
        "since": time.time() - 7200,
    },
]
TOOLS = [
    {
        "server": "time",
        "name": "get_current_time",
        "exposed": "time__get_current_time",
        "description": "Get current time in a specific timezone\nSecond line, not shown",
        "input_schema": {"type": "object"},
        "rejected": None,
    },
    {
        "server": "time",
        "name": "deep",
        "exposed": "time__deep",
        "description": "",
        "input_schema": {},
        "rejected": "input schema nested deeper than 32 levels",
    },
]
PROMPTS = [
    {
        "name": "review",
        "description": "Review code\nmore",
        "arguments": [
            {"name": "code", "description": "", "required": True},
            {"name": "language", "description": "", "required": False},
        ],
    }
]
UNKNOWN_SERVER = {"code": -32602, "message": "unknown MCP server 'nope'; configured: time, docs"}


class Canned:
    """A JSON-RPC server on a Unix socket answering each method from
    ``answers`` (a result, or ``{"error": ...}``) and keeping every request;
    the first ``daemon.subscribe`` is followed by the ``events`` as notifications."""

    def __init__(self, path: Path, answers: dict[str, Any], events: list[dict] | None = None):
        self.path = path
        self.answers = answers
        self.events = events or []
        self.requests: list[dict[str, Any]] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            f = conn.makefile("rb")
            while line := f.readline():
                req = json.loads(line)
                self.requests.append(req)
                answer = self.answers.get(req["method"], {"error": {"code": -32601, "message": "no"}})
                if isinstance(answer, dict) and "error" in answer:
                    msg = {"jsonrpc": "2.0", "id": req["id"], "error": answer["error"]}
                else:
                    msg = {"jsonrpc": "2.0", "id": req["id"], "result": answer}
                conn.sendall(json.dumps(msg).encode() + b"\n")
                if req["method"] == "daemon.subscribe" and len(self.sent("daemon.subscribe")) == 1:
                    for ev in self.events:
                        conn.sendall(json.dumps({"jsonrpc": "2.0", "method": "daemon.event", "params": ev}).encode() + b"\n")

    def sent(self, method: str) -> list[dict[str, Any]]:
        return [r.get("params", {}) for r in self.requests if r["method"] == method]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def tmp() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="ikmcp"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def canned(tmp: Path, answers: dict[str, Any], events: list[dict] | None = None) -> Iterator[Canned]:
    server = Canned(tmp / "s.sock", answers, events)
    try:
        yield server
    finally:
        server.close()


def ikictl(tmp: Path, *args: str, code: int = 0, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [*IKICTL, "--no-autostart", "--socket", str(tmp / "s.sock"), *args],
        capture_output=True, text=True, env=clean_env(tmp), timeout=30, stdin=subprocess.DEVNULL,
    )
    assert r.returncode == code, f"ikictl {args} -> {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


# ---------------------------------------------------------------- --mcp


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], None),
        (["--mcp", "git,docs"], ["git", "docs"]),
        (["--mcp", " git , docs,,git "], ["git", "docs"]),
        (["--mcp", ""], []),
        (["--mcp", " , "], []),
        (["--no-mcp"], []),
    ],
)
@pytest.mark.parametrize("command", [["new"], ["fork", "A"], ["chat"]])
def test_mcp_option_is_the_list_sent(command: list[str], argv: list[str], expected: list[str] | None) -> None:
    assert mcp_arg(parse([*command, *argv])) == expected


def test_mcp_and_no_mcp_together_are_refused(tmp: Path) -> None:
    r = ikictl(tmp, "new", "--mcp", "git", "--no-mcp", code=2)
    assert "not allowed with argument" in r.stderr


def test_new_and_fork_send_the_servers_and_show_lists_them(tmp: Path) -> None:
    agent = {"uuid": "0190aaaa-0000-7000-8000-000000000001", "name": "a", "mcp": ["time", "docs"]}
    answers = {
        "agent.create": {"agent": agent, "model": {"description": "fake"}},
        "agent.fork": {"agent": agent, "model": {"description": "fake"}},
    }
    with canned(tmp, answers) as srv:
        ikictl(tmp, "new", "--mcp", "time,docs")
        ikictl(tmp, "new", "--no-mcp")
        ikictl(tmp, "new")
        ikictl(tmp, "fork", "a", "--mcp", "")
        ikictl(tmp, "fork", "a")
        created, forked = srv.sent("agent.create"), srv.sent("agent.fork")
    # absent: the daemon's default (config's, or the parent's); [] is none, sent as such
    assert [c.get("mcp", "absent") for c in created] == [["time", "docs"], [], "absent"]
    assert [f.get("mcp", "absent") for f in forked] == [[], "absent"]


def test_chat_on_an_existing_agent_refuses_mcp(tmp: Path) -> None:
    with canned(tmp, {}) as srv:
        r = ikictl(tmp, "chat", "a", "--mcp", "time", code=2)
        assert srv.requests == []
    assert "--mcp/--no-mcp are for a new agent" in r.stderr


def test_show_prints_the_agents_servers() -> None:
    base = {
        "uuid": "u", "short": "u", "status": "running", "provider": "p", "model": "m",
        "usage": {"turns": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0},
    }
    lines = {}
    for key, value in (("two", ["git", "docs"]), ("none", []), ("hostile", [HOSTILE])):
        out = io.StringIO()
        render.show_agent({**base, "mcp": value}, out)  # type: ignore[typeddict-item]
        lines[key] = [ln for ln in out.getvalue().splitlines() if ln.startswith("mcp:")]
    assert lines["two"] == ["mcp:          git, docs"]
    assert lines["none"] == ["mcp:          none"]
    assert len(lines["hostile"]) == 1 and not controls(lines["hostile"][0])
    out = io.StringIO()
    render.show_agent(base, out)  # type: ignore[arg-type]
    assert "mcp:" not in out.getvalue()  # a daemon that does not say: nothing claimed


# ---------------------------------------------------------------- mcp ls, tools, restart, prompts


def test_mcp_ls_is_a_table_of_the_servers(tmp: Path) -> None:
    now = time.time()
    servers = [{**SERVERS[0], "since": now - 125}, {**SERVERS[1], "since": now - 7200}]
    with canned(tmp, {"mcp.list": {"servers": servers}}):
        out = ikictl(tmp, "mcp", "ls").stdout.splitlines()
        long = ikictl(tmp, "mcp", "ls", "-l").stdout.splitlines()
        js = json.loads(ikictl(tmp, "mcp", "ls", "--json").stdout)
    assert out[0].split() == ["NAME", "STATE", "PID", "TOOLS", "RESTARTS", "SINCE", "ERROR"]
    assert out[1].split() == ["time", "ready", "4242", "2", "0", "2m", "-"]
    assert out[2].split()[:6] == ["docs", "failed", "-", "-", "3", "2h"]
    assert out[2].endswith("connection refused by 127.0.0.1:9000")
    assert "python -m mcp_server_time" in long[1] and "http://127.0.0.1:9000/mcp" in long[2]
    assert "TARGET" in long[0] and "TARGET" not in out[0]
    assert js == {"servers": servers}


def test_mcp_ls_without_servers_says_how_to_add_one(tmp: Path) -> None:
    with canned(tmp, {"mcp.list": {"servers": []}}):
        assert "mcp_servers" in ikictl(tmp, "mcp", "ls").stdout


def test_mcp_tools_lists_exposed_names_and_the_rejected_with_why(tmp: Path) -> None:
    with canned(tmp, {"mcp.tools": {"server": "time", "tools": TOOLS}}) as srv:
        out = ikictl(tmp, "mcp", "tools", "time").stdout
        js = json.loads(ikictl(tmp, "mcp", "tools", "time", "--json").stdout)
        assert srv.sent("mcp.tools") == [{"server": "time"}, {"server": "time"}]
    lines = out.splitlines()
    assert lines[1].split(None, 1) == ["time__get_current_time", "Get current time in a specific timezone"]
    assert "Second line" not in out
    assert "not offered to the models (1):" in out
    assert any(ln.split(None, 1) == ["deep", "input schema nested deeper than 32 levels"] for ln in lines)
    assert js["tools"] == TOOLS


def test_mcp_errors_are_the_daemons_message_and_exit_2(tmp: Path) -> None:
    answers = {m: {"error": UNKNOWN_SERVER} for m in ("mcp.tools", "mcp.restart", "mcp.prompts")}
    with canned(tmp, answers):
        for action in ("tools", "restart", "prompts"):
            r = ikictl(tmp, "mcp", action, "nope", code=2)
            assert r.stderr.strip() == f"ikictl: {UNKNOWN_SERVER['message']}"
        r = ikictl(tmp, "mcp", "tools", "nope", "--json", code=2)
    assert json.loads(r.stderr)["error"]["message"] == UNKNOWN_SERVER["message"]


def test_mcp_needs_an_action_and_a_server(tmp: Path) -> None:
    with canned(tmp, {}) as srv:
        assert "ACTION" in ikictl(tmp, "mcp", code=2).stderr
        assert "SERVER" in ikictl(tmp, "mcp", "tools", code=2).stderr
        assert srv.requests == []


def test_mcp_restart_says_the_new_state(tmp: Path) -> None:
    state = {**SERVERS[0], "pid": 4343, "restarts": 1}
    with canned(tmp, {"mcp.restart": state}) as srv:
        out = ikictl(tmp, "mcp", "restart", "time").stdout
        assert srv.sent("mcp.restart") == [{"server": "time"}]
    assert out == "restarted time: ready (pid 4343, 2 tools, 1 restart)\n"


def test_mcp_prompts_shows_arguments_optional_in_brackets(tmp: Path) -> None:
    with canned(tmp, {"mcp.prompts": {"server": "time", "prompts": PROMPTS}}):
        out = ikictl(tmp, "mcp", "prompts", "time").stdout.splitlines()
    assert out[0].split() == ["PROMPT", "ARGUMENTS", "DESCRIPTION"]
    assert out[1].split() == ["review", "code", "[language]", "Review", "code"]


class Lines:
    """What a process prints, line by line, read by a thread of its own so
    that a test waits for a line with a bound, never forever."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        out = proc.stdout
        self.got: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.got.put(line) for line in out], daemon=True).start()

    def take(self, n: int, timeout: float = 15) -> list[str]:
        """The next ``n`` lines, or a failure after ``timeout`` s."""
        lines: list[str] = []
        with contextlib.suppress(queue.Empty):
            deadline = time.monotonic() + timeout
            while len(lines) < n:
                lines.append(self.got.get(timeout=max(0.01, deadline - time.monotonic())))
        assert len(lines) == n, f"{len(lines)} of {n} lines within {timeout} s: {lines}"
        return lines


def test_mcp_watch_prints_the_states_then_each_change(tmp: Path) -> None:
    now = time.time()
    events = [
        {"seq": 1, "event": {**SERVERS[1], "type": "mcp_server", "state": "restarting", "since": now}},
        {"seq": 2, "event": {"type": "something_else", "name": "time"}},
        {"seq": 3, "event": {**SERVERS[0], "type": "mcp_server", "state": "failed", "pid": None,
                             "last_error": "the process exited (code 1)", "since": now}},
        {"seq": 4, "event": {"type": "lagged", "missed_from": 4}},
    ]
    with canned(tmp, {"mcp.list": {"servers": SERVERS}, "daemon.subscribe": {"subscribed": True}}, events) as srv:
        proc = subprocess.Popen(
            [*IKICTL, "--no-autostart", "--socket", str(tmp / "s.sock"), "mcp", "watch", "time"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(tmp),
        )
        try:
            lines = Lines(proc).take(4)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(10) == 130
        finally:
            if proc.poll() is None:
                proc.kill()
        assert len(srv.sent("daemon.subscribe")) == 2  # after it lagged: subscribed again
    # the current state of `time`, then its change; `docs` filtered out, the other event
    # ignored; after the daemon said it lagged, the states again
    assert lines[0].split()[1:] == ["time", "ready", "(pid", "4242,", "2", "tools)"]
    assert lines[1].split(None, 1)[1] == "time failed: the process exited (code 1)\n"
    assert lines[2].startswith("(fell behind")
    assert lines[3] == lines[0]


# ---------------------------------------------------------------- hostile answers


answer_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
field = st.sampled_from(["name", "state", "pid", "tools", "restarts", "since", "last_error",
                         "transport", "target", "exposed", "description", "rejected", "arguments"])
entry = st.dictionaries(field, answer_value | st.just(HOSTILE), max_size=8)


@settings(max_examples=150, deadline=None)
@given(entries=st.lists(entry | answer_value, max_size=4), long=st.booleans())
def test_any_answer_is_drawn_without_a_crash_or_a_control_character(entries: list[Any], long: bool) -> None:
    out = io.StringIO()
    rows = mcp._rows({"servers": entries, "tools": entries, "prompts": entries}, "servers")
    mcp.servers_table(rows, out, long=long)
    mcp.tools_table(HOSTILE, rows, out)
    mcp.prompts_table(HOSTILE, rows, out)
    for r in rows:
        out.write(mcp.describe(r) + "\n" + mcp.state_event_line(r) + "\n")
    assert not controls(out.getvalue())


# ---------------------------------------------------------------- progress


def progress(n: float, total: float | None, message: str | None = "reading commits") -> dict[str, Any]:
    ev = {"type": "tool_progress", "id": "c1", "name": "git__log", "progress": n, "total": total, "message": message}
    return {"agent": "a", "turn": "t", "seq": 1, "event": ev}


def test_progress_is_one_line_redrawn_in_place_on_a_terminal() -> None:
    out = io.StringIO()
    pr = EventPrinter(out, live=True)
    pr.event({"event": {"type": "tool_started", "name": "git__log", "arguments": {}}})
    pr.event(progress(3, 10))
    pr.event(progress(7, 10, None))
    pr.event({"event": {"type": "tool_finished", "name": "git__log", "content": "ok"}})
    text = out.getvalue()
    assert "\n" not in text.split("[tool git__log] {}\n", 1)[1].split("[tool git__log ok]")[0]
    assert f"{ERASE_LINE}  ⋯ git__log 3/10 (30%) reading commits" in text
    assert f"{ERASE_LINE}  ⋯ git__log 7/10 (70%){ERASE_LINE}[tool git__log ok] ok\n" in text


def test_progress_is_not_printed_when_output_is_not_a_terminal() -> None:
    out = io.StringIO()
    pr = EventPrinter(out)  # a StringIO is no terminal
    pr.event(progress(3, 10))
    assert out.getvalue() == ""
    js = io.StringIO()
    EventPrinter(js, json_mode=True).event(progress(3, 10))
    assert json.loads(js.getvalue())["event"]["progress"] == 3  # --json: every event, as it came


@settings(max_examples=200, deadline=None)
@given(
    n=answer_value | st.floats(allow_nan=True, allow_infinity=True),
    total=answer_value | st.floats(allow_nan=True, allow_infinity=True),
    message=answer_value | st.just(HOSTILE),
    name=st.text() | st.just(HOSTILE),
    width=st.integers(1, 300),
)
def test_any_progress_fits_its_line_and_drives_no_terminal(n: Any, total: Any, message: Any, name: str, width: int) -> None:
    line = render.progress_line({"name": name, "progress": n, "total": total, "message": message}, width)
    assert len(line) <= max(width, 10)
    assert not controls(line) and "\n" not in line


# ---------------------------------------------------------------- start-up


def test_the_mcp_commands_import_nothing_heavy(tmp: Path) -> None:
    with canned(tmp, {"mcp.list": {"servers": SERVERS}}):
        r = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ikictl", "--no-autostart", "--socket",
             str(tmp / "s.sock"), "mcp", "ls"],
            capture_output=True, text=True, env=clean_env(tmp), cwd=ROOT, timeout=30, check=True,
        )
    loaded = {ln.split("|")[-1].strip().split(".")[0] for ln in r.stderr.splitlines() if "|" in ln}
    assert "ikictl" in loaded and "time" in r.stdout
    assert not loaded & {"mcp", "trio", "httpx", "msgspec", "anyio", "typing", "agents"}


# ---------------------------------------------------------------- the real daemon, a real server


@pytest.fixture(scope="module")
def real(fake_url: str) -> Iterator[Daemon]:
    """The real daemon with the real ``mcp-server-time`` (PyPI; stdio), lazy, a
    default; and a server that dies at once, saying something hostile."""
    home = Path(tempfile.mkdtemp(prefix="ikmcpd"))
    time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                   "default": True}
    broken = {"command": sys.executable, "connect_timeout": 5,
              "args": ["-c", f"import sys; print({HOSTILE!r}, file=sys.stderr); sys.exit(3)"]}
    write_config(home, fake_url, default_model="claude-sonnet-4-5/med",
                 mcp_servers={"time": time_server, "broken": broken})
    d = start_daemon(home)
    try:
        yield d
    finally:
        stop_daemon(d)
        shutil.rmtree(home, ignore_errors=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def servers(d: Daemon) -> dict[str, dict[str, Any]]:
    res = d.ikictl("mcp", "ls", "--json").json()
    assert isinstance(res, dict)
    return {s["name"]: s for s in res["servers"]}


def test_real_server_listed_started_by_tools_and_restarted(real: Daemon) -> None:
    before = servers(real)["time"]
    assert before["transport"] == "stdio" and "mcp_server_time" in before["target"]
    out = real.ikictl("mcp", "tools", "time").out  # starts it, if nothing did yet
    assert {ln.split()[0] for ln in out.splitlines()[1:]} == {"time__get_current_time", "time__convert_time"}
    ready = servers(real)["time"]
    assert ready["state"] == "ready" and ready["tools"] == 2 and alive(ready["pid"])
    row = next(ln.split() for ln in real.ikictl("mcp", "ls").lines if ln.startswith("time "))
    assert row[:4] == ["time", "ready", str(ready["pid"]), "2"]

    out = real.ikictl("mcp", "restart", "time").out
    after = servers(real)["time"]
    assert out.startswith(f"restarted time: {after['state']}")
    assert after["restarts"] == ready["restarts"] + 1 and after["pid"] != ready["pid"]
    wait_for(lambda: not alive(ready["pid"]), 10, "the old server process did not end")


def test_real_agents_get_the_servers_asked_for(real: Daemon) -> None:
    def shown(name: str) -> tuple[list[str], str]:
        js = real.ikictl("show", name, "--json").json()
        line = next(ln for ln in real.ikictl("show", name).lines if ln.startswith("mcp:"))
        assert isinstance(js, dict)
        return js["mcp"], line.split(None, 1)[1]

    real.ikictl("new", "--name", "withdefault")
    real.ikictl("new", "--name", "withnone", "--no-mcp")
    real.ikictl("new", "--name", "withtime", "--mcp", "time")
    real.ikictl("fork", "withnone", "--name", "childofnone")
    real.ikictl("fork", "withnone", "--name", "childwithtime", "--mcp", "time")
    assert shown("withdefault") == (["time"], "time")
    assert shown("withnone") == ([], "none")
    assert shown("withtime") == (["time"], "time")
    assert shown("childofnone") == ([], "none")  # a fork inherits its parent's
    assert shown("childwithtime") == (["time"], "time")
    r = real.ikictl("new", "--name", "withnope", "--mcp", "time,nope", code=2)
    assert "nope" in r.err and "time" in r.err


def test_real_unknown_server_is_refused_naming_the_known_ones(real: Daemon) -> None:
    for action in ("tools", "restart", "prompts"):
        r = real.ikictl("mcp", action, "nope", code=2)
        assert "'nope'" in r.err and "configured: broken, time" in r.err


def test_real_server_that_cannot_start_is_an_error_shown_harmless(real: Daemon) -> None:
    r = real.ikictl("mcp", "tools", "broken", code=1)
    assert "broken" in r.err and "code 3" in r.err and "FAKE" in r.err
    assert "(error -" not in r.err  # the daemon's message says it all
    assert not controls(r.err.replace("\n", ""))
    state = servers(real)["broken"]
    assert state["state"] in ("failed", "restarting") and "code 3" in state["last_error"]
    row = next(ln for ln in real.ikictl("mcp", "ls").lines if ln.startswith("broken"))
    assert row.split()[1] == state["state"] and not controls(row)


def test_real_watch_shows_a_restart_as_it_happens(real: Daemon) -> None:
    real.ikictl("mcp", "tools", "time")  # ready before the watch starts
    proc = real.popen("mcp", "watch", "time", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines = Lines(proc)
        assert lines.take(1)[0].split()[1:3] == ["time", "ready"]  # the state now
        real.ikictl("mcp", "restart", "time")
        pid = servers(real)["time"]["pid"]
        changes = []
        while f"ready (pid {pid}," not in "".join(changes):
            changes += lines.take(1)
        assert any(" time restarting" in c or " time starting" in c for c in changes), changes
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)


def test_real_bash_completes_actions_and_server_names(real: Daemon) -> None:
    from .test_completion import _complete

    env = {**real.env, "PATH": f"{Path(IKICTL[0]).parent}{os.pathsep}{os.environ['PATH']}"}
    assert set(_complete(["ikictl", "mcp", ""], env)) >= {"ls", "tools", "restart", "prompts", "watch"}
    assert _complete(["ikictl", "mcp", "tools", "ti"], env) == ["time"]
    assert _complete(["ikictl", "new", "--mcp", "b"], env) == ["broken"]
    assert _complete(["ikictl", "new", "--mcp", "time,b"], env) == ["time,broken"]
