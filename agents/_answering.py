"""The step of a turn that takes its final answer when the prompt asked for
one matching a schema (agents/_answer.py): stored, checked, corrected once.
A mixin of Turn (turn.py), which holds the state these methods use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from providers.types import (
    Message,
    ProviderError,
    Response,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

from ._answer import Answer, Judged
from .events import Notice

if TYPE_CHECKING:
    from .deps import ActorDeps
    from .events import TurnStatus

_TAKEN = "Answer received."
_SKIPPED = "not run: the final answer was given in the same response"


class AnsweringSteps:
    # set by Turn
    host: Any
    deps: ActorDeps
    id: str
    answer: Answer | None

    async def _final(
        self, msg: Message, response: Response, judged: Judged, calls: list[ToolCallBlock]
    ) -> tuple[TurnStatus, ProviderError | None] | None:
        """Store the answer the model gave and end the turn with it; or, the
        first time it does not match, tell the model why and go on (None)."""
        host, db, answer = self.host, self.deps.db, self.answer
        assert answer is not None
        ok = judged.problem is None
        context = await host.context()
        await db.append_assistant(host.uuid, msg, response, end_turn=ok and judged.call is None)
        context.append(msg)
        if judged.call is not None:
            # every call of the message gets its result, or the next request is invalid
            results = [
                ToolResultBlock(
                    tool_call_id=c.id,
                    content=(_TAKEN if ok else answer.correction(judged))
                    if c is judged.call
                    else _SKIPPED,
                    is_error=c is not judged.call or not ok,
                    name=c.name,
                )
                for c in calls
            ]
            tool_msg = Message(role="tool", content=list(results))
            await db.append_tool_results(host.uuid, tool_msg, end_turn=ok)
            context.append(tool_msg)
        answer.final = judged
        if ok:
            return "completed", None
        if answer.corrected:
            return "error", answer.failure(judged, response.provider)
        answer.corrected = True
        said = f"the answer does not match the schema ({judged.problem}): asking once more"
        host.publish(Notice(text=said), self.id)
        if judged.call is None:
            note = Message(role="user", content=[TextBlock(text=answer.correction(judged))])
            await db.append_user(host.uuid, note)
            context.append(note)
        return None
