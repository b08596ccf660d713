"""What ikictl displays is true and harmless: ids that resolve, a queued model
switch, no thinking level for models that cannot think, no `$0` for an
unknown cost, no terminal control from model or tool text, errors in the
command's own terms."""

from __future__ import annotations

import io
import json
import re
import sqlite3
import time
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from ikictl import render

from .conftest import IKICTL, Daemon, start_daemon, stop_daemon
from .ptyexpect import PtyProcess

# every control character a hostile text may carry: OSC title, CSI clear
# screen and cursor moves, a bell, C1 CSI, DEL and a carriage return that
# would let a later text overwrite an earlier one
HOSTILE = "x\x1b]0;pwned\x07 \x1b[2J\x1b[1;1H \x9b31m \x7f \x08 ok\rFAKE"


def new(d: Daemon, name: str, *extra: str) -> dict:
    res = d.ikictl("new", "--name", name, *extra, "--json").json()
    assert isinstance(res, dict)
    return res["agent"]


def controls(text: str) -> set[str]:
    """The control characters of ``text`` a terminal would act on."""
    return {ch for ch in text if unicodedata.category(ch) == "Cc" and ch not in "\n\t"}


# ---------------------------------------------------------------- ids that resolve


def test_every_id_ls_prints_resolves_even_beside_dead_agents(home) -> None:
    d = start_daemon(home)
    names = ["refalpha", "refbeta", "refgamma"]
    try:
        for n in names:
            new(d, n)
    finally:
        stop_daemon(d)
    # ids as a burst in one millisecond gets them (UUIDv7: time first): the
    # first two share 33 characters, the third only 32 with the first
    ids = ["0190aaaa-bbbb-7000-8000-000000000001", "0190aaaa-bbbb-7000-8000-000000000002",
           "0190aaaa-bbbb-7000-8000-000000001000"]
    db = sqlite3.connect(home / "ikigai.db")
    with db:
        for name, uuid in zip(names, ids, strict=True):
            (old,) = db.execute("SELECT uuid FROM agents WHERE name = ?", (name,)).fetchone()
            for table, column in (("agents", "uuid"), ("messages", "agent_uuid"), ("prompt_queue", "agent_uuid")):
                db.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", (uuid, old))
        db.execute("UPDATE agents SET status = 'dead' WHERE name = 'refbeta'")
    db.close()
    d = start_daemon(home)
    try:
        for flags in ([], ["--all"]):
            rows = [line.split() for line in d.ikictl("ls", *flags).lines[1:]]
            shown = {r[1]: r[0] for r in rows}
            assert set(shown) == ({"refalpha", "refgamma"} | ({"refbeta"} if flags else set()))
            for name, ref in shown.items():
                assert len(ref) >= 8
                info = d.ikictl("show", ref, "--json").json()
                assert info["name"] == name, (ref, info)  # type: ignore[index]
        show = d.ikictl("show", "refgamma").out
        assert "\nshort id:     0190aaaa-bbbb-7000-8000-000000001\n" in show
        # ambiguous: each candidate listed once (the message does not repeat the list)
        err = d.ikictl("show", "0190aaaa", code=4).err
        assert "is the start of 3 agent ids" in err
        assert all(err.count(n) == 1 for n in names), err
    finally:
        stop_daemon(d)


# ---------------------------------------------------------------- model, thinking, cost


def test_a_queued_model_switch_is_shown(daemon: Daemon) -> None:
    new(daemon, "queuer")
    daemon.ikictl("send", "queuer", "--no-wait", "tell me a long story")
    time.sleep(0.3)
    daemon.ikictl("model", "queuer", "gpt-4o/none", "--queue")
    info = daemon.ikictl("show", "queuer", "--json").json()
    assert info["next_model"] == "openai/gpt-4o/none"  # type: ignore[index]
    assert info["model"] == "claude-sonnet-4-5"  # type: ignore[index]
    assert "\nnext model:   openai/gpt-4o/none (queued behind the running turn)\n" in daemon.ikictl("show", "queuer").out
    row = next(line for line in daemon.ikictl("ls").lines if " queuer " in line)
    assert "anthropic/claude-sonnet-4-5 -> openai/gpt-4o/none" in row
    daemon.ikictl("cancel", "queuer")
    deadline = time.monotonic() + 10
    while daemon.ikictl("show", "queuer", "--json").json()["next_model"] and time.monotonic() < deadline:  # type: ignore[index]
        time.sleep(0.1)
    info = daemon.ikictl("show", "queuer", "--json").json()
    assert (info["provider"], info["model"], info["next_model"]) == ("openai", "gpt-4o", None)  # type: ignore[index]
    assert "next model" not in daemon.ikictl("show", "queuer").out


def test_no_thinking_level_for_a_model_that_cannot_think(daemon: Daemon) -> None:
    agent = new(daemon, "plain", "--model", "gpt-4o/high")
    assert agent["thinking_level"] == "high" and agent["can_think"] is False
    row = next(line for line in daemon.ikictl("ls").lines if " plain " in line).split()
    assert row[3:5] == ["openai/gpt-4o", "-"], row
    assert "\nthinking:     -\n" in daemon.ikictl("show", "plain").out
    new(daemon, "thinker", "--model", "claude-sonnet-4-5/high")
    row = next(line for line in daemon.ikictl("ls").lines if " thinker " in line).split()
    assert row[3:5] == ["anthropic/claude-sonnet-4-5", "high"], row


