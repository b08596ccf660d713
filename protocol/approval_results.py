"""What ``approvals.list`` and ``agent.approve`` answer. Re-exported by
protocol.results; TypedDicts, as there."""

# no ``from __future__ import annotations``: TypedDict must see its types
from typing import Any, Literal, TypedDict


class Approval(TypedDict):
    """One pending approval (``approvals.list``)."""

    approval: str
    agent: str
    agent_name: str
    turn: str
    tool: str
    arguments: dict[str, Any]
    rule: str
    policy: str
    created_at: str


class Approved(TypedDict):
    approval: str
    agent: str
    decision: Literal["allow", "deny"]
