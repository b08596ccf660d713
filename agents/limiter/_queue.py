"""The waiting calls, in the order they are served: every ``interactive``
call before any ``background`` one; within a priority, round-robin across
trees (a tree = a root agent and its descendants), oldest first within a
tree. A tree whose last waiting call is served leaves the rotation and comes
back at its end, so between a call's arrival and its start every other tree
starts at most one call per call queued ahead of it in its own tree, plus one.

Pure data: no clock, no trio. Push, head and pop are O(1); removing a
cancelled call is O(calls of its tree).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import Any

PRIORITIES = ("interactive", "background")
_LEVEL = {p: i for i, p in enumerate(PRIORITIES)}


def level_of(priority: str) -> int:
    try:
        return _LEVEL[priority]
    except KeyError:
        raise ValueError(
            f"priority must be one of {', '.join(PRIORITIES)}, not {priority!r}"
        ) from None


class Waiter:
    """One call: what it asks for, and the trio plumbing its task waits on
    (kept here, untyped, so this module needs no trio)."""

    __slots__ = (
        "agent",
        "demand",
        "granted",
        "granted_at",
        "group",
        "info",
        "level",
        "mark",
        "on_wait",
        "reported",
        "reserved",
        "taken",
        "tree",
        "wake",
        "wake_at",
    )

    def __init__(
        self,
        tree: object,
        agent: object,
        level: int,
        demand: dict[str, float],
        on_wait: Callable[[Any], None] | None,
    ):
        self.tree = tree
        self.agent = agent
        self.level = level
        self.demand = demand  # kind -> amount: requests, input_tokens, ...
        self.on_wait = on_wait
        self.granted = False
        self.granted_at = 0.0
        self.reserved: dict[str, float] = {}  # kind -> what it holds of the buckets now
        self.taken: list[tuple[Any, str]] = []  # (bucket, kind) it took from
        self.mark: dict[str, float] = {}  # the limiter's spend per kind before its group
        self.group = 0.0  # when its group of calls started
        self.wake: Any = None  # trio.Event, set to wake the waiting task
        self.wake_at = float("inf")  # when its task re-checks (the head's timer)
        self.info: Any = None  # a WaitInfo its task has yet to report
        self.reported: Any = None  # (WaitInfo, time) last reported


class FairQueue:
    def __init__(self) -> None:
        # one rotation per priority: tree -> its calls, oldest first; the
        # OrderedDict's order is the rotation's (first = next to serve)
        self._levels: tuple[OrderedDict[object, deque[Waiter]], ...] = tuple(
            OrderedDict() for _ in PRIORITIES
        )
        self._counts = [0] * len(PRIORITIES)

    def __len__(self) -> int:
        return sum(self._counts)

    def counts(self) -> dict[str, int]:
        return dict(zip(PRIORITIES, self._counts, strict=True))

    def push(self, w: Waiter) -> None:
        rotation = self._levels[w.level]
        calls = rotation.get(w.tree)
        if calls is None:
            calls = rotation[w.tree] = deque()
        calls.append(w)
        self._counts[w.level] += 1

    def head(self) -> Waiter | None:
        for rotation in self._levels:
            if rotation:
                return rotation[next(iter(rotation))][0]
        return None

    def pop(self) -> Waiter:
        """The head, out of the queue; its tree goes to the rotation's end."""
        for i, rotation in enumerate(self._levels):
            if rotation:
                tree, calls = rotation.popitem(last=False)
                w = calls.popleft()
                if calls:
                    rotation[tree] = calls
                self._counts[i] -= 1
                return w
        raise IndexError("pop from an empty queue")

    def remove(self, w: Waiter) -> bool:
        """Take ``w`` out wherever it is; False if it was not queued."""
        rotation = self._levels[w.level]
        calls = rotation.get(w.tree)
        if calls is None:
            return False
        try:
            calls.remove(w)
        except ValueError:
            return False
        if not calls:
            del rotation[w.tree]
        self._counts[w.level] -= 1
        return True

    def order(self) -> Iterator[Waiter]:
        """Every waiting call in the order it would be served if nothing new came."""
        for rotation in self._levels:
            lists = [list(calls) for calls in rotation.values()]
            depth = 0
            while lists:
                deeper = []
                for calls in lists:
                    yield calls[depth]
                    if len(calls) > depth + 1:
                        deeper.append(calls)
                lists = deeper
                depth += 1