def test_unknown_cost_is_not_zero(daemon: Daemon) -> None:
    new(daemon, "unpriced", "--model", "openai/some-unknown-model")
    daemon.ikictl("send", "unpriced", "hi")
    listed = next(a for a in daemon.ikictl("ls", "--json").json() if a["name"] == "unpriced")  # type: ignore[union-attr]
    assert listed["usage"]["input_tokens"] > 0 and listed["usage"]["cost_usd"] is None
    row = next(line for line in daemon.ikictl("ls").lines if " unpriced " in line)
    assert row.rstrip().endswith(" ?") and "$0" not in row, row
    assert "$0" not in daemon.ikictl("show", "unpriced").out
    # a new agent with no turn yet really cost nothing
    new(daemon, "idle-one")
    assert next(line for line in daemon.ikictl("ls").lines if " idle-one " in line).rstrip().endswith(" $0")


def test_show_counts_turns(daemon: Daemon) -> None:
    new(daemon, "counted")
    daemon.ikictl("send", "counted", "hi")
    daemon.ikictl("send", "counted", "run a tool please")  # two model calls, one turn
    usage = daemon.ikictl("show", "counted", "--json").json()["usage"]  # type: ignore[index]
    assert usage["turns"] == 2, usage
    assert re.search(r"\nusage:\s+2 turns ", daemon.ikictl("show", "counted").out)


# ---------------------------------------------------------------- hostile text


def test_hostile_text_never_reaches_the_terminal_raw(daemon: Daemon) -> None:
    new(daemon, "esc")
    daemon.ikictl("send", "esc", HOSTILE, "--json")
    daemon.ikictl("mark", "esc", "lab\x1b[2J")
    env = {**daemon.env, "NO_COLOR": "1"}  # any ESC left in the output is then the text's
    seen = []
    for args in (["history", "esc"], ["history", "esc", "--full"], ["show", "esc"], ["ls"]):
        pty = PtyProcess([*IKICTL, *args], env)
        try:
            assert pty.wait() == 0
        finally:
            pty.close()
        out = pty.raw.decode("utf-8", "replace").replace("\r\n", "\n")
        assert not controls(out), (args, out)
        seen.append(out)
    history = seen[0]
    assert "user  x^[]0;pwned^G ^[[2J^[[1;1H \\x9b31m ^? ^H ok FAKE" in history  # one line
    assert "user  x^[]0;pwned^G ^[[2J^[[1;1H \\x9b31m ^? ^H ok^MFAKE" in seen[1]  # --full
    assert "You said: x^[]0;pwned^G" in history and "mark lab^[[2J" in history
    # stored as sent, and --json shows it exactly
    rows = daemon.ikictl("history", "esc", "--json").json()["messages"]  # type: ignore[index]
    assert HOSTILE in [r["content"] for r in rows]
    assert any(r["content"].startswith("You said: x\x1b]0;pwned\x07") for r in rows)


printable_or_not = st.text(st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(text=printable_or_not, name=printable_or_not, label=printable_or_not, model=printable_or_not)
def test_rendering_never_prints_a_control_character(text: str, name: str, label: str, model: str) -> None:
    usage = {"turns": 1, "input_tokens": 1, "output_tokens": 2, "thinking_tokens": 0, "cached_tokens": 0,
             "cache_write_tokens": 0, "cost_usd": None, "provider": model, "model": model}
    agent = {"uuid": "0190aaaa-bbbb-7000-8000-000000000001", "short": "0190aaaa", "name": name, "parent": None,
             "provider": model, "model": model, "thinking_level": label, "can_think": True, "next_model": model,
             "system_prompt": text, "status": "running", "state": "idle", "current_turn": None, "queued": 0,
             "created_at": text, "ended_at": None, "cwd": text, "usage": usage,
             "last_turn": {"turn": text, "status": "error", "reply": text, "error": {"message": text, "provider": model}}}
    rows = [
        {"id": 1, "agent": "a", "kind": "user", "content": text, "data": None, "created_at": label},
        {"id": 2, "agent": "a", "kind": "assistant", "content": text,
         "data": {"model": model, "thinking_level": label, "thinking": text}, "created_at": ""},
        {"id": 3, "agent": "a", "kind": "mark", "content": label, "data": None, "created_at": ""},
    ]
    report = {"agent_uuid": name, "descendants": False, "agents": 1, "by_model": [usage], "total": usage,
              "unpriced": [model]}
    out = io.StringIO()
    render.agent_tree([agent], out)  # type: ignore[list-item]
    render.show_agent(agent, out)  # type: ignore[arg-type]
    for full in (False, True):
        render.history(rows, out, full=full)  # type: ignore[arg-type]
    render.usage_report(report, out)  # type: ignore[arg-type]
    out.write(render.error_text({"message": text, "provider": model}) + "\n")
    assert not controls(out.getvalue())
    # what is printable stays as it was
    assert render.safe(text) == text or controls(text)
    assert json.loads(json.dumps(rows))[0]["content"] == text  # --json keeps the text itself


# ---------------------------------------------------------------- errors in CLI terms


def test_bounded_options_are_refused_in_the_commands_terms(daemon: Daemon) -> None:
    new(daemon, "bounds")
    for args, message in [
        (["watch", "bounds", "--from", "0"], "--from must be 1 or more"),
        (["history", "bounds", "--limit", "0"], "--limit must be 1 or more"),
        (["history", "bounds", "--before", "-1"], "--before must be 0 or more"),
        (["history", "bounds", "--limit", str(2**53)], f"--limit must be at most {2**53 - 1}"),
        (["fork", "bounds", "--at", "-1"], "--at must be 0 or more"),
    ]:
        r = daemon.ikictl(*args, code=2)
        assert r.err == f"ikictl: {message}\n", (args, r.err)
