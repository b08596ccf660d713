"""ikictl in a pipeline: a streamed turn's stdout is the answer alone when it
is not a terminal (the rest on stderr), as ``llm`` does; ``--verbose`` keeps
it all on stdout; a terminal still sees thinking, tool lines and the footer."""

from __future__ import annotations

import json
import re
import subprocess

from .conftest import IKICTL, Daemon
from .ptyexpect import PtyProcess

FOOTER = re.compile(
    r"^\[completed · tokens \d[\d,]* in / \d[\d,]* out( \([^)]*\))? · \$[\d.]+\]$", re.M
)
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _turn_text(d: Daemon, agent: str) -> str:
    """The last turn's answer as stored: the text blocks of its assistant rows
    (``history --json``: agent.history with blocks), in order."""
    rows = d.ikictl("history", agent, "--json").json()["messages"]  # type: ignore[index]
    last_user = max(i for i, r in enumerate(rows) if r["kind"] == "user")
    texts = []
    for r in rows[last_user + 1 :]:
        if r["kind"] == "assistant":
            texts.append("".join(b["text"] for b in r.get("blocks", []) if b["type"] == "text"))
    # each model call's text is a paragraph of its own on the pipe
    return "\n\n".join(t for t in texts if t)


def _shell(d: Daemon, line: str) -> subprocess.CompletedProcess[str]:
    """``line`` run by sh, ikictl being the real one: a real pipe to cat."""
    env = {**d.env, "IKICTL": " ".join(IKICTL)}
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, timeout=60)


def test_send_to_a_pipe_prints_only_the_answer(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "piper")
    r = _shell(daemon, '$IKICTL send piper "What is ikigai?" | cat')
    assert r.returncode == 0, r.stderr
    answer = _turn_text(daemon, "piper")
    assert answer.startswith("Ikigai is a Japanese idea")
    assert r.stdout == answer + "\n"
    assert "thinking: The user asks: What is ikigai?" in r.stderr  # thinking went aside
    assert FOOTER.search(r.stderr), r.stderr
    assert "\x1b[" not in r.stderr  # plain, no color


def test_a_tool_using_turn_with_thinking_gives_its_text_alone(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "toolpipe", "--model", "claude-sonnet-4-5/med")
    r = daemon.ikictl("send", "toolpipe", "Please run a tool to say hello")  # stdout=PIPE: a pipe
    answer = _turn_text(daemon, "toolpipe")
    assert "The tool ran and printed: hello from a tool" in answer
    assert r.out == answer + "\n"
    assert "[tool bash] $ echo hello from a tool" in r.err
    assert "[tool bash ok] hello from a tool" in r.err
    assert "thinking: The user wants a tool run" in r.err
    assert FOOTER.search(r.err)


def test_new_with_a_prompt_on_a_pipe_says_created_on_stderr(daemon: Daemon) -> None:
    r = daemon.ikictl("new", "--name", "newpipe", "hi")
    assert r.out == "Hello! I am the offline demo model. Ask me anything.\n"
    assert r.err.startswith("created newpipe (")
    # without a prompt there is no answer: the line stays on stdout
    r = daemon.ikictl("new", "--name", "newpipe2")
    assert r.out.startswith("created newpipe2 (") and r.err == ""


def test_fork_with_a_prompt_on_a_pipe(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "forkpipe")
    r = daemon.ikictl("fork", "forkpipe", "--name", "forkpipe-kid", "--no-thinking", "hi")
    assert r.out == "Hello! I am the offline demo model. Ask me anything.\n"
    assert "forked forkpipe -> forkpipe-kid" in r.err
    assert "thinking:" not in r.err
    assert FOOTER.search(r.err)


def test_verbose_keeps_everything_on_stdout(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "loud")
    r = daemon.ikictl("send", "loud", "-v", "hi")
    assert r.lines[0] == "thinking: The user asks: hi. A short, friendly answer fits."
    assert r.lines[1] == "Hello! I am the offline demo model. Ask me anything."
    assert FOOTER.match(r.lines[2]) and len(r.lines) == 3
    assert r.err == ""


def test_json_is_unchanged_on_a_pipe(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "jsonpipe")
    r = daemon.ikictl("send", "jsonpipe", "hi", "--json")
    types = [json.loads(line)["event"]["type"] for line in r.lines]
    assert "thinking_delta" in types and types[-1] == "turn_ended"
    assert r.err == ""


def test_a_failed_turn_keeps_its_exit_code_on_a_pipe(daemon: Daemon) -> None:
    # no key for deepseek in the test home: the turn ends in error
    daemon.ikictl("new", "--name", "failpipe", "--model", "deepseek-chat/none")
    r = daemon.ikictl("send", "failpipe", "hi", code=1)
    assert "ikictl: the turn ended in error" in r.err and "no API key for deepseek" in r.err
    assert "[error" in r.err  # the footer, on stderr
    assert r.out == ""


def test_the_answer_is_exact_bytes_not_made_safe(daemon: Daemon) -> None:
    # the demo echoes the prompt: an escape sequence in it comes back in the answer,
    # which a terminal shows made visible but a pipe gets as the model wrote it
    daemon.ikictl("new", "--name", "rawpipe")
    r = daemon.ikictl("send", "rawpipe", "--no-thinking", "say \x1b[31mred")
    assert "\x1b[31mred" in r.out
    assert r.out == _turn_text(daemon, "rawpipe") + "\n"
    shown = daemon.ikictl("send", "rawpipe", "--no-thinking", "-v", "say \x1b[31mred").out
    assert "\x1b[31m" not in shown and "^[[31mred" in shown


def test_a_terminal_still_gets_thinking_and_the_footer(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "termy")
    pty = PtyProcess([*IKICTL, "send", "termy", "hi"], daemon.env)
    try:
        pty.expect(r"thinking: The user asks: hi\.")
        pty.expect(r"Hello! I am the offline demo model\. Ask me anything\.")
        pty.expect(r"\[completed · tokens")
        assert pty.proc.wait(15) == 0
    finally:
        pty.close()
