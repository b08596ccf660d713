"""``ikictl acp`` as an editor uses it: the official TypeScript ACP client
(tests/acp/driver.py) drives the real ``ikictl acp``, which drives the real
daemon, whose model is the fake provider's demo responder (tests/fakes/demo.py:
a short answer, and a ``bash`` call ``echo hello from a tool`` when the
prompt asks for a tool or a command). docs/acp.md is the contract.

Every scenario also asserts ``c.problems() == []``: the official client took
every message the agent sent."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.acp._ikigai import (  # noqa: F401 - editor_fixture is the fixture `editor`
    INIT,
    Editor,
    background,
    chunk_text,
    editor_fixture,
    index_of,
    is_update,
    kinds,
    new_session,
    prompt,
    text,
    wait_for_text,
    wait_idle,
)
from tests.acp.driver import AcpClient, AcpError, Message, is_type
from tests.fakes.demo import TOOL_COMMAND, answer_for

BOUND = 60  # seconds per scenario: generous, CI machines are loaded
HELLO = answer_for("hi")  # the demo's answer to a greeting
# its answer to "a long story", a piece every quarter second (half a minute)
STORY = "Once upon a time an agent told a very long story, one slow word at a time. " * 12
TOOL_PROMPT = "run a command for me"
TOOL_TITLE = f"$ {TOOL_COMMAND}"
TOOL_OUTPUT = "hello from a tool"
AFTER_TOOL = f"The tool ran and printed: {TOOL_OUTPUT}"
OPTIONS = ["allow_once", "allow_always", "reject_once"]
# a 1x1 PNG
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


def _option(option: str) -> dict[str, str]:
    return {"outcome": "selected", "optionId": option}


def _tool_updates(c: AcpClient, sid: str) -> list[dict[str, Any]]:
    return [
        u
        for u in (u["update"] for u in c.updates(sid))
        if u["sessionUpdate"] in ("tool_call", "tool_call_update")
    ]


def _result_index(c: AcpClient, stop_reason: str = "end_turn") -> int:
    """Where the (last) prompt answer with ``stop_reason`` is in arrival order."""
    return max(
        i
        for i, m in enumerate(c.messages)
        if m.get("type") == "result" and (m.get("result") or {}).get("stopReason") == stop_reason
    )


# ------------------------------------------------------------------ 1, 2: opening


async def test_initialize_names_ikigai_and_protocol_version_1(
    editor: Editor, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            init = await c.call("initialize", INIT)
            assert init["protocolVersion"] == 1
            caps = init["agentCapabilities"]
            assert caps["loadSession"] is True
            assert caps["promptCapabilities"]["image"] is True
            assert caps["promptCapabilities"]["embeddedContext"] is True
            assert caps["promptCapabilities"].get("audio", False) is False
            assert set(caps["sessionCapabilities"]) >= {"list", "fork", "resume", "close"}
            assert init["agentInfo"]["name"] == "ikigai"
            assert init["authMethods"] == []
            # a version ikigai does not speak: the answer names the one it does
            future = await c.call("initialize", {"protocolVersion": 99, "clientCapabilities": {}})
            assert future["protocolVersion"] == 1
            assert c.problems() == []
            assert await c.close() == 0


async def test_a_new_session_is_a_live_agent_working_in_the_editors_folder(
    editor: Editor, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            await c.call("initialize", INIT)
            created = await c.call("newSession", {"cwd": str(tmp_path), "mcpServers": []})
            sid = created["sessionId"]
            shown = await editor.json("show", sid)
            assert shown["uuid"] == sid
            assert shown["status"] == "running"
            assert shown["cwd"] == str(tmp_path)

            options = {o["id"]: o for o in created["configOptions"]}
            assert set(options) == {"model", "thinking", "policy"}
            assert options["model"]["currentValue"] == f"{shown['provider']}/{shown['model']}"
            assert options["model"]["currentValue"] == "anthropic/claude-sonnet-4-5"
            assert options["model"]["currentValue"] in [
                o["value"] for o in options["model"]["options"]
            ]
            assert options["thinking"]["currentValue"] == "med" == shown["thinking_level"]
            assert options["policy"]["currentValue"] == "default" == shown["policy"][-1]
            policies = [o["value"] for o in options["policy"]["options"]]
            assert {"default", "yolo"} <= set(policies)
            # the modes are the policies, for editors that predate config options
            assert created["modes"]["currentModeId"] == "default"
            assert [m["id"] for m in created["modes"]["availableModes"]] == policies
            assert c.problems() == []


# ------------------------------------------------------------------ 3: a prompt


async def test_a_prompts_answer_streams_before_its_result(editor: Editor, tmp_path: Path) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            answer = await prompt(c, sid, "hi")
            assert answer == {"stopReason": "end_turn"}
            # the whole answer was there when the result came: nothing trails it
            assert c.message_text(sid) == HELLO
            chunks = kinds(c, sid, "agent_message_chunk")
            assert len(chunks) > 1  # streamed, not one block at the end
            done = _result_index(c)
            assert index_of(c, is_update(sid, "agent_message_chunk")) < done
            last = max(i for i, m in enumerate(c.messages) if is_update(sid)(m))
            assert last < done
            # thinking is on (claude-sonnet-4-5/med): the model's thoughts came as thoughts
            assert "The user asks: hi." in chunk_text(c, sid, "agent_thought_chunk")
            # the editor's own prompt is not echoed back to it
            assert kinds(c, sid, "user_message_chunk") == []
            assert c.problems() == []


# ------------------------------------------------------------------ 4, 5: permissions


async def _ask_about_the_tool(c: AcpClient, sid: str) -> Message:
    """The permission request of a tool prompt, checked against the tool_call
    announced before it."""
    ask = await c.next(is_type("permission"))
    announced = kinds(c, sid, "tool_call")
    assert len(announced) == 1
    call = announced[0]
    assert call["title"] == TOOL_TITLE
    assert call["kind"] == "execute"
    assert call["status"] == "pending"
    assert call["rawInput"] == {"command": TOOL_COMMAND}
    assert index_of(c, is_update(sid, "tool_call")) < c.messages.index(ask)
    assert ask["params"]["sessionId"] == sid
    assert ask["params"]["toolCall"]["toolCallId"] == call["toolCallId"]
    assert [o["optionId"] for o in ask["params"]["options"]] == OPTIONS
    assert [o["kind"] for o in ask["params"]["options"]] == OPTIONS
    return ask


async def test_a_tool_call_allowed_once_in_the_editor_runs(editor: Editor, tmp_path: Path) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            async with trio.open_nursery() as n:
                turn = background(n, c, "prompt", {"sessionId": sid, "prompt": text(TOOL_PROMPT)})
                ask = await _ask_about_the_tool(c, sid)
                assert not turn.done.is_set()  # the turn waits for the editor
                await c.answer(ask["rid"], _option("allow_once"))
                assert await turn.wait() == {"stopReason": "end_turn"}
            call_id = ask["params"]["toolCall"]["toolCallId"]
            updates = [u for u in _tool_updates(c, sid) if u["sessionUpdate"] == "tool_call_update"]
            assert [u["status"] for u in updates] == ["in_progress", "completed"]
            assert all(u["toolCallId"] == call_id for u in updates)
            assert updates[-1]["content"][0]["content"]["text"].strip() == TOOL_OUTPUT
            assert c.message_text(sid).endswith(AFTER_TOOL)
            assert c.problems() == []


async def test_a_tool_call_rejected_in_the_editor_fails_and_is_recorded(
    editor: Editor, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            async with trio.open_nursery() as n:
                turn = background(n, c, "prompt", {"sessionId": sid, "prompt": text(TOOL_PROMPT)})
                ask = await _ask_about_the_tool(c, sid)
                await c.answer(ask["rid"], _option("reject_once"))
                assert await turn.wait() == {"stopReason": "end_turn"}
            ended = _tool_updates(c, sid)[-1]
            assert ended["toolCallId"] == ask["params"]["toolCall"]["toolCallId"]
            assert ended["status"] == "failed"
            assert "rejected in the editor" in ended["content"][0]["content"]["text"]
            assert not any(u.get("status") == "completed" for u in _tool_updates(c, sid))
            history = await editor.json("history", sid)
            asked = [r for r in history["messages"] if r["kind"] == "permission"]
            assert len(asked) == 1
            assert asked[0]["data"]["decision"] == "deny"
            assert asked[0]["data"]["tool"] == "bash"
            assert asked[0]["data"]["reason"] == "rejected in the editor"
            assert c.problems() == []


async def test_always_allow_lets_the_next_call_run_without_asking(
    editor: Editor, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            async with trio.open_nursery() as n:
                turn = background(n, c, "prompt", {"sessionId": sid, "prompt": text(TOOL_PROMPT)})
                ask = await _ask_about_the_tool(c, sid)
                await c.answer(ask["rid"], _option("allow_always"))
                assert await turn.wait() == {"stopReason": "end_turn"}
            assert await prompt(c, sid, "run that command again") == {"stopReason": "end_turn"}
            assert [m for m in c.messages if m["type"] == "permission"] == [ask]
            statuses = [u["status"] for u in _tool_updates(c, sid)]
            assert statuses == ["pending", "in_progress", "completed"] * 2
            history = await editor.json("history", sid)
            rows = [r["data"] for r in history["messages"] if r["kind"] == "permission"]
            assert [r["decision"] for r in rows] == ["allow", "allow"]
            assert rows[1]["by"] == "remembered for this agent"
            assert c.problems() == []


async def test_an_approval_answered_elsewhere_withdraws_the_editors_request(
    editor: Editor, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            async with trio.open_nursery() as n:
                turn = background(n, c, "prompt", {"sessionId": sid, "prompt": text(TOOL_PROMPT)})
                ask = await _ask_about_the_tool(c, sid)
                await c.answer(ask["rid"], never=True)  # the editor's dialog stays open
                pending = [a for a in await editor.json("approvals") if a["agent"] == sid]
                assert len(pending) == 1
                assert pending[0]["arguments"] == {"command": TOOL_COMMAND}
                await editor.ikictl("approve", pending[0]["approval"])
                gone = await c.next(is_type("permission_aborted"))
                assert gone["rid"] == ask["rid"]
                assert await turn.wait() == {"stopReason": "end_turn"}
            assert _tool_updates(c, sid)[-1]["status"] == "completed"
            assert c.message_text(sid).endswith(AFTER_TOOL)
            assert await editor.json("approvals", sid) == []
            assert c.problems() == []


# ------------------------------------------------------------------ 6: cancel


async def test_cancel_ends_a_slow_turn_as_cancelled(editor: Editor, tmp_path: Path) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            async with trio.open_nursery() as n:
                # the demo tells a story slowly (half a minute): the turn is streaming
                turn = background(
                    n, c, "prompt", {"sessionId": sid, "prompt": text("tell me a long story")}
                )
                await c.next(is_update(sid, "agent_message_chunk"))
                await c.cancel(sid)
                assert await turn.wait() == {"stopReason": "cancelled"}
            told = c.message_text(sid)
            assert told and STORY.startswith(told)  # a beginning of the story, no more
            shown = await editor.json("show", sid)
            # cancelled at once, not at a boundary: the daemon calls that interrupted
            assert shown["last_turn"]["status"] == "interrupted"
            assert shown["status"] == "running"  # the agent goes on: only its turn ended
            assert c.problems() == []


# ------------------------------------------------------ 7, 8, 9: sessions made elsewhere


async def test_an_agent_made_by_ikictl_is_listed_and_loaded_with_its_history(
    editor: Editor, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        made = await editor.ikictl(
            "new", "--name", "scripted", "--yolo", "--cwd", str(tmp_path), "-q", "hello"
        )
        agent = made.out.strip()
        await editor.ikictl("send", agent, TOOL_PROMPT)
        async with editor.acp(cwd=tmp_path) as c:
            await c.call("initialize", INIT)
            listed = await c.call("listSessions", {})
            mine = [s for s in listed["sessions"] if s["sessionId"] == agent]
            assert len(mine) == 1
            assert mine[0]["title"] == "scripted"
            assert mine[0]["cwd"] == str(tmp_path)
            here = await c.call("listSessions", {"cwd": str(tmp_path)})
            assert [s["sessionId"] for s in here["sessions"]] == [agent]

            loaded = await c.call(
                "loadSession", {"sessionId": agent, "cwd": str(tmp_path), "mcpServers": []}
            )
            assert {o["id"] for o in loaded["configOptions"]} == {"model", "thinking", "policy"}
            # the replay came before the load's answer
            answered = max(i for i, m in enumerate(c.messages) if m.get("type") == "result")
            replayed = [m["params"]["update"] for m in c.messages[:answered] if is_update(agent)(m)]
            assert replayed == [u["update"] for u in c.updates(agent)]
            said = [
                (u["sessionUpdate"], u["content"]["text"])
                for u in replayed
                if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
            ]
            assert said == [
                ("user_message_chunk", "hello"),
                ("agent_message_chunk", answer_for("hello")),
                ("user_message_chunk", TOOL_PROMPT),
                ("agent_message_chunk", "Let me run that for you."),
                ("agent_message_chunk", AFTER_TOOL),
            ]
            tools = [u for u in replayed if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
            assert [(u["sessionUpdate"], u["status"]) for u in tools] == [
                ("tool_call", "pending"),
                ("tool_call_update", "completed"),
            ]
            assert tools[0]["title"] == TOOL_TITLE
            assert tools[0]["toolCallId"] == tools[1]["toolCallId"]
            assert tools[1]["content"][0]["content"]["text"].strip() == TOOL_OUTPUT
            # the tool call sits between the answer that made it and the one that read it
            assert replayed.index(tools[0]) < replayed.index(tools[1]) < len(replayed) - 1

            before = len(c.message_text(agent))
            assert await prompt(c, agent, "hi") == {"stopReason": "end_turn"}
            assert c.message_text(agent)[before:] == HELLO

            with pytest.raises(AcpError) as unknown:
                await c.call(
                    "loadSession",
                    {"sessionId": str(uuid.uuid4()), "cwd": str(tmp_path), "mcpServers": []},
                )
            assert unknown.value.code == -32602
            assert c.problems() == []


async def test_two_editors_on_one_agent_see_the_same_stream(editor: Editor, tmp_path: Path) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as a, editor.acp(cwd=tmp_path) as b:
            sid = await new_session(a, tmp_path)
            await b.call("initialize", INIT)
            await b.call("loadSession", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
            words = "what is ikigai?"
            assert await prompt(a, sid, words) == {"stopReason": "end_turn"}
            assert a.message_text(sid) == answer_for(words)
            await wait_for_text(b, sid, answer_for(words))
            assert b.message_text(sid) == a.message_text(sid)
            # B did not send the prompt: it is shown as someone else's
            assert [u["content"]["text"] for u in kinds(b, sid, "user_message_chunk")] == [words]
            assert kinds(a, sid, "user_message_chunk") == []

            assert await b.close() == 0
            before = len(a.message_text(sid))
            assert await prompt(a, sid, "hi") == {"stopReason": "end_turn"}
            assert a.message_text(sid)[before:] == HELLO
            assert (await editor.json("show", sid))["status"] == "running"
            assert a.problems() == []
            assert b.problems() == []


async def test_an_editor_leaving_mid_turn_leaves_the_agent_working(
    editor: Editor, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            async with trio.open_nursery() as n:
                turn = background(n, c, "prompt", {"sessionId": sid, "prompt": text(TOOL_PROMPT)})
                await _ask_about_the_tool(c, sid)
                assert await c.close() == 0  # the editor quits with the dialog open
                await turn.done.wait()  # its prompt ended with the connection
            assert c.problems() == []
        pending = [a for a in await editor.json("approvals") if a["agent"] == sid]
        assert len(pending) == 1, "the editor's leaving must not answer the approval"
        await editor.ikictl("approve", pending[0]["approval"])
        shown = await wait_idle(editor, sid)
        assert shown["status"] == "running"
        assert shown["last_turn"]["status"] == "completed"
        assert AFTER_TOOL in shown["last_turn"]["reply"]


# ------------------------------------------------------------------ 10, 11: options and forks


async def test_config_options_and_modes_change_the_agent(editor: Editor, tmp_path: Path) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            await c.call("initialize", INIT)
            created = await c.call("newSession", {"cwd": str(tmp_path), "mcpServers": []})
            sid = created["sessionId"]
            set_to = {"sessionId": sid, "configId": "thinking", "value": "high"}
            answer = await c.call("setSessionConfigOption", set_to)
            options = {o["id"]: o for o in answer["configOptions"]}
            assert options["thinking"]["currentValue"] == "high"
            assert (await editor.json("show", sid))["thinking_level"] == "high"

            current = options["model"]["currentValue"]
            other = next(
                o["value"]
                for o in options["model"]["options"]
                if o["value"].startswith("anthropic/") and o["value"] != current
            )
            answer = await c.call(
                "setSessionConfigOption", {**set_to, "configId": "model", "value": other}
            )
            assert {o["id"]: o for o in answer["configOptions"]}["model"]["currentValue"] == other
            shown = await editor.json("show", sid)
            assert f"{shown['provider']}/{shown['model']}" == other

            with pytest.raises(AcpError) as unknown:
                await c.call(
                    "setSessionConfigOption", {**set_to, "configId": "temperature", "value": "1"}
                )
            assert unknown.value.code == -32602
            assert "temperature" in unknown.value.message

            # the mode is the tool policy: yolo runs the call without asking
            assert await c.call("setSessionMode", {"sessionId": sid, "modeId": "yolo"}) == {}
            assert (await editor.json("show", sid))["policy"][-1] == "yolo"
            assert await prompt(c, sid, TOOL_PROMPT) == {"stopReason": "end_turn"}
            assert not [m for m in c.messages if m["type"] == "permission"]
            assert [u["status"] for u in _tool_updates(c, sid)] == [
                "pending",
                "in_progress",
                "completed",
            ]
            assert c.message_text(sid).endswith(AFTER_TOOL)

            # and the policy option says so, and sets it back
            answer = await c.call(
                "setSessionConfigOption", {**set_to, "configId": "policy", "value": "default"}
            )
            assert {o["id"]: o for o in answer["configOptions"]}["policy"][
                "currentValue"
            ] == "default"
            assert (await editor.json("show", sid))["policy"][-1] == "default"
            assert c.problems() == []


async def test_a_fork_is_a_child_agent_and_a_session_of_its_own(
    editor: Editor, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            assert await prompt(c, sid, "hi") == {"stopReason": "end_turn"}
            forked = await c.call(
                "unstable_forkSession", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
            )
            child = forked["sessionId"]
            assert child != sid
            shown = await editor.json("show", child)
            assert shown["uuid"] == child
            assert shown["parent"] == sid
            assert {o["id"] for o in forked["configOptions"]} == {"model", "thinking", "policy"}
            words = f"what is ikigai? (fork {uuid.uuid4().hex[:8]})"
            assert await prompt(c, child, words) == {"stopReason": "end_turn"}
            assert c.message_text(child) == answer_for(words)
            assert c.message_text(sid) == HELLO  # the parent's stream is its own
            # the child has the parent's history: its request carried the greeting
            sent = [r.json for r in editor.fake.requests if words in str(r.json)]
            assert sent and HELLO in str(sent[-1]["messages"])
            assert c.problems() == []


# ------------------------------------------------------------------ 12, 13: what a prompt may hold


async def test_an_embedded_resource_and_an_image_reach_the_model(
    editor: Editor, tmp_path: Path
) -> None:
    marker = f"the secret word is marmalade-{uuid.uuid4().hex[:8]}"
    blocks = [
        {"type": "text", "text": "What is in these?"},
        {
            "type": "resource",
            "resource": {"uri": "file:///work/notes.txt", "mimeType": "text/plain", "text": marker},
        },
        {"type": "image", "mimeType": "image/png", "data": PNG},
    ]
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            assert await c.call("prompt", {"sessionId": sid, "prompt": blocks}) == {
                "stopReason": "end_turn"
            }
            sent = [r for r in editor.fake.requests if marker in r.body.decode("utf-8", "replace")]
            assert len(sent) == 1
            assert sent[0].path == "/v1/messages"
            user = sent[0].json["messages"][-1]
            assert user["role"] == "user"
            words = "\n".join(b["text"] for b in user["content"] if b["type"] == "text")
            assert "What is in these?" in words
            assert f"file:///work/notes.txt:\n```\n{marker}\n```" in words
            pictures = [b["source"] for b in user["content"] if b["type"] == "image"]
            assert pictures == [{"type": "base64", "media_type": "image/png", "data": PNG}]

            audio = [{"type": "audio", "mimeType": "audio/wav", "data": PNG}, *text("listen")]
            count = len(editor.fake.requests)
            with pytest.raises(AcpError) as refused:
                await c.call("prompt", {"sessionId": sid, "prompt": audio})
            assert refused.value.code == -32602
            assert "prompt[0]" in refused.value.message
            assert len(editor.fake.requests) == count  # nothing reached the model
            assert c.problems() == []


async def test_a_prompt_over_the_daemons_limit_is_refused_and_the_session_goes_on(
    editor: Editor, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            huge = "x" * (1024 * 1024 + 10)
            with pytest.raises(AcpError) as refused:
                await prompt(c, sid, huge)
            assert refused.value.code == -32602
            assert "1,048,576" in refused.value.message
            assert huge[:100] not in refused.value.message  # the input is never quoted back
            assert (await editor.json("show", sid))["last_turn"] is None  # no turn began
            assert await prompt(c, sid, "hi") == {"stopReason": "end_turn"}
            assert c.message_text(sid) == HELLO
            assert c.problems() == []
