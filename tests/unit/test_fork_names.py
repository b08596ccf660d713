"""The names a fan-out gives its children (agents.fork_names)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agents import fork_names
from store import MAX_NAME


def test_no_name_one_child_and_many():
    assert fork_names(None, 3) == [None, None, None]
    assert fork_names("w", 1) == ["w"]
    assert fork_names("w", 3) == ["w-1", "w-2", "w-3"]


@given(st.text(alphabet="ab-", min_size=1, max_size=MAX_NAME), st.integers(2, 1000))
def test_numbered_names_fit_are_unique_and_keep_their_number(name, count):
    names = fork_names(name, count)
    assert len(names) == count == len(set(names))
    for i, n in enumerate(names, 1):
        assert n is not None and len(n) <= MAX_NAME and n.endswith(f"-{i}")
