"""Approvals from ikictl: ``approvals``/``approve``/``deny`` and --json for
scripts, the inline question on a real pseudo-terminal (y, n with a reason,
a), ``--policy``/``--yolo`` and how ls/show show the policy. The daemon is
real and runs the default policy (bash asks); the fake provider's demo
responder calls bash (``echo hello from a tool``) for a prompt naming a tool."""

from __future__ import annotations

import io
import json
import queue
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ikictl import render
from ikictl.approvals import call_text, short_ids

from .conftest import IKICTL, Daemon, start_daemon, stop_daemon, write_config
from .ptyexpect import PtyProcess

TOOL = "Please run a tool"
PROMPT_RX = r'allow bash "echo hello from a tool"\? \[y\]es/\[n\]o/\[a\]lways: '


# ---------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def daemon(fake_url: str) -> Iterator[Daemon]:
    """A daemon of this module's own, on the built-in default policy (bash asks)
    whatever the other modules' daemons are given."""
    home = Path(tempfile.mkdtemp(prefix="ikap"))
    write_config(home, fake_url, default_model="claude-sonnet-4-5/med", policy="default")
    d = start_daemon(home)
    try:
        yield d
    finally:
        stop_daemon(d)
        shutil.rmtree(home, ignore_errors=True)


class Lines:
    """A running ikictl whose stdout lines are read with a time bound."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.q: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.q.put(line)
        self.q.put(None)

    def until(self, pred, timeout: float = 20.0) -> str:
        while True:
            try:
                line = self.q.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"nothing matching within {timeout} s; saw:\n{''.join(self.seen)}") from None
            if line is None:
                raise AssertionError(f"ikictl ended first; saw:\n{''.join(self.seen)}")
            self.seen.append(line)
            if pred(line):
                return line


def event_of(line: str, kind: str) -> dict | None:
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    ev = msg.get("event") if isinstance(msg, dict) else None
    return ev if isinstance(ev, dict) and ev.get("type") == kind else None


@pytest.fixture
def streaming(daemon: Daemon) -> Iterator:
    procs: list[subprocess.Popen] = []

    def start(*args: str) -> Lines:
        proc = daemon.popen(*args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        procs.append(proc)
        return Lines(proc)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


@pytest.fixture
def pty(daemon: Daemon) -> Iterator:
    procs: list[PtyProcess] = []

    def start(*args: str) -> PtyProcess:
        p = PtyProcess([*IKICTL, *args], {**daemon.env, "TERM": "xterm"})
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.close()


def new(daemon: Daemon, name: str, *extra: str) -> dict:
    res = daemon.ikictl("new", "--name", name, "--cwd", str(daemon.home), *extra, "--json").json()
    assert isinstance(res, dict)
    return res["agent"]


# ---------------------------------------------------------------- scripts


def test_json_stream_prints_the_request_and_a_script_approves_by_prefix(daemon: Daemon, streaming) -> None:
    new(daemon, "scripted")
    s = streaming("send", "scripted", TOOL, "--json")
    req = event_of(s.until(lambda line: event_of(line, "approval_requested") is not None), "approval_requested")
    assert req is not None and req["tool"] == "bash"
    assert req["arguments"] == {"command": "echo hello from a tool"}
    approval = req["approval"]

    listed = daemon.ikictl("approvals", "scripted", "--json").json()
    assert isinstance(listed, list) and [a["approval"] for a in listed] == [approval]
    assert listed[0]["agent_name"] == "scripted" and listed[0]["tool"] == "bash"
    table = daemon.ikictl("approvals").lines
    assert table[0].split() == ["ID", "AGENT", "TOOL", "WHAT", "RULE", "AGE"]
    short = short_ids([approval])[approval]
    row = next(line for line in table if line.startswith(short))
    assert re.match(rf"^{re.escape(short)}\s+scripted\s+bash\s+echo hello from a tool\s+.+\s+\d+[smhd]$", row), row

    r = daemon.ikictl("approve", short)
    assert r.out == f'allowed {approval}: bash echo hello from a tool (agent scripted)\n'
    decided = event_of(s.until(lambda line: event_of(line, "approval_decided") is not None), "approval_decided")
    assert decided is not None and decided["approval"] == approval and decided["decision"] == "allow"
    ended = event_of(s.until(lambda line: event_of(line, "turn_ended") is not None), "turn_ended")
    assert ended is not None and ended["status"] == "completed"
    text = "".join((event_of(line, "text_delta") or {}).get("text", "") for line in s.seen)
    assert "The tool ran and printed: hello from a tool" in text
    assert s.proc.wait(20) == 0
    assert daemon.ikictl("approvals", "scripted", "--json").json() == []

    again = daemon.ikictl("approve", approval, code=2)
    assert approval in again.err or "decided" in again.err, again.err


def test_deny_with_reason_reaches_the_model_and_the_turn_completes(daemon: Daemon, streaming) -> None:
    new(daemon, "refused")
    s = streaming("send", "refused", "-v", TOOL)
    line = s.until(lambda line: "ikictl approve " in line)
    # not a terminal: the request is said with how to answer it, nothing is read
    m = re.search(r"\[approval (\S+): bash \"echo hello from a tool\" waits \(rule .+\); answer with "
                  r"`ikictl approve \1` or `ikictl deny \1`\]", line)
    assert m, line
    r = daemon.ikictl("deny", m.group(1), "--reason", "not on my machine", "--json").json()
    assert r == {"approval": m.group(1), "agent": r["agent"], "decision": "deny"}  # type: ignore[index]
    s.until(lambda line: re.search(rf"\[{m.group(1)} denied by .+: not on my machine\]", line) is not None)
    s.until(lambda line: line.startswith("The tool ran and printed: ") and "not on my machine" in line)
    s.until(lambda line: line.startswith("[completed"))
    assert s.proc.wait(20) == 0


def test_unknown_and_ambiguous_ids_are_clear_errors(daemon: Daemon) -> None:
    r = daemon.ikictl("approve", "no-such-approval", code=2)
    assert "no-such-approval" in r.err
    r = daemon.ikictl("deny", "no-such-approval", "--json", code=2)
    err = json.loads(r.err)["error"]
    assert "no-such-approval" in err["message"] and err["exit"] == 2
    assert "give an approval id" in daemon.ikictl("approve", " ", code=2).err
    assert "invalid choice" in daemon.ikictl("approve", "x", "--remember", "forever", code=2).err


# ---------------------------------------------------------------- policies


def test_policy_options(daemon: Daemon) -> None:
    r = daemon.ikictl("new", "--policy", "default", "--yolo", code=2)
    assert "not allowed with argument" in r.err
    r = daemon.ikictl("chat", "someone", "--yolo", code=2)
    assert "--policy/--yolo are for a new agent" in r.err
    wild = new(daemon, "wild", "--yolo")
    assert wild["yolo"] is True and wild["policy"][-1] == "yolo"
    # yolo: the bash call runs without a question
    r = daemon.ikictl("send", "wild", TOOL, timeout=30)
    assert "The tool ran and printed: hello from a tool" in r.out
    assert "approval" not in r.out
    ls = daemon.ikictl("ls").lines
    assert ls[0].split()[5] == "POLICY"
    assert re.search(r"\swild\s+idle\s+\S+\s+\S+\s+YOLO\s", next(line for line in ls if " wild " in line))
    show = daemon.ikictl("show", "wild").out
    assert re.search(r"^policy:\s+.*yolo.*YOLO: every tool call runs without asking", show, re.M), show
    child = daemon.ikictl("fork", "wild", "--name", "tamed", "--policy", "default", "--json").json()
    assert child["agent"]["policy"][-1] == "default"  # type: ignore[index]


def _agent(name: str, policy: list[str] | None, yolo: bool = False) -> dict:
    usage = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0}
    info = {"uuid": name * 8, "name": name, "provider": "p", "model": "m", "state": "idle", "usage": usage}
    if policy is not None:
        info |= {"policy": policy, "yolo": yolo}
    return info


def test_ls_shows_a_policy_column_only_when_one_differs_and_yolo_loudly() -> None:
    out = io.StringIO()
    render.agent_tree([_agent("a", ["default"]), _agent("b", None)], out)  # type: ignore[list-item]
    assert "POLICY" not in out.getvalue()
    out = io.StringIO()
    render.agent_tree([_agent("a", ["default"]), _agent("b", ["yolo"], True)], out, color=True)  # type: ignore[list-item]
    head, a, b = out.getvalue().splitlines()
    assert head.split()[5] == "POLICY" and a.split()[5] == "default"
    assert f"{render.BOLD}{render.RED}YOLO{render.RESET}" in b
    # the escape codes take no column: the next cell still lines up
    assert b.index("0/0") - len(render.BOLD + render.RED + render.RESET) == a.index("0/0")


@given(st.text())
def test_call_text_is_one_visible_line(command: str) -> None:
    for text in (call_text("bash", {"command": command}), call_text("file_read", {"path": command}),
                 call_text("x", {"k": command}, 60)):
        assert "\n" not in text and "\x1b" not in text and "\r" not in text
        assert not any(0x80 <= ord(c) < 0xA0 or ord(c) < 0x20 for c in text)


def test_short_ids_are_unique_prefixes() -> None:
    ids = ["abcdef0123", "abcdef0199", "ffff0000aa"]
    short = short_ids(ids)
    assert short == {"abcdef0123": "abcdef012", "abcdef0199": "abcdef019", "ffff0000aa": "ffff0000"}


# ---------------------------------------------------------------- the inline question


def test_inline_yes_then_no_with_reason(daemon: Daemon, pty) -> None:
    new(daemon, "inline")
    p = pty("send", "inline", TOOL)
    p.expect(r"\[approval \S+: rule .+, policy .+\]")
    p.expect(PROMPT_RX)
    p.sendline("y")
    p.expect(r"\[\S+ allowed by ")
    p.expect(r"The tool ran and printed: hello from a tool")
    p.expect(r"\[completed")
    assert p.wait() == 0

    p = pty("send", "inline", TOOL)
    p.expect(PROMPT_RX)
    p.sendline("maybe")  # not an answer: asked again
    p.expect(PROMPT_RX)
    p.sendline("n")
    p.expect(r"reason \(optional, the model reads it\): ")
    p.sendline("rm\x1b[2Jnot now")  # a control character typed is shown, not obeyed
    p.expect(r"\[\S+ denied by .+: rm\^\[\[2Jnot now\]")
    p.expect(r"The tool ran and printed: .*not now")
    p.expect(r"\[completed")
    assert p.wait() == 0


def test_inline_always_stops_later_questions_and_chat_asks_too(daemon: Daemon, pty) -> None:
    new(daemon, "trusting")
    p = pty("chat", "trusting")
    p.expect(r"trusting> ")
    p.sendline(TOOL)
    p.expect(PROMPT_RX)
    p.sendline("a")
    p.expect(r"\[\S+ allowed by .+; remembered for this agent\]")
    p.expect(r"The tool ran and printed: hello from a tool")
    p.expect(r"trusting> ")
    p.sendline("Run the tool once more")
    p.expect(r"The tool ran and printed: hello from a tool")
    p.expect(r"trusting> ")
    assert "[y]es/[n]o/[a]lways" not in p.text[p.text.index("remembered for this agent"):]
    p.sendline("/exit")
    assert p.wait() == 0
