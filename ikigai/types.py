"""The types of what the client returns: the daemon's result TypedDicts
(protocol.results, the protocol's one definition) and the events of a
subscription. Import them for annotations:

    from ikigai.types import TurnOutcome, AgentEvent
"""

# no ``from __future__ import annotations``: TypedDict must see NotRequired
from typing import Any, TypedDict

from protocol.results import *  # noqa: F403


class AgentEvent(TypedDict):
    """One ``agent.event`` notification's params: ``event["type"]`` is
    text_delta, thinking_delta, tool_started, tool_finished, turn_started,
    turn_ended, state, ... (docs/protocol.md, "Events")."""

    subscription: int
    agent: str
    turn: str | None
    seq: int
    event: dict[str, Any]
