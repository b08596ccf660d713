"""``ikictl new/fork --budget --max-tokens --max-turns``, ``ikictl budget``,
and spend against each budget in ``show`` and ``usage`` (the real daemon)."""

from __future__ import annotations

import json

from .conftest import Daemon


def test_budgets_set_shown_enforced_and_raised(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "bud", "--max-turns", "1", "hi")
    # the second turn would be the tree's second: not made, exit 1, the message says how to raise it
    r = daemon.ikictl("send", "bud", "again", code=1)
    assert "budget exceeded: the tree budget of agent bud" in r.err
    assert "ikictl budget bud --max-turns 2" in r.err
    assert "[budget_exceeded" in r.err
    assert "budget: 1 of 1 turns (tree)" in daemon.ikictl("show", "bud").lines
    assert "budget: 1 of 1 turns (tree)" in daemon.ikictl("usage", "bud").lines
    # bad input: exit 2 naming the argument, the budget in force untouched
    r = daemon.ikictl("budget", "bud", "-3", code=2)
    assert "USD" in r.err and "positive" in r.err
    r = daemon.ikictl("budget", "bud", "--max-turns", "0", code=2)
    assert "--max-turns" in r.err
    r = daemon.ikictl("budget", "bud", "nan", code=2)
    assert "USD" in r.err
    assert daemon.ikictl("budget", "bud").lines == ["budget: 1 of 1 turns (tree)"]
    # raised live: the agent goes on
    assert daemon.ikictl("budget", "bud", "--max-turns", "5").lines == [
        "budget: 1 of 5 turns (tree)"
    ]
    daemon.ikictl("send", "bud", "go on")
    # a fork is never given more than the tree has left (3 turns)
    r = daemon.ikictl("fork", "bud", "--max-turns", "4", code=2)
    assert "has left: 3 turns of its 5" in r.err
    kid = daemon.ikictl("fork", "bud", "--name", "bud-kid", "--max-turns", "3", "--json").json()
    assert kid["agent"]["name"] == "bud-kid"
    shown = json.loads(daemon.ikictl("show", "bud-kid", "--json").out)
    assert [b["name"] for b in shown["budget"]["budgets"]] == ["bud-kid", "bud"]
    assert daemon.ikictl("budget", "bud", "--clear").lines == ["bud: no budget"]
