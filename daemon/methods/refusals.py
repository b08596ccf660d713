"""The one mapping of the refusals the layers below raise on purpose (no such
agent, busy, bad model text, a store rule) to protocol error codes. Anything
else is a bug: the connection logs it with its traceback and answers -32603."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import protocol as p
from agents import AgentError
from agents.schedules import RuleError
from store import AgentNotFound, InvalidBudget, ScheduleNotFound, StoreError

__all__ = ["refusals"]

# the first match wins: subclasses before their bases
_REFUSALS: tuple[tuple[type[Exception], int], ...] = (
    (AgentNotFound, p.AGENT_NOT_FOUND),
    (ScheduleNotFound, p.SCHEDULE_NOT_FOUND),
    (RuleError, p.INVALID_PARAMS),  # a schedule's time rule: its message names the field
    (InvalidBudget, p.INVALID_PARAMS),  # a budget's value names its field
    (AgentError, p.REFUSED),
    (StoreError, p.REFUSED),
)


@contextmanager
def refusals() -> Iterator[None]:
    try:
        yield
    except p.RpcError:
        raise
    except tuple(kind for kind, _ in _REFUSALS) as e:
        code = next(code for kind, code in _REFUSALS if isinstance(e, kind))
        raise p.RpcError(code, str(e)) from None
