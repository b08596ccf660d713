"""Bad content inside a 200 stream: malformed SSE, and a tool call whose
arguments are not JSON; a 200 that is not a stream at all; error bodies
that quote the key."""

from __future__ import annotations

import json

from tests.daemon.conftest import KEY
from tests.fakes.script import HttpError, Malformed, Raw, Reply, ToolCall
from tests.faults.conftest import Case, assert_history

TEXT = "one two three four five six seven eight"


async def test_malformed_sse(fault_daemon):
    models = {"anth": "claude-sonnet-4-5/low", "chat": "gpt-4o", "resp": "openai/o3-mini/low", "gem": "gemini-2.5-flash/low"}
    out = await fault_daemon.run_all(
        *(
            Case(tag, [Reply(text=TEXT, pieces=4, fault=Malformed(before_event=3)), Reply(text=TEXT, pieces=4)], model=model)
            for tag, model in models.items()
        ),
        # garbage that is not even an SSE field line, before anything else
        Case("junk_first", [Reply(text=TEXT, fault=Malformed(garbage=b"\x00\xff<html>oops</html>\n\n", before_event=0)), Reply(text=TEXT)]),
    )
    for tag, o in out.items():
        assert o.status == "completed", (tag, o.ended)
        assert_history(o, ["user", "assistant"], reply=TEXT)
        if o.of("error"):
            # a payload that cannot be read fails the attempt as a server error: retried once
            assert len(o.requests) == 2, tag
            o.assert_retries(["server"], delay=(0.75, 1.25))
        else:
            # or the decoder skips it and the rest of the stream is whole
            assert len(o.requests) == 1 and o.text == TEXT, (tag, o.events)
    # Anthropic and Gemini refuse a malformed payload (server error, retried)
    assert out["anth"].of("error") and out["gem"].of("error")
    fault_daemon.stop()
    fault_daemon.assert_clean_log()


async def test_invalid_json_in_tool_call_arguments(fault_daemon, tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("GOOD CONTENT")
    broken = ToolCall(name="file_read", arguments='{"path": "/etc/hostname"')  # cut short
    valid = ToolCall(name="file_read", arguments={"path": str(good)})
    out = await fault_daemon.run_all(
        Case("anth", [Reply(tool_calls=[broken, valid]), Reply(text="I will fix my call")]),
        Case("chat", [Reply(tool_calls=[broken, valid]), Reply(text="I will fix my call")], model="gpt-4o"),
        Case("array", [Reply(tool_calls=[ToolCall(name="file_read", arguments="[1, 2]")]), Reply(text="ok")]),
    )
    for tag, o in out.items():
        assert o.status == "completed", (tag, o.ended)
        assert len(o.requests) == 2 and not o.of("error") and not o.of("retry"), tag
        finished = o.of("tool_finished")
        # text that does not parse was cut off by the output limit (issue 14 item 9)
        why = "must be a JSON object" if tag == "array" else "cut off by the output limit"
        assert finished[0]["is_error"] is True and why in finished[0]["content"], (tag, finished)
        assert_history(o, ["user", "assistant", *["tool_call"] * len(finished), "tool_result", "assistant"])
        # the second request carries the error result back to the model, in a form it accepts
        body = o.requests[1].body.decode()
        assert why in body, tag
    anth = out["anth"]
    assert [f["is_error"] for f in anth.of("tool_finished")] == [True, False]
    assert "GOOD CONTENT" in anth.of("tool_finished")[1]["content"]
    sent = anth.requests[1].json["messages"]
    tool_use = [b for b in sent[1]["content"] if b["type"] == "tool_use"]
    assert all(isinstance(b["input"], dict) for b in tool_use)  # Anthropic refuses a non-object input
    fault_daemon.stop()
    fault_daemon.assert_clean_log()


async def test_a_whole_json_answer_a_portal_page_and_errors_quoting_the_key(fault_daemon):
    models = {"anth": "claude-sonnet-4-5/low", "chat": "gpt-4o", "resp": "openai/o3-mini/low", "gem": "gemini-2.5-flash/low"}
    at_490 = "x" * 490 + KEY + " is not a valid key"  # a cut at 500 characters splits the key
    out = await fault_daemon.run_all(
        # the server ignored stream: true and sent the whole JSON answer
        *(Case(f"json_{tag}", [Reply(text=TEXT, thinking="Thinking it over.", stream=False)], model=model) for tag, model in models.items()),
        # a captive portal answers 200 with a web page: an error that says so, retried as a server error
        Case("portal", [Reply(fault=Raw(b"<html><title>Hotel WiFi</title>Please log in</html>", content_type="text/html")), Reply(text=TEXT)]),
        Case("key_at_490", [Reply(fault=Raw(at_490.encode(), status=401, content_type="text/plain"))]),
        Case("key_first_34", [Reply(fault=HttpError(401, body={"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY[:34]}"}}))]),
    )  # fmt: skip
    for tag in models:
        o = out[f"json_{tag}"]
        assert o.status == "completed", (tag, o.ended)
        assert len(o.requests) == 1 and not o.of("error") and o.text == TEXT, (tag, o.events)
        assert_history(o, ["user", "assistant"], reply=TEXT)
    portal = out["portal"]
    assert portal.status == "completed" and len(portal.requests) == 2
    [error] = portal.of("error")
    assert error["error"]["category"] == "server"
    assert "text/html" in error["error"]["message"] and "Hotel WiFi" in error["error"]["message"]
    for tag in ("key_at_490", "key_first_34"):
        o = out[tag]
        assert o.status == "error" and o.ended["error"]["category"] == "auth", (tag, o.ended)
        shown = json.dumps([o.events, o.history])
        assert [KEY[i : i + 8] for i in range(len(KEY) - 7) if KEY[i : i + 8] in shown] == [], (tag, shown[-800:])
    fault_daemon.stop()
    log = fault_daemon.log_text
    assert [KEY[i : i + 8] for i in range(len(KEY) - 7) if KEY[i : i + 8] in log] == []
    fault_daemon.assert_clean_log()
