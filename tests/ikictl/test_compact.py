"""``ikictl compact``, ``/compact`` in the REPL, the context line of ``show``,
the compaction row of ``history`` and the compaction events as ``send`` and
``watch`` draw them (issue 16): the real ikictl against a real daemon and the
fake provider."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.events import CompactionDone, CompactionFailed, CompactionStarted
from ikictl.render import RESET, YELLOW
from ikictl.stream import EventPrinter
from providers.types import ProviderError, Usage
from tests.fakes.demo import demo_responder
from tests.fakes.script import HttpError, Reply
from tests.fakes.server import ThreadedFakeProvider

from .conftest import IKICTL, Daemon, start_daemon, stop_daemon, wait_for, write_config
from .ptyexpect import PtyProcess

SUMMARY_MARK = "You compact the history"
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")  # what the terminal must not get
DEMO_SUMMARY = "So far we talked about ikigai, ran a tool that said hello, and I summarised it."
COMPACTED = re.compile(
    r"^compacted (\d+) messages: ~([\d,]+) → ~([\d,]+) tokens "
    r"\(summary by anthropic/claude-sonnet-4-5, \$[\d.]+\)$"
)


def talk(d: Daemon, name: str, turns: int) -> None:
    d.ikictl("new", "--name", name)
    for n in range(turns):
        d.ikictl("send", name, f"question {n} about pears")


def tokens(text: str) -> int:
    return int(text.replace(",", ""))


def test_compact_prints_what_it_did_and_history_keeps_all(daemon: Daemon) -> None:
    talk(daemon, "pear", 3)
    r = daemon.ikictl("compact", "pear", "--keep", "1")
    found = COMPACTED.match(r.out.rstrip("\n"))
    assert found and r.out.count("\n") == 1, r.out
    assert found.group(1) == "4" and tokens(found.group(3)) < tokens(found.group(2))
    assert r.err == ""  # no progress line off a terminal

    lines = daemon.ikictl("history", "pear").lines
    at = next(i for i, line in enumerate(lines) if "── compacted" in line)
    assert re.fullmatch(
        r"#\d+\s+\d\d:\d\d:\d\d  ── compacted 4 messages \(~[\d,]+ → ~[\d,]+ tokens\) "
        r"by anthropic/claude-sonnet-4-5 ──",
        lines[at],
    ), lines[at]
    assert lines[at + 1].strip() == DEMO_SUMMARY and lines[at + 1].startswith("  ")
    # the usage row of the summary calls shows as any usage row
    assert any(re.fullmatch(r"#\d+\s+\d\d:\d\d:\d\d  usage  context compaction", line) for line in lines), lines
    assert sum(" user  question " in line for line in lines) == 3  # nothing was removed
    full = daemon.ikictl("history", "pear", "--full").out
    assert DEMO_SUMMARY in full

    show = daemon.ikictl("show", "pear").out
    ctx = re.search(r"^context:\s+(.*)$", show, re.M)
    assert ctx and re.fullmatch(
        r"[\d,]+ / 200,000 tokens, 3 messages after a summary \(estimated, calibrated by the "
        r"provider's counts; compacts above [\d,]+; window from the catalog\)",
        ctx.group(1),
    ), ctx


def test_compact_json_default_keep_and_nothing_to_do(daemon: Daemon) -> None:
    talk(daemon, "plum", 2)
    # by default the newest turns that fit in 40% of the window are kept: here all of them
    r = daemon.ikictl("compact", "plum")
    assert r.out.startswith("plum: nothing to compact: the context (~") and "already fits" in r.out
    res = daemon.ikictl("compact", "plum", "--keep", "1", "--json").json()
    assert isinstance(res, dict)
    assert res["compacted"] is True and res["reason"] == "manual"
    assert res["messages"] == 2 and res["model"] == "anthropic/claude-sonnet-4-5"
    assert res["usage"]["output_tokens"] > 0 and "message" not in res

    r = daemon.ikictl("compact", "plum", "--keep", "1")  # one turn left: nothing to do, exit 0
    assert r.out.startswith("plum: nothing to compact: ") and r.err == "" and r.out.count("\n") == 1
    daemon.ikictl("new", "--name", "empty")
    r = daemon.ikictl("compact", "empty", "--json")
    assert r.json()["compacted"] is False and r.err == ""  # type: ignore[index]


def test_compact_usage_errors(daemon: Daemon) -> None:
    r = daemon.ikictl("compact", "nobody-here", code=4)
    assert "nobody-here" in r.err
    r = daemon.ikictl("compact", "x", "--keep", "-1", code=2)
    assert r.err == "ikictl: --keep must be 0 or more\n"
    r = daemon.ikictl("compact", "x", "--keep", "two", code=2)
    assert "--keep" in r.err
    help = daemon.ikictl("compact", "--help").out
    assert "Summarize the oldest part of an agent's context" in help and "--keep N" in help
    assert "40%" in help
    assert "    compact " in daemon.ikictl("--help").out


# ------------------------------------------------------------------ a scripted provider


class Scripted:
    """The demo provider, but the summary requests get ``summary`` (None: the demo's answer)."""

    def __init__(self) -> None:
        self.summary: Reply | None = None

    def __call__(self, request: Any) -> Reply | None:
        if SUMMARY_MARK in request.body.decode():
            return self.summary or demo_responder(request)
        return demo_responder(request)


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[Daemon, Scripted]]:
    script = Scripted()
    with ThreadedFakeProvider(responder=script) as fake:
        home = Path(tempfile.mkdtemp(prefix="ikc"))
        write_config(home, fake.base_url, default_model="claude-sonnet-4-5/med")
        d = start_daemon(home)
        try:
            yield d, script
        finally:
            stop_daemon(d)
            shutil.rmtree(home, ignore_errors=True)


