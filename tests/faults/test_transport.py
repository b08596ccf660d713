"""Transport faults: connections cut at random byte offsets, stalls past the
read timeout, a server that accepts and never answers, connection refused,
a host that does not resolve. All are retried a bounded number of times
(3 attempts in all, 1 s then 2 s of backoff), partial output is discarded,
and only the complete answer reaches the history."""

from __future__ import annotations

import os
import random

from tests.fakes.script import Disconnect, NeverAnswer, Reply, Stall, ToolCall
from tests.faults.conftest import READ_TIMEOUT, Case, assert_history

SEED = int(os.environ.get("IKIGAI_FAULT_SEED", random.randrange(1 << 30)))
LONG = "The quick brown fox jumps over the lazy dog. " * 8


async def test_disconnects_at_random_offsets(fault_daemon):
    rng = random.Random(SEED)
    # the three wire formats, each cut at a random offset of its body (an
    # offset past the end cuts before the end marker); one more cut at 0 bytes
    models = {"anth": "claude-sonnet-4-5/low", "oai": "gpt-4o", "gem": "gemini-2.5-flash/low", "resp": "openai/o3-mini/low"}
    offsets = {tag: rng.randrange(0, 1500) for tag in models}
    offsets["zero"] = 0
    models["zero"] = "claude-sonnet-4-5/low"
    cases = [
        Case(tag, [Reply(text=LONG, pieces=12, fault=Disconnect(after_bytes=offsets[tag])), Reply(text=LONG, pieces=12)], model=models[tag])
        for tag in models
    ]
    # a cut in the middle of a streamed tool call: the call must not run
    cases.append(
        Case(
            "tool_cut",
            [
                Reply(tool_calls=[ToolCall(name="file_read", arguments={"path": "/etc/hostname" + " " * 200})], fault=Disconnect(after_bytes=700)),
                Reply(text="no tool then"),
            ],
        )
    )
    out = await fault_daemon.run_all(*cases)
    for tag, o in out.items():
        where = f"{tag} (seed {SEED}, offsets {offsets})"
        assert o.status == "completed", (where, o.ended)
        assert len(o.requests) == 2, where
        o.assert_retries(["network"], delay=(0.75, 1.25))
        o.assert_waited(0.75)
    for tag in models:
        o = out[tag]
        assert o.text.endswith(LONG), tag  # the retried answer streamed whole
        assert_history(o, ["user", "assistant"], reply=LONG)
    assert out["zero"].of("retry")[0].get("discarded_output", False) is False
    cut = out["tool_cut"]
    assert not cut.of("tool_started"), cut.events  # a half-streamed call is not run
    assert_history(cut, ["user", "assistant"], reply="no tool then")
    fault_daemon.stop()
    fault_daemon.assert_clean_log()


async def test_stalls_silence_refused_and_unresolvable(fault_daemon):
    out = await fault_daemon.run_all(
        # some bytes, then silence longer than the read timeout, then the full answer
        Case("stall", [Reply(text=LONG, pieces=6, fault=Stall(after_bytes=900)), Reply(text="unstuck")]),
        # a stall before the first byte of the body, on OpenAI
        Case("stall0", [Reply(text=LONG, fault=Stall(after_bytes=0)), Reply(text="unstuck too")], model="gpt-4o"),
        # a stall that ends before the timeout is no fault at all
        Case("short_stall", [Reply(text="patience", pieces=4, fault=Stall(after_bytes=300, seconds=READ_TIMEOUT / 3))]),
        # accepts, reads the request, never sends a status line: 3 attempts, then error
        Case("silent", [Reply(fault=NeverAnswer()) for _ in range(3)]),
        # nobody listens on the port
        Case("refused", [], model="refused/some-model"),
        # the host name does not resolve
        Case("nodns", [], model="nodns/some-model"),
        limit=30,
    )
    stall = out["stall"]
    assert stall.status == "completed" and len(stall.requests) == 2
    stall.assert_retries(["timeout"], delay=(0.75, 1.25))
    assert stall.of("retry")[0]["discarded_output"] is True
    assert_history(stall, ["user", "assistant"], reply="unstuck")

    stall0 = out["stall0"]
    assert stall0.status == "completed" and len(stall0.requests) == 2
    stall0.assert_retries(["timeout"], delay=(0.75, 1.25))
    assert_history(stall0, ["user", "assistant"], reply="unstuck too")

    short = out["short_stall"]
    assert short.status == "completed" and len(short.requests) == 1 and not short.of("error")
    assert_history(short, ["user", "assistant"], reply="patience")

    silent = out["silent"]
    assert silent.status == "error" and silent.ended["error"]["category"] == "timeout"
    assert len(silent.requests) == 3
    silent.assert_retries(["timeout"] * 3)
    assert_history(silent, ["user"])

    for tag in ("refused", "nodns"):
        o = out[tag]
        assert o.status == "error", (tag, o.ended)
        assert o.ended["error"]["category"] == "network", (tag, o.ended["error"])
        assert not o.requests
        o.assert_retries(["network"] * 3)
        assert_history(o, ["user"])
    fault_daemon.stop()
    fault_daemon.assert_clean_log()
