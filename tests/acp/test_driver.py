"""The ACP test driver itself (tests/acp/driver.py and the relay
acp_client.mjs running the official TypeScript SDK), against a tiny agent
written with the Python SDK (echo_agent.py) and, for what that agent never
does, a few lines of hostile Python."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import trio

from tests.acp.driver import AcpDriverError, AcpError, is_type, open_acp_client

ECHO = [sys.executable, str(Path(__file__).with_name("echo_agent.py"))]
BOUND = 30  # seconds per test: generous, CI machines are loaded
INIT = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False}}}

# An agent that writes a line no JSON parser takes, then answers every line it
# reads that is not JSON with a parse error (id null, as JSON-RPC has it).
GARBLER = r"""
import json, sys
print("this is not JSON", flush=True)
for line in sys.stdin:
    try:
        json.loads(line)
    except ValueError:
        err = {"code": -32700, "message": "Parse error"}
        print(json.dumps({"jsonrpc": "2.0", "id": None, "error": err}), flush=True)
"""

# An agent that answers every request with a bare result and, during a
# prompt, sends an update the ACP schema refuses (an agent_message_chunk
# without its content).
BAD_UPDATE = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "session/prompt":
        bad = {"sessionUpdate": "agent_message_chunk"}
        note = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": bad}}
        print(json.dumps(note), flush=True)
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}}), flush=True)
"""

# An agent that asks for a permission, withdraws the request at once
# ($/cancel_request), and reports the client's answer as a notification.
WITHDRAW = r"""
import json, sys
def send(msg):
    print(json.dumps({"jsonrpc": "2.0", **msg}), flush=True)
option = {"optionId": "a", "name": "A", "kind": "allow_once"}
ask = {"sessionId": "s", "toolCall": {"toolCallId": "t"}, "options": [option]}
send({"id": "p1", "method": "session/request_permission", "params": ask})
send({"method": "$/cancel_request", "params": {"requestId": "p1"}})
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("id") == "p1":
        send({"method": "_test/answered", "params": msg})
"""


def text(words: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": words}]


async def start_session(c) -> str:
    await c.call("initialize", INIT)
    return (await c.call("newSession", {"cwd": os.getcwd(), "mcpServers": []}))["sessionId"]


async def test_initialize_round_trip():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            result = await c.call("initialize", INIT)
            assert result["protocolVersion"] == 1
            assert result["agentInfo"]["name"] == "echo-agent"
            assert c.sdk_version == "2.4.0"
            # the wire name reaches the same method
            session = await c.call("session/new", {"cwd": os.getcwd(), "mcpServers": []})
            assert session["sessionId"].startswith("echo-")
            assert c.problems() == []


async def test_the_capabilities_sent_are_the_tests():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO, trace=True) as c:
            await c.call("initialize", INIT)
            sent = await c.next(lambda m: m["type"] == "wire" and m["dir"] == "out")
            assert sent["message"]["method"] == "initialize"
            assert sent["message"]["params"] == INIT


async def test_a_prompts_updates_arrive_before_its_result():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            sid = await start_session(c)
            result = await c.call("prompt", {"sessionId": sid, "prompt": text("hello there")})
            assert result["stopReason"] == "end_turn"
            # initialize, newSession, then the prompt's update before its result
            order = [m["type"] for m in c.messages if m["type"] in ("update", "result")]
            assert order == ["result", "result", "update", "result"]
            assert c.message_text(sid) == "hello there"
            update = c.updates(sid)[-1]
            assert update["update"]["sessionUpdate"] == "agent_message_chunk"
            assert c.problems() == []


