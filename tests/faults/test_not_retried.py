"""Errors that waiting cannot fix are tried once: the turn ends in error at
once, the event says why, the fake saw exactly one request, and the history
holds only the prompt."""

from __future__ import annotations

from tests.fakes.script import HttpError, Reply
from tests.faults.conftest import Case, assert_history


async def test_client_errors_are_never_retried(fault_daemon):
    cases = {
        # tag: (fault, model, expected category)
        "bad400": (HttpError(400, "messages.0: bad field"), "claude-sonnet-4-5/low", "invalid_request"),
        "auth401": (HttpError(401, "invalid x-api-key"), "claude-sonnet-4-5/low", "auth"),
        "perm403": (HttpError(403, "no access to this model"), "gpt-4o", "auth"),
        "bill402": (HttpError(402, "credit balance is too low"), "claude-sonnet-4-5/low", "billing"),
        "nf404": (HttpError(404, "model not found", code="model_not_found"), "gpt-4o", "not_found"),
        "filter": (HttpError(400, "rejected by the safety system", code="content_policy_violation"), "gpt-4o", "content_filter"),
        "ctx_anthropic": (HttpError(400, "prompt is too long: 250000 tokens > 200000 maximum"), "claude-sonnet-4-5/low", "context_length"),
        "ctx_openai": (HttpError(400, "This model's maximum context length is 128000 tokens", code="context_length_exceeded"), "gpt-4o", "context_length"),
        "ctx_gemini": (HttpError(400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", code="INVALID_ARGUMENT"), "gemini-2.5-flash/low", "context_length"),
        # a retry-after longer than the policy will hold a turn for (300 s): give up now
        "ra_too_long": (HttpError(429, "come back tomorrow", headers={"retry-after": "86400"}), "claude-sonnet-4-5/low", "rate_limit"),
    }
    out = await fault_daemon.run_all(
        *(Case(tag, [Reply(fault=fault), Reply(text="must not be asked for")], model=model) for tag, (fault, model, _) in cases.items())
    )
    for tag, (_, _, category) in cases.items():
        o = out[tag]
        assert o.status == "error", (tag, o.ended)
        assert o.ended["error"]["category"] == category, (tag, o.ended["error"])
        assert len(o.requests) == 1, (tag, len(o.requests))  # nothing retried
        assert [e["error"]["category"] for e in o.of("error")] == [category], tag
        assert not o.of("retry"), (tag, o.of("retry"))
        assert_history(o, ["user"])
    # the agent is still usable after an error turn
    again = await fault_daemon.run(Case("bad400", [Reply(text="fine now")], prompt="again"), agent=out["bad400"].uuid)
    assert again.status == "completed" and len(again.requests) == 1
    # the failed turn's prompt stays in history; the model sees both prompts
    assert_history(again, ["user", "user", "assistant"], reply="fine now")
    fault_daemon.stop()
    fault_daemon.assert_clean_log()
