"""Two things an editor may do that the happy path never does: load a session
again while one of its prompts still waits for its turn, and send an
``initialize`` whose ``clientCapabilities`` is not an object.

The official TypeScript client drives the real ``ikictl acp``; the real daemon
(policy ``default``: bash asks) runs on the fake provider."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from tests.acp._ikigai import (  # noqa: F401 - editor_fixture is the fixture `editor`
    Editor,
    background,
    editor_fixture,
    new_session,
    text,
)
from tests.acp.driver import is_type
from tests.fakes.demo import TOOL_COMMAND

BOUND = 60  # seconds per scenario: generous, CI machines are loaded
TOOL_PROMPT = "run a command for me"
AFTER_TOOL = "The tool ran and printed: hello from a tool"


async def test_a_prompt_waiting_while_its_session_is_loaded_again_gets_its_answer(
    editor: Editor, tmp_path: Path
) -> None:
    """The prompt's answer comes from the session that replaced its own: it
    neither hangs on the replaced one nor ends as cancelled."""
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            async with trio.open_nursery() as n:
                turn = background(n, c, "prompt", {"sessionId": sid, "prompt": text(TOOL_PROMPT)})
                first = await c.next(is_type("permission"))
                assert not turn.done.is_set()
                await c.call(
                    "loadSession", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
                )
                # the loaded session asks about the approval still waiting
                asked = await c.next(
                    lambda m: m.get("type") == "permission" and m["rid"] != first["rid"]
                )
                assert TOOL_COMMAND in json.dumps(asked["params"]["toolCall"])
                assert not turn.done.is_set()
                await c.answer(asked["rid"], {"outcome": "selected", "optionId": "allow_once"})
                assert await turn.wait() == {"stopReason": "end_turn"}
            assert c.message_text(sid).endswith(AFTER_TOOL)


async def test_initialize_with_capabilities_that_are_not_an_object_is_answered(
    editor: Editor, tmp_path: Path
) -> None:
    """The SDK passes ``[]``, ``0`` or ``""`` through as they are: the
    capabilities are taken as none, not answered with an internal error."""
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            for n, odd in enumerate(([], 0, "", None)):
                rid = f"caps-{n}"
                line = {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "initialize",
                    "params": {"protocolVersion": 1, "clientCapabilities": odd},
                }
                await c.raw(json.dumps(line))
                got = (
                    await c.next(
                        lambda m, rid=rid: m.get("type") == "raw_reply"
                        and m["message"].get("id") == rid
                    )
                )["message"]
                assert "error" not in got, got
                assert got["result"]["protocolVersion"] == 1


async def test_a_notification_with_bad_params_is_one_line_on_stderr(
    editor: Editor, tmp_path: Path
) -> None:
    """Nobody can be answered: no traceback, one line saying what was
    ignored, and the next request is answered as ever."""
    with trio.fail_after(BOUND):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            await c.raw(json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": 5}}))
            await c.raw(json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {}}))
            listed = await c.call("listSessions", {})
            assert sid in [s["sessionId"] for s in listed["sessions"]]
            assert await c.close() == 0
            said = c.stderr()
    assert said.count("notification 'session/cancel' ignored: ") == 2, said
    assert "Traceback" not in said, said
