"""What ikictl promises a user, through the real ``ikictl`` process against a
real daemon and the fake provider (issue 14, item 11): hostile stdin, a prompt
over the line limit, every error in --json, the whole inbox, a replay of every
turn, a change of the thinking level alone."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import IKICTL, Daemon, clean_env, start_daemon, stop_daemon, wait_for, write_config
from .ptyexpect import PtyProcess

LIMIT = 4096  # the daemon's max_line_bytes here: small, so a "large" prompt is cheap


@pytest.fixture(scope="module")
def small(fake_url: str) -> Iterator[Daemon]:
    home = Path(tempfile.mkdtemp(prefix="ikp"))
    write_config(home, fake_url, default_model="claude-sonnet-4-5/med", max_line_bytes=LIMIT)
    d = start_daemon(home)
    try:
        yield d
    finally:
        stop_daemon(d)
        shutil.rmtree(home, ignore_errors=True)


def run(d: Daemon, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> tuple[int, str, str]:
    r = subprocess.run([*IKICTL, *args], input=stdin, capture_output=True, env=env or d.env, timeout=60)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def json_error(err: str) -> dict:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return json.loads(lines[0])["error"]


# ---------------------------------------------------------------- 1. hostile input


def test_binary_stdin_is_refused_with_the_byte_and_offset(small: Daemon) -> None:
    small.ikictl("new", "--name", "bin")
    code, out, err = run(small, "send", "bin", "-", stdin=Path("/bin/ls").read_bytes())
    assert code == 2 and "Traceback" not in err, err
    assert re.fullmatch(r"ikictl: the prompt on stdin is not valid UTF-8 \(byte 0x[0-9a-f]{2} at offset \d+\); .*\n", err), err
    code, _, err = run(small, "send", "bin", "-", stdin=b"caf\xc3\xa9 ok then \xff\xfe")
    assert code == 2 and "byte 0xff at offset 14" in err, err
    code, _, err = run(small, "send", "bin", "-", stdin=b"text\x00more")
    assert code == 2 and "contains a NUL byte (at offset 4)" in err, err
    code, _, err = run(small, "send", "bin", os.fsdecode(b"x\xffy"))
    assert code == 2 and "the prompt is not valid UTF-8 (byte 0xff at offset 1)" in err, err
    # other control characters are text: accepted and answered
    code, out, err = run(small, "send", "bin", "-", "--no-thinking", stdin=b"tab\there \x1b[1mbold\x1b[0m\n")
    assert code == 0 and "You said" in out, err


def _one_answer_server(path: str, answer: bytes, seen: list[bytes]) -> threading.Thread:
    """A Unix socket that records each request line and answers ``answer``
    (its id set to the request's): not a daemon, something shaped like one."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        buf = b""
        with conn, srv:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    seen.append(line)
                    rid = json.loads(line)["id"]
                    conn.sendall(answer.replace(b'"id":0', b'"id":%d' % rid) + b"\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


def test_an_unexpected_error_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    for debug in ("", "1"):
        sock = str(tmp_path / f"s{debug}")
        t = _one_answer_server(sock, b'{"jsonrpc":"2.0","id":0,"result":42}', [])
        r = subprocess.run(
            [*IKICTL, "--no-autostart", "--socket", sock, "ls"],
            capture_output=True, text=True, env={**env, "IKIGAI_DEBUG": debug}, timeout=30,
        )
        t.join(5)
        assert r.returncode == 1, r
        assert "ikictl: internal error: TypeError" in r.stderr
        assert ("Traceback" in r.stderr) == bool(debug), r.stderr


# ---------------------------------------------------------------- 2. the line limit


def test_a_prompt_over_the_line_limit_says_so_exit_2(small: Daemon) -> None:
    small.ikictl("new", "--name", "big")
    code, _, err = run(small, "send", "big", "-", stdin=b"x" * 10_000)
    assert code == 2, err
    assert re.fullmatch(
        r"ikictl: the prompt is too large: 10,0\d\d bytes, limit 4,096 \(max_line_bytes in config\.json\)\n", err
    ), err
    # the agent is untouched and the next prompt works
    assert small.ikictl("send", "big", "--no-thinking", "fits").out.startswith("You said: fits")
    code, _, err = run(small, "send", "big", "-", "--json", stdin=b"x" * 10_000)
    e = json_error(err)
    assert code == 2 and e["exit"] == 2 and "limit 4,096" in e["message"]


def test_a_known_limit_is_checked_before_sending(tmp_path: Path) -> None:
    """A daemon whose status reports max_line_bytes never receives the line."""
    sock = str(tmp_path / "s")
    seen: list[bytes] = []
    status = b'{"jsonrpc":"2.0","id":0,"result":{"version":"x","max_line_bytes":2000}}'
    t = _one_answer_server(sock, status, seen)
    r = subprocess.run(
        [*IKICTL, "--no-autostart", "--socket", sock, "mail", "send", "a", "b", "y" * 3000],
        capture_output=True, text=True, env=clean_env(tmp_path), timeout=30,
    )
    t.join(5)
    assert r.returncode == 2, r
    assert re.fullmatch(r"ikictl: the mail is too large: 3,0\d\d bytes, limit 2,000 \(max_line_bytes in config\.json\)\n", r.stderr)
    assert [json.loads(line)["method"] for line in seen] == ["daemon.status"]


# ---------------------------------------------------------------- 6. --json errors


def test_json_mode_reports_every_error_as_one_json_object(small: Daemon) -> None:
    code, out, err = run(small, "send", "--json")  # argparse's own error
    e = json_error(err)
    assert code == 2 and e["exit"] == 2 and "the following arguments are required: AGENT, PROMPT" in e["message"]
    assert out == ""
    code, _, err = run(small, "--json", "frobnicate")
    assert code == 2 and json_error(err)["exit"] == 2
    code, _, err = run(small, "send", "nobody-here", "-", "--json", stdin=b"\xff")  # UsageError
    assert code == 2 and "not valid UTF-8" in json_error(err)["message"]
    # a failed turn: xAI has no key here, the turn ends in error
    code, out, err = run(small, "new", "--model", "grok-3-mini", "--json", "hi")
    e = json_error(err)
    assert code == 1 and e["exit"] == 1 and e["message"].startswith("the turn ended in error"), err
    assert e["data"]["status"] == "error"
    assert all(json.loads(line) for line in out.splitlines())  # stdout stays NDJSON


# ---------------------------------------------------------------- 3. the inbox


def test_mail_inbox_shows_read_mail_and_unread_filters(small: Daemon) -> None:
    small.ikictl("new", "--name", "sender")
    small.ikictl("new", "--name", "reader")
    mid = small.ikictl("mail", "send", "sender", "reader", "a note", "--json").json()["id"]  # type: ignore[index]
    # delivered as the reader's next prompt, which marks it read
    wait_for(lambda: small.ikictl("mail", "inbox", "reader", "--unread", "--json").json() == [], 20, "mail not taken")
    everything = small.ikictl("mail", "inbox", "reader", "--json").json()
    assert [m["id"] for m in everything] == [mid] and everything[0]["read_at"]  # type: ignore[index]
    assert small.ikictl("mail", "inbox", "reader").lines == [f"#{mid} from {everything[0]['from']} (read): a note"]  # type: ignore[index]
    assert small.ikictl("mail", "inbox", "reader", "--unread").lines == ["no unread mail"]


# ---------------------------------------------------------------- 4. watch --from 1


def test_watch_from_1_replays_every_turn_with_its_cost(small: Daemon) -> None:
    agent = small.ikictl("new", "--name", "many", "--json").json()["agent"]["uuid"]  # type: ignore[index]
    prompts = [f"question {i}" for i in range(14)]  # ~20 events a turn: more than the 256 kept
    for q in prompts:
        small.ikictl("send", agent, "--no-wait", q)
    for attempt in ("live", "replay"):  # first while they run, then once the log lost the oldest
        r = small.ikictl("watch", agent, "--from", "1", "--until-idle", "--no-thinking", timeout=120)
        heads = [line for line in r.lines if line.startswith("── turn ")]
        assert [h.rsplit(" · ", 1)[1] for h in heads] == prompts, (attempt, r.out)
        ends = [line for line in r.lines if re.match(r"\[(completed|.*from history) ·", line)]
        assert len(ends) == len(prompts), r.out
        for line in ends:
            assert ("from history" in line) == ("cost unknown" in line), line
        assert re.search(r"· \$[\d.]+\]$", ends[-1]), ends[-1]
    assert "no longer kept: older turns from history" in r.out
    assert any("from history" in line for line in ends)


# ---------------------------------------------------------------- 5. /THINKING alone


def test_model_with_only_a_thinking_level_keeps_the_model(small: Daemon) -> None:
    small.ikictl("new", "--name", "levels", "--model", "claude-sonnet-4-5/low")
    r = small.ikictl("model", "levels", "/high")
    assert r.out.startswith("levels: Anthropic claude-sonnet-4-5 / Thinking: enabled (64,000 token budget - high)"), r.out
    shown = small.ikictl("show", "levels", "--json").json()
    assert (shown["model"], shown["thinking_level"]) == ("claude-sonnet-4-5", "high")  # type: ignore[index]
    code, _, err = run(small, "model", "levels", "/ultra")
    assert code == 2 and "'ultra' is not a thinking level" in err, err


def test_repl_model_slash_level(small: Daemon) -> None:
    small.ikictl("new", "--name", "chatlv", "--model", "gpt-4o/none")
    small.ikictl("model", "chatlv", "o3-mini/low")
    p = PtyProcess([*IKICTL, "chat", "chatlv"], {**small.env, "TERM": "xterm"})
    try:
        p.expect(r"chatlv> ")
        p.sendline("/help")
        p.expect(r"/model /high\s+changes only the thinking level")
        p.expect(r"chatlv> ")
        p.sendline("/model /high")
        p.expect(r"chatlv: OpenAI o3-mini / Thinking: .*high")
        p.expect(r"chatlv> ")
        p.sendline("/model")
        p.expect(r"chatlv: openai/o3-mini/high")
        p.ctrl_d()
        assert p.wait() == 0
    finally:
        p.close()
