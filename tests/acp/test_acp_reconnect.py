"""``ikictl acp`` outlives a daemon restart: the editor keeps its sessions.

An editor stays open for days while the daemon restarts under it. The
official TypeScript client drives the real ``ikictl acp``; the real daemon is
stopped and started again between two prompts of one session."""

from __future__ import annotations

from pathlib import Path

import trio

from tests.acp.driver import open_acp_client
from tests.ikictl.conftest import IKICTL, Daemon, start_daemon, stop_daemon

RESTARTED = "[the ikigai daemon restarted: reconnected]\n"
DEMO_HELLO = "Hello! I am the offline demo model."


def _restarted(session: str):  # type: ignore[no-untyped-def]
    def match(m: dict) -> bool:  # type: ignore[type-arg]
        if m.get("type") != "update" or m["params"].get("sessionId") != session:
            return False
        update = m["params"]["update"]
        return update.get("sessionUpdate") == "agent_thought_chunk" and update["content"]["text"] == RESTARTED

    return match


async def _prompt(c, session: str, text: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    return await c.call("prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]})


async def test_a_session_follows_its_agent_across_a_daemon_restart(home: Path) -> None:
    d: Daemon = start_daemon(home)
    with trio.fail_after(90):
        async with open_acp_client([*IKICTL, "acp"], env=d.env, cwd=str(home)) as c:
            await c.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            session = (await c.call("newSession", {"cwd": str(home), "mcpServers": []}))["sessionId"]
            assert (await _prompt(c, session, "hi"))["stopReason"] == "end_turn"
            assert DEMO_HELLO in c.message_text(session)

            stop_daemon(d)
            d = start_daemon(home)
            # the session subscribed again on its own, and said so
            await c.next(_restarted(session), timeout=60)
            before = len(c.message_text(session))
            assert (await _prompt(c, session, "hi again"))["stopReason"] == "end_turn"
            assert DEMO_HELLO in c.message_text(session)[before:]
            assert c.problems() == []
            assert await c.close() == 0
    stop_daemon(d)


async def test_a_request_after_the_daemon_stopped_starts_one(home: Path) -> None:
    """The editor's next request autostarts a daemon, as any ikictl command
    does; a read is sent again on the new connection, so it just works."""
    d: Daemon = start_daemon(home)
    with trio.fail_after(90):
        async with open_acp_client([*IKICTL, "acp"], env=d.env, cwd=str(home)) as c:
            await c.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            session = (await c.call("newSession", {"cwd": str(home), "mcpServers": []}))["sessionId"]
            stop_daemon(d)
            listed = await c.call("listSessions", {})
            assert session in [s["sessionId"] for s in listed["sessions"]]
            assert (home / "run" / "ikigai.sock").exists()
            assert await c.close() == 0
