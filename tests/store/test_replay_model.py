"""Replay against a model of what the agents hold in memory.

Random sequences of what actors do — whole turns, cancelled turns, marks,
rewinds, clears, forks, model switches — run against the store and against a
plain in-memory list per agent, the way an actor keeps its context. After
every sequence, and again from a freshly opened Store (a restart), replay must
give back each agent's list exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.types import Message
from store import NoSuchMark, Store

from .helpers import assistant, same, tool_results, user


@dataclass
class Memory:
    """One actor's context, kept the way an actor would keep it."""

    uuid: str
    messages: list[Message] = field(default_factory=list)
    marks: list[tuple[str | None, int]] = field(default_factory=list)  # (label, length then)


LABELS = st.sampled_from(["a", "b", None])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.integers(0, 2), st.booleans(), st.integers(0, 7)),
        st.tuples(st.just("mark"), LABELS, st.integers(0, 7)),
        st.tuples(st.just("rewind"), LABELS, st.integers(0, 7)),
        st.tuples(st.just("clear"), st.integers(0, 7)),
        st.tuples(st.just("fork"), st.integers(0, 7)),
        st.tuples(st.just("switch"), st.integers(0, 7)),
    ),
    min_size=1,
    max_size=12,
)


def run(store: Store, ops: list[tuple], run_id: int) -> list[Memory]:
    first = store.create_agent(f"m{run_id}-0", provider="anthropic", model="claude-test").uuid
    agents = [Memory(first)]
    n = 0
    for op in ops:
        n += 1
        mem = agents[op[-1] % len(agents)]
        kind = op[0]
        if kind == "turn":
            _, tools, cancelled, _ = op
            tag = f"{run_id}.{n}"
            u = user(f"q{tag}")
            start = store.append_user(mem.uuid, u).id
            turn = [u]
            a = assistant(f"a{tag}", tool_calls=tools, tag=tag)
            store.append_assistant(mem.uuid, a)
            turn.append(a)
            if tools:
                r = tool_results(a)
                store.append_tool_results(mem.uuid, r)
                turn.append(r)
            if cancelled:
                store.mark_interrupted(mem.uuid, start, reason="cancel")
            else:
                mem.messages += turn
        elif kind == "mark":
            store.mark(mem.uuid, op[1])
            mem.marks.append((op[1], len(mem.messages)))
        elif kind == "rewind":
            label = op[1]
            found = [i for i, (lb, _) in enumerate(mem.marks) if label is None or lb == label]
            if not found:
                with pytest.raises(NoSuchMark):
                    store.rewind(mem.uuid, label)
                continue
            i = found[-1]
            store.rewind(mem.uuid, label)
            del mem.messages[mem.marks[i][1] :]
            del mem.marks[i + 1 :]
        elif kind == "clear":
            store.clear(mem.uuid)
            mem.messages.clear()
            mem.marks.clear()
        elif kind == "fork":
            child = store.fork(mem.uuid, name=f"m{run_id}-{n}").uuid
            agents.append(Memory(child, list(mem.messages), list(mem.marks)))
        elif kind == "switch":
            rec = store.get_agent(mem.uuid)
            store.switch_model(mem.uuid, model=rec.model + "x")
    return agents


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_replay_matches_memory(store: Store, open_store, ops: list[tuple]) -> None:
    run_id = len(store.list_agents(include_dead=True))
    agents = run(store, ops, run_id)
    for mem in agents:
        same(store.replay(mem.uuid), mem.messages)
    restarted = open_store()
    for mem in agents:
        same(restarted.replay(mem.uuid), mem.messages)