@pytest.mark.parametrize(
    ("outcome", "echoed"),
    [
        ({"outcome": "selected", "optionId": "allow"}, "permission: selected allow"),
        ({"outcome": "cancelled"}, "permission: cancelled"),
    ],
)
async def test_a_permission_request_is_answered_by_the_test(outcome, echoed):
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            sid = await start_session(c)
            results = []

            async def prompt() -> None:
                results.append(await c.call("prompt", {"sessionId": sid, "prompt": text("ask")}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(prompt)
                ask = await c.next(is_type("permission"))
                assert ask["params"]["sessionId"] == sid
                assert [o["optionId"] for o in ask["params"]["options"]] == ["allow", "deny"]
                assert not results  # the turn waits for the answer
                await c.answer(ask["rid"], outcome)
            assert results[0]["stopReason"] == "end_turn"
            assert c.message_text(sid) == echoed
            assert c.problems() == []


async def test_a_permission_request_left_unanswered_holds_its_turn_only():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            sid = await start_session(c)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(c.call, "prompt", {"sessionId": sid, "prompt": text("ask")})
                ask = await c.next(is_type("permission"))
                await c.answer(ask["rid"], never=True)
                # the relay and the agent still serve other calls
                other = await c.call("newSession", {"cwd": os.getcwd(), "mcpServers": []})
                assert other["sessionId"] != sid
                assert c.message_text(sid) == ""
                assert not [m for m in c.messages if "stopReason" in str(m.get("result"))]
                nursery.cancel_scope.cancel()
            assert await c.close() == 0


async def test_a_withdrawn_permission_request_is_shown_and_answered_cancelled():
    with trio.fail_after(BOUND):
        async with open_acp_client([sys.executable, "-c", WITHDRAW]) as c:
            ask = await c.next(is_type("permission"))
            gone = await c.next(is_type("permission_aborted"))
            assert gone["rid"] == ask["rid"]
            answered = await c.next(
                lambda m: m["type"] == "notification" and m["method"] == "_test/answered"
            )
            assert answered["params"]["error"]["code"] == -32800
            assert c.problems() == []


async def test_a_file_read_is_refused_and_shown():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            sid = await start_session(c)
            await c.call("prompt", {"sessionId": sid, "prompt": text("read")})
            asked = await c.next(is_type("client_call"))
            assert asked["method"] == "fs/read_text_file"
            assert asked["params"]["path"] == "/etc/hostname"
            assert c.message_text(sid) == (
                "read refused: -32601 not offered by this client: fs/read_text_file"
            )
            assert c.problems() == []  # refusing on purpose is no problem


async def test_an_error_answer_raises_acp_error():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            await c.call("initialize", INIT)
            # the echo agent has no session/load
            with pytest.raises(AcpError) as caught:
                await c.call("loadSession", {"sessionId": "x", "cwd": "/", "mcpServers": []})
            assert caught.value.code == -32601


async def test_a_method_the_sdk_lacks_is_a_driver_error_naming_its_methods():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            with pytest.raises(AcpDriverError, match="unstable_forkSession"):
                await c.call("unstable_resumeSession", {})


async def test_raw_lines_bypass_the_sdk_and_their_replies_show():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            await c.call("initialize", INIT)
            await c.raw("{this is not json")
            await c.raw(b"\xff\xfe not utf-8 either")
            await c.raw('{"jsonrpc": "2.0", "id": "raw-1", "method": "no/such"}')
            reply = await c.next(is_type("raw_reply"))
            # the Python SDK logs an unparseable line and answers nothing: the
            # first reply is the one to raw-1
            assert reply["message"]["id"] == "raw-1"
            assert reply["message"]["error"]["code"] == -32601
            # the connection survives, and the SDK saw no reply it did not ask for
            session = await c.call("newSession", {"cwd": os.getcwd(), "mcpServers": []})
            assert session["sessionId"]
            assert c.problems() == []


async def test_what_the_sdk_refuses_and_null_id_replies_show():
    with trio.fail_after(BOUND):
        async with open_acp_client([sys.executable, "-c", GARBLER]) as c:
            refused = await c.next(is_type("rejected"))
            assert refused["message"]["id"] is None
            assert refused["message"]["error"]["code"] == -32700
            await c.raw("not json")
            reply = await c.next(is_type("raw_reply"))
            assert reply["message"] == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "Parse error"},
            }
            assert c.problems() == [refused]


async def test_an_update_the_sdk_refuses_is_shown_and_is_a_problem():
    with trio.fail_after(BOUND):
        async with open_acp_client([sys.executable, "-c", BAD_UPDATE]) as c:
            await c.call("prompt", {"sessionId": "s", "prompt": text("hi")})
            assert c.updates("s") == [
                {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}
            ]
            log = await c.next(is_type("sdk_log"))
            assert "session/update" in log["text"]
            assert "-32602" in log["text"]
            assert c.problems() == [log]


async def test_close_ends_the_agent_and_reports_its_exit():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            await c.call("initialize", INIT)
            assert await c.close() == 0
            assert c.exited() == {"type": "exited", "code": 0, "signal": None}
            assert await c.close() == 0  # asking again is harmless


async def test_an_agent_that_dies_shows_as_exited():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            sid = await start_session(c)
            with pytest.raises(AcpDriverError, match="closed"):
                await c.call("prompt", {"sessionId": sid, "prompt": text("exit")})
            gone = await c.next(is_type("exited"))
            assert gone["code"] == 3
            assert await c.close() == 3


async def test_an_agent_killed_by_a_signal_reports_it():
    with trio.fail_after(BOUND):
        async with open_acp_client(ECHO) as c:
            await c.call("initialize", INIT)
            await c.kill("SIGKILL")
            assert await c.close() == -9


async def test_a_missing_sdk_fails_the_test_never_skips(tmp_path, monkeypatch):
    monkeypatch.setenv("IKIGAI_ACP_SDK", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="npm install"):
        async with open_acp_client(ECHO):
            pass
