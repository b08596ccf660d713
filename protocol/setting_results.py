"""Results of the methods that set one thing of an agent (``agent.set_policy``,
``agent.set_priority``). Re-exported by protocol.results; TypedDicts, as there."""

# no ``from __future__ import annotations``: TypedDict must see its types
from typing import TypedDict


class PolicySet(TypedDict):
    """``agent.set_policy``."""

    agent: str  # its uuid
    policy: list[str]  # its chain now, ancestors' first (as AgentInfo.policy)


class PrioritySet(TypedDict):
    """``agent.set_priority``."""

    agent: str  # its uuid
    priority: str | None
