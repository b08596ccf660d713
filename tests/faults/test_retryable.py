"""Faults that must be retried: rate limits, overload, server errors, an error
in a 200 answer. The turn completes, the events say what happened, and the
history holds the one completed answer."""

from __future__ import annotations

import json

from tests.fakes.script import HttpError, Raw, Reply
from tests.faults.conftest import Case, assert_history

RA = {"retry-after-ms": "150"}  # 0.15 s: short, and honored exactly


def sse(*events: tuple[str, dict]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


MESSAGE_START = ("message_start", {"type": "message_start", "message": {
    "id": "msg_partial", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [], "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}})


async def test_rate_limits_and_overload_honor_retry_after(fault_daemon):
    storm = [Reply(fault=HttpError(429, "slow down", headers=RA)) for _ in range(5)]
    out = await fault_daemon.run_all(
        # a 429 storm: five refusals, the sixth attempt (the last allowed) answers
        Case("storm", [*storm, Reply(text="after the storm")]),
        # one more refusal than attempts allowed: the turn ends in error after exactly 6
        Case("storm_out", [Reply(fault=HttpError(429, "slow down", headers=RA)) for _ in range(6)]),
        # Anthropic 529 overloaded burst
        Case("o529", [Reply(fault=HttpError(529, "Overloaded", headers=RA)) for _ in range(3)] + [Reply(text="back")]),
        # OpenAI 503 burst (overloaded), retry-after in seconds
        Case(
            "o503",
            [Reply(fault=HttpError(503, "unavailable", headers={"retry-after": "0.2"})) for _ in range(2)]
            + [Reply(text="openai back")],
            model="gpt-4o",
        ),
        # Gemini 429 RESOURCE_EXHAUSTED with RetryInfo in the body
        Case(
            "g429",
            [Reply(fault=HttpError(429, body={"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.2s"}]}})), Reply(text="gemini back")],
            model="gemini-2.5-flash/low",
        ),
    )
    storm = out["storm"]
    assert storm.status == "completed"
    assert len(storm.requests) == 6
    storm.assert_retries(["rate_limit"] * 5, delay=(0.15, 0.15))
    storm.assert_waited(0.15)
    assert storm.text == "after the storm"
    assert_history(storm, ["user", "assistant"], reply="after the storm")

    out_ = out["storm_out"]
    assert out_.status == "error" and out_.ended["error"]["category"] == "rate_limit"
    assert len(out_.requests) == 6  # max_attempts_patient, not one more
    out_.assert_retries(["rate_limit"] * 6, delay=(0.15, 0.15))
    assert_history(out_, ["user"])

    o529 = out["o529"]
    assert o529.status == "completed" and len(o529.requests) == 4
    o529.assert_retries(["overloaded"] * 3, delay=(0.15, 0.15))
    assert all(e["error"]["http_status"] == 529 for e in o529.of("error"))
    assert_history(o529, ["user", "assistant"], reply="back")

    o503 = out["o503"]
    assert o503.status == "completed" and len(o503.requests) == 3
    o503.assert_retries(["overloaded"] * 2, delay=(0.2, 0.2))
    o503.assert_waited(0.2)
    assert_history(o503, ["user", "assistant"], reply="openai back")

    g429 = out["g429"]
    assert g429.status == "completed" and len(g429.requests) == 2
    g429.assert_retries(["rate_limit"], delay=(0.2, 0.2))
    assert_history(g429, ["user", "assistant"], reply="gemini back")
    fault_daemon.stop()
    fault_daemon.assert_clean_log()


async def test_server_errors_and_errors_inside_a_200(fault_daemon):
    overloaded_body = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
    invalid_body = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "bad field"}}).encode()
    mid_stream_error = sse(
        MESSAGE_START,
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "half an ans"}}),
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )
    out = await fault_daemon.run_all(
        # HTTP 500, no retry-after: the built-in backoff (1 s +- 25 %), then success
        Case("s500", [Reply(fault=HttpError(500, "boom")), Reply(text="recovered")]),
        # HTTP 200 whose JSON body is an error object (not a stream): retried as what it says
        Case("ok_overloaded", [Reply(fault=Raw(overloaded_body)), Reply(text="second try")]),
        # HTTP 200 with an error body that must not be retried
        Case("ok_invalid", [Reply(fault=Raw(invalid_body))]),
        # an SSE error event after some text: retried, the partial text discarded
        Case("sse_error", [Reply(fault=Raw(mid_stream_error, content_type="text/event-stream")), Reply(text="the whole answer")]),
        # OpenAI 500 three times: timeout/network/server get 3 attempts in all
        Case("s500_out", [Reply(fault=HttpError(500, "boom")) for _ in range(3)], model="gpt-4o"),
    )
    s500 = out["s500"]
    assert s500.status == "completed" and len(s500.requests) == 2
    s500.assert_retries(["server"], delay=(0.75, 1.25))
    s500.assert_waited(0.75)
    assert_history(s500, ["user", "assistant"], reply="recovered")

    ok_over = out["ok_overloaded"]
    assert ok_over.status == "completed" and len(ok_over.requests) == 2
    ok_over.assert_retries(["overloaded"], delay=(0.75, 1.25))
    assert ok_over.of("error")[0]["error"]["http_status"] == 200
    assert_history(ok_over, ["user", "assistant"], reply="second try")

    ok_inv = out["ok_invalid"]
    assert ok_inv.status == "error" and len(ok_inv.requests) == 1
    assert "bad field" in ok_inv.ended["error"]["message"] and ok_inv.ended["error"].get("retryable") is not True
    assert len(ok_inv.of("error")) == 1 and not ok_inv.of("retry")
    assert_history(ok_inv, ["user"])

    sse_err = out["sse_error"]
    assert sse_err.status == "completed" and len(sse_err.requests) == 2
    sse_err.assert_retries(["overloaded"], delay=(0.75, 1.25))
    assert sse_err.of("retry")[0]["discarded_output"] is True
    assert_history(sse_err, ["user", "assistant"], reply="the whole answer")  # not "half an ans..."

    s500_out = out["s500_out"]
    assert s500_out.status == "error" and len(s500_out.requests) == 3
    s500_out.assert_retries(["server"] * 3)
    delays = [r["delay"] for r in s500_out.of("retry")]
    assert 0.75 <= delays[0] <= 1.25 and 1.5 <= delays[1] <= 2.5  # exponential
    assert_history(s500_out, ["user"])
    fault_daemon.stop()
    fault_daemon.assert_clean_log()
    # last, so it cannot hide the rest: Anthropic's (and OpenAI's) error type
    # ``invalid_request_error`` in a 200 body is an invalid request, not "unknown"
    assert ok_inv.ended["error"]["category"] == "invalid_request", ok_inv.ended["error"]


