"""The daemon's log tells each turn's story: start, end (status, model calls,
duration, tokens), every retry (attempt, category, wait) and the error
(category, scrubbed message), each with the agent and turn ids. Never the
prompt, the reply or a key. The real ikigaid against the fake provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from tests.daemon.conftest import KEY, DaemonProcess
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import HttpError, Reply
from tests.fakes.server import FakeProvider

PROMPT_OK = "PROMPT-one-lighthouse-keeper-7781"
REPLY_OK = "REPLY-the-lamp-is-lit-4410"
PROMPT_FAIL = "PROMPT-two-harbour-master-9902"
# rate limited with a short retry-after: six attempts in all, then the turn fails
LIMITED = HttpError(
    429,
    f"slow down, {KEY} is over its limit",
    code="rate_limit_error",
    headers={"retry-after-ms": "50"},
)


def _lines(home: Path) -> list[dict]:
    return [json.loads(line) for line in (home / "logs" / "ikigaid.log").read_text().splitlines()]


def _of(lines: list[dict], event: str, turn: str) -> list[dict]:
    return [r for r in lines if r.get("event") == event and r.get("turn") == turn]


async def test_turns_retries_and_errors_are_logged_without_content(
    daemon: DaemonProcess, fake_provider: FakeProvider, nursery: trio.Nursery
) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", name="logged"))["agent"]["uuid"]

    fake_provider.push(Reply(text=REPLY_OK))
    ok = await c.call("agent.prompt", agent="logged", text=PROMPT_OK, wait=True)
    assert ok["reply"] == REPLY_OK
    fake_provider.push(*[Reply(fault=LIMITED)] * 6)
    with trio.fail_after(20), pytest.raises(RpcFailure) as raised:
        await c.call("agent.prompt", agent="logged", text=PROMPT_FAIL, wait=True)
    failed = raised.value.error["data"]
    assert failed["status"] == "error"
    daemon.stop()  # every line is on disk

    text = (daemon.home / "logs" / "ikigaid.log").read_text()
    for secret in (PROMPT_OK, REPLY_OK, PROMPT_FAIL, KEY):
        assert secret not in text
    lines = _lines(daemon.home)
    # lines are written by a thread of their own: SIGTERM's exit writes every one, the last too
    assert ("signal received", "SIGTERM") in [(r["event"], r.get("signal")) for r in lines]
    assert lines[-1]["event"] == "ikigaid stopped"

    turn = ok["turn"]
    (start,) = _of(lines, "turn started", turn)
    assert (start["agent"], start["provider"], start["model"]) == (
        uuid,
        "anthropic",
        "claude-sonnet-4-5",
    )
    (end,) = _of(lines, "turn ended", turn)
    assert end["agent"] == uuid and end["status"] == "completed" and end["model_calls"] == 1
    assert end["input_tokens"] == 12 and end["output_tokens"] > 0
    assert 0 <= end["duration_s"] < 20
    assert not _of(lines, "retrying model call", turn) and not _of(lines, "turn failed", turn)

    turn = failed["turn"]
    assert len(_of(lines, "turn started", turn)) == 1
    retries = _of(lines, "retrying model call", turn)
    assert [r["attempt"] for r in retries] == [2, 3, 4, 5, 6]
    for r in retries:
        assert r["agent"] == uuid and r["category"] == "rate_limit" and r["http_status"] == 429
        assert r["wait_s"] == 0.05 and r["level"] == "info"
    (error,) = _of(lines, "turn failed", turn)
    assert (error["agent"], error["category"], error["http_status"]) == (uuid, "rate_limit", 429)
    assert error["level"] == "warning" and error["error"].startswith("slow down, ")
    assert "[REDACTED]" in error["error"]
    (end,) = _of(lines, "turn ended", turn)
    assert end["status"] == "error" and end["model_calls"] == 6 and end["input_tokens"] == 0
    # in order: started, the retries, failed, ended
    order = [lines.index(r) for r in [*_of(lines, "turn started", turn), *retries, error, end]]
    assert order == sorted(order)
