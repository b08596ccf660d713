"""``ikictl chat`` under a pseudo-terminal: slash commands, streaming, Ctrl+C."""

from __future__ import annotations

import re
import time

import pytest

from .conftest import IKICTL, Daemon
from .ptyexpect import PtyProcess


@pytest.fixture
def chat(daemon: Daemon):
    procs: list[PtyProcess] = []

    def start(*args: str) -> PtyProcess:
        p = PtyProcess([*IKICTL, "chat", *args], {**daemon.env, "TERM": "xterm"})
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.close()


def test_chat_streams_and_slash_commands(daemon: Daemon, chat) -> None:
    daemon.ikictl("new", "--name", "talker")
    p = chat("talker")
    p.expect(r"chatting with talker \(.*\) · anthropic/claude-sonnet-4-5/med\. /help lists commands")
    p.expect(r"talker> ")
    p.sendline("hi")
    p.expect(r"thinking: The user asks: hi\. A short, friendly answer fits\.")
    p.expect(r"Hello! I am the offline demo model\. Ask me anything\.")
    p.expect(r"\[completed · tokens \d+ in / \d+ out \(\d+ thinking\) · \$[\d.]+\]")
    p.expect(r"talker> ")
    p.sendline("/help")
    p.expect(r"/fork \[\"prompt\"\] \[--model M/T\]")
    p.expect(r"talker> ")
    p.sendline("/model gpt-4o/none")
    p.expect(r"talker: OpenAI gpt-4o")
    p.expect(r"talker> ")
    p.sendline('/fork "What is ikigai?" --model gemini-2.5-flash/low --name kid')
    p.expect(r"forked talker -> kid \(.*\) · Google Gemini gemini-2\.5-flash")
    p.expect(r"Ikigai is a Japanese idea")
    p.expect(r"kid> ")
    p.sendline("/agents")
    p.expect(r"\* └─ [0-9a-f-]+\s+kid\s+idle\s+google/gemini-2\.5-flash")
    p.expect(r"kid> ")
    p.sendline("/mark before")
    p.expect(r"kid: mark 'before' set \(message #\d+\)")
    p.sendline("/rewind before")
    p.expect(r"kid: rewound to mark 'before'")
    p.sendline("/clear")
    p.expect(r"kid: context cleared")
    p.sendline("/system Be brief.")
    p.expect(r"kid: system prompt set")
    p.sendline("/system")
    p.expect(r"^Be brief\.$")
    p.sendline("/usage")
    p.expect(r"usage of kid \(")
    p.expect(r"^total ")
    p.sendline("/send talker hello from kid")
    p.expect(r"mail #\d+ sent to talker")
    p.sendline("/switch talker")
    p.expect(r"now talking to talker \(.*\) · openai/gpt-4o")
    p.expect(r"talker> ")
    p.sendline("/kill kid")
    p.expect(r"killed [0-9a-f-]{36}")
    p.sendline("/switch nobody")
    p.expect(r"error: .*nobody")
    p.sendline("/bogus")
    p.expect(r"unknown command /bogus; /help lists them")
    p.sendline("/exit")
    assert p.wait() == 0


def test_ctrl_c_cancels_the_turn_then_a_second_leaves(daemon: Daemon, chat) -> None:
    daemon.ikictl("new", "--name", "cc")
    p = chat("cc")
    p.expect(r"cc> ")
    p.sendline("tell me a long story")
    p.expect(r"Once upon a time")
    p.ctrl_c()
    p.expect(r"cancelling the turn")
    p.expect(r"\[interrupted · tokens")
    p.expect(r"cc> ")
    info = daemon.ikictl("show", "cc", "--json").json()
    assert info["last_turn"]["status"] == "interrupted" and not info["current_turn"]  # type: ignore[index]
    # still usable after the cancel
    p.sendline("hi")
    p.expect(r"Hello! I am the offline demo model")
    p.expect(r"cc> ")
    # let readline reach its select(): a SIGINT just before it is only seen on the next key
    time.sleep(0.5)
    p.ctrl_c()
    p.expect(r"Ctrl\+C again, Ctrl\+D or /exit to leave")
    time.sleep(0.5)
    p.ctrl_c()
    assert p.wait() == 0


def test_chat_without_agent_creates_one_and_keeps_history(daemon: Daemon, chat) -> None:
    p = chat("--name", "fresh", "--model", "gpt-4o")
    p.expect(r"created fresh \(.*\) · OpenAI gpt-4o")
    p.expect(r"fresh> ")
    p.sendline("hi")
    p.expect(r"Hello! I am the offline demo model")
    p.expect(r"fresh> ")
    p.ctrl_d()
    assert p.wait() == 0
    hist = (daemon.home / "ikictl_history").read_text()
    assert "hi" in hist.splitlines()
    assert re.search(r"fresh\s", daemon.ikictl("ls").out)