async def test_cancel_while_waiting_to_retry(fault_daemon):
    """A cancel during the retry-after wait ends the turn at once: no further attempt."""
    import trio

    from tests.daemon.rpc import connect, turn_ended

    d = fault_daemon
    d.script.add("waiting", [Reply(fault=HttpError(429, "slow down", headers={"retry-after": "30"})), Reply(text="too late")])
    c = await connect(d.nursery, str(d.proc.socket))
    uuid = (await c.call("agent.create", name="waiting"))["agent"]["uuid"]
    await c.call("agent.subscribe", agent=uuid)
    turn = (await c.call("agent.prompt", agent=uuid, text="[case:waiting] hi"))["turn"]
    before = await c.events_until(lambda e: e["event"]["type"] == "retry")
    assert before[-1]["event"]["delay"] == 30
    shown = await c.call("agent.show", agent=uuid)
    assert shown["state"] == "retrying"
    with trio.fail_after(3):
        assert (await c.call("agent.cancel", agent=uuid)) == {"cancelled": True}
        events = await c.events_until(turn_ended(turn))
    assert events[-1]["event"]["status"] == "interrupted"
    assert len(d.script.requests["waiting"]) == 1
    kinds = [m["kind"] for m in (await c.call("agent.history", agent=uuid))["messages"]]
    assert kinds == ["user", "interrupted"]
    d.stop()
    d.assert_clean_log()
