"""``ikictl policy AGENT [NAME|--default]`` against a real daemon: the chain
shown, set, given back to the default, a fork's narrowing its parent's, and a
bad name or a bad combination refused (exit 2) with nothing changed."""

from __future__ import annotations

from .conftest import Daemon


def test_policy_is_shown_set_and_given_back(daemon: Daemon) -> None:
    # the daemon's config makes yolo the default (tests/ikictl/conftest.py)
    uuid = daemon.ikictl("new", "--name", "pol-a", "-q").out.strip()
    assert daemon.ikictl("policy", "pol-a").out.startswith("pol-a: policy yolo  (YOLO")
    assert daemon.ikictl("policy", "pol-a", "--json").json() == {"agent": uuid, "policy": ["yolo"]}

    assert daemon.ikictl("policy", "pol-a", "default").out == "pol-a: policy default\n"
    assert daemon.ikictl("show", "pol-a", "--json").json()["policy"] == ["default"]
    assert daemon.ikictl("policy", "pol-a").out == "pol-a: policy default\n"

    # a fork's own policy comes after its parent's: it can only narrow them
    daemon.ikictl("fork", "pol-a", "--name", "pol-k", "-q")
    assert daemon.ikictl("policy", "pol-k", "yolo", "--json").json()["policy"] == ["default", "yolo"]
    assert daemon.ikictl("policy", "pol-k", "--default").out == "pol-k: policy default (its default)\n"

    assert daemon.ikictl("policy", "pol-a", "--default").out == "pol-a: policy yolo (its default)\n"
    assert daemon.ikictl("show", "pol-a", "--json").json()["policy"] == ["yolo"]


def test_a_bad_policy_is_refused_with_nothing_changed(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "pol-b", "-q")
    daemon.ikictl("policy", "pol-b", "default")
    err = daemon.ikictl("policy", "pol-b", "nope", code=2).err
    assert "policy: unknown policy 'nope' (known: " in err and "default" in err and "yolo" in err
    assert "give NAME or --default" in daemon.ikictl("policy", "pol-b", "yolo", "--default", code=2).err
    assert daemon.ikictl("show", "pol-b", "--json").json()["policy"] == ["default"]
    assert daemon.ikictl("policy", "no-such-agent", "yolo", code=4).err
