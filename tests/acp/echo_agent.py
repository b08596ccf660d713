"""A tiny ACP agent over stdio, written with the Python SDK (``acp``), for the
driver's own tests (tests/acp/test_driver.py): it echoes a prompt's text back
as an ``agent_message_chunk``, then ends the turn.

A few prompts do more, each to exercise one path of the driver:

- ``ask``: asks the client one ``session/request_permission`` first, and
  echoes the outcome (``permission: selected allow`` / ``permission: cancelled``);
- ``read``: asks the client for ``fs/read_text_file`` and echoes the refusal;
- ``exit``: the process exits with status 3 mid-turn (an agent that dies).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any, cast

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    update_agent_message_text,
)
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    PermissionOption,
    ToolCallUpdate,
)

EXIT_STATUS = 3


class EchoAgent:
    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="echo-agent", version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=f"echo-{uuid.uuid4().hex[:8]}")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        if text == "ask":
            text = await self._ask(session_id)
        elif text == "read":
            try:
                await self._conn.read_text_file(path="/etc/hostname", session_id=session_id)
                text = "read: allowed"
            except RequestError as exc:
                text = f"read refused: {exc.code} {exc}"
        elif text == "exit":
            os._exit(EXIT_STATUS)
        await self._conn.session_update(session_id, update_agent_message_text(text))
        return PromptResponse(stop_reason="end_turn")

    async def _ask(self, session_id: str) -> str:
        answer = await self._conn.request_permission(
            session_id,
            ToolCallUpdate(tool_call_id="echo-1", title="echo wants to echo"),
            [
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        if isinstance(outcome, AllowedOutcome):
            return f"permission: selected {outcome.option_id}"
        return "permission: cancelled"

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    # Not all of the acp.Agent protocol on purpose: the SDK answers -32601 for
    # the methods an agent lacks (a test calls one).
    asyncio.run(run_agent(cast(Any, EchoAgent())))