def test_a_failed_summary_exits_1_and_changes_nothing(scripted: tuple[Daemon, Scripted]) -> None:
    d, script = scripted
    talk(d, "fig", 2)
    script.summary = Reply(fault=HttpError(400, "the summary was refused", "invalid_request_error"))
    try:
        r = d.ikictl("compact", "fig", "--keep", "1", code=1)
        assert r.out == ""
        assert r.err.startswith("ikictl: fig: compaction failed, the context is unchanged: ")
        assert "the summary was refused" in r.err
        r = d.ikictl("compact", "fig", "--keep", "1", "--json", code=1)
        assert r.json()["compacted"] is False  # type: ignore[index]
        err = json.loads(r.err)["error"]
        assert err["exit"] == 1 and "the summary was refused" in err["message"]
        assert err["data"]["error"]["http_status"] == 400
    finally:
        script.summary = None
    assert "compacted" not in d.ikictl("history", "fig").out


def test_ls_shows_compacting_and_watch_draws_the_events(scripted: tuple[Daemon, Scripted]) -> None:
    d, script = scripted
    talk(d, "date", 2)
    watch = d.popen("watch", "date", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    script.summary = Reply(text="a slow summary of pears", pieces=30, delay=0.1)  # 3 s
    try:
        wait_for(lambda: d.ikictl("show", "date", "--json").json()["state"] == "idle", 10, "idle")  # type: ignore[index]
        job = d.popen("compact", "date", "--keep", "1", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for(lambda: re.search(r"\bdate\s+compacting\b", d.ikictl("ls").out), 10, "compacting in ls")
        out, err = job.communicate(timeout=20)
        assert job.returncode == 0 and COMPACTED.match(out.strip()), (out, err)
    finally:
        script.summary = None
    watch.terminate()
    seen, _ = watch.communicate(timeout=10)
    assert re.search(r"^\[compacting context: 2 messages, ~[\d,]+ tokens \(manual\)…\]$", seen, re.M), seen
    assert re.search(
        r"^\[compacted: ~[\d,]+ → ~[\d,]+ tokens \(2 messages summarized by "
        r"anthropic/claude-sonnet-4-5, \$[\d.]+\)\]$",
        seen,
        re.M,
    ), seen


# ------------------------------------------------------------------ the REPL


def test_slash_compact_in_the_repl(daemon: Daemon) -> None:
    talk(daemon, "kiwi", 3)
    p = PtyProcess([*IKICTL, "chat", "kiwi"], {**daemon.env, "TERM": "xterm"})
    try:
        p.expect(r"kiwi> ")
        p.sendline("/help")
        p.expect(r"/compact \[N\]\s+summarize the oldest part of the context")
        p.expect(r"kiwi> ")
        p.sendline("/compact x")
        p.expect(r"usage: /compact \[N\]")
        p.expect(r"kiwi> ")
        p.sendline("/compact 1")
        p.expect(r"compacted 4 messages: ~[\d,]+ → ~[\d,]+ tokens \(summary by anthropic/claude-sonnet-4-5")
        p.expect(r"kiwi> ")
        p.sendline("/compact 1")
        p.expect(r"kiwi: nothing to compact")
        p.expect(r"kiwi> ")
        p.sendline("/exit")
        assert p.wait() == 0
    finally:
        p.close()


# ------------------------------------------------------------------ the renderer


def _draw(event: Any, *, color: bool = False, json_mode: bool = False) -> str:
    out = io.StringIO()
    printer = EventPrinter(out, color=color, json_mode=json_mode)
    # as the daemon sends it: a tagged JSON object
    wire = event if isinstance(event, dict) else msgspec.to_builtins(event)
    printer.event({"subscription": 1, "agent": "u", "turn": "t1", "seq": 3, "event": wire})
    return out.getvalue()


def test_the_three_events_are_drawn_as_status_lines() -> None:
    started = CompactionStarted(reason="auto", messages=24, tokens_before=12300, model="anthropic/claude-x")
    assert _draw(started) == "[compacting context: 24 messages, ~12,300 tokens (auto)…]\n"
    done = CompactionDone(
        reason="auto",
        messages=24,
        tokens_before=12300,
        tokens_after=2100,
        summary_tokens=900,
        usage=Usage(input_tokens=12000, output_tokens=900),
        cost_usd=0.0123,
        model="anthropic/claude-x",
    )
    assert _draw(done) == (
        "[compacted: ~12,300 → ~2,100 tokens (24 messages summarized by anthropic/claude-x, $0.01)]\n"
    )
    error = ProviderError(category="rate_limit", message="slow down", http_status=429, provider="anthropic")
    failed = CompactionFailed(reason="context_length", message="slow down", error=error)
    assert _draw(failed) == "[compaction failed (context_length): slow down; the context is unchanged]\n"
    # a warning on a terminal; the others dim
    assert _draw(failed, color=True).startswith(YELLOW) and _draw(failed, color=True).endswith(RESET + "\n")
    no_message = CompactionFailed(reason="auto", message="", error=error)
    assert "anthropic HTTP 429 rate_limit: slow down" in _draw(no_message)
    # --json: the event as it came, one line
    line = _draw(done, json_mode=True)
    assert json.loads(line)["event"]["type"] == "compaction_done" and line.count("\n") == 1


def test_hostile_compaction_rows_and_events_do_not_crash() -> None:
    from ikictl.render import history

    out = io.StringIO()
    rows: list[Any] = [
        {"id": 1, "agent": "u", "kind": "compaction", "content": "sum\x1b]0;pwn\x07mary\nline two",
         "data": {"messages": "lots", "tokens_before": None, "summary_model": "m\x1b[2J"}, "created_at": "x"},
        {"id": 2, "agent": "u", "kind": "compaction", "content": "", "data": None, "created_at": ""},
    ]
    history(rows, out)
    text = out.getvalue()
    assert "\x1b" not in text and "── compacted ? messages (~? → ~? tokens) by m^[[2J ──" in text
    assert "sum^[]0;pwn^Gmary line two" in text
    drawn = _draw({"type": "compaction_started", "messages": True, "tokens_before": "9", "reason": "\x1b[31m\n"})
    assert drawn == "[compacting context: ? messages, ~? tokens (^[[31m^J)…]\n"
    assert _draw({"type": "compaction_failed"}) == "[compaction failed (None): no reason given; the context is unchanged]\n"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_fields = st.sampled_from(["messages", "tokens_before", "tokens_after", "summary_provider", "summary_model", "reason", "model", "cost_usd", "message", "error"])


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["compaction_started", "compaction_done", "compaction_failed"]),
    fields=st.dictionaries(_fields, _json, max_size=8),
    content=st.text(),
    data=st.none() | _json | st.dictionaries(_fields, _json, max_size=8),
)
def test_any_compaction_row_or_event_draws_one_safe_line(kind: str, fields: dict, content: str, data: Any) -> None:
    """Whatever a compaction event or row holds, it is drawn without raising,
    as one line (an event) and with no control character reaching the terminal."""
    from ikictl.render import history

    drawn = _draw({"type": kind, **fields})
    assert drawn.count("\n") == 1 and drawn.startswith("[compact")
    assert not CONTROL.search(drawn.rstrip("\n"))
    out = io.StringIO()
    history([{"id": 7, "agent": "u", "kind": "compaction", "content": content, "data": data, "created_at": "t"}], out)
    assert "── compacted " in out.getvalue()
    assert not CONTROL.search(out.getvalue().replace("\n", ""))
