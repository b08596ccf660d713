"""With no daemon answering, ikictl starts one (same IKIGAI_HOME) unless told not to."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Daemon, clean_env


def test_autostart_starts_a_daemon_and_stop_stops_it(home: Path) -> None:
    d = Daemon(home, clean_env(home))
    try:
        r = d.ikictl("ls")
        assert r.out == "no agents (create one with `ikictl new`)\n"
        # the autostart says so, on stderr only, once
        assert r.err.startswith("started ikigaid (pid ") and r.err.count("\n") == 1
        assert d.ikictl("ls").err == ""
        st = d.ikictl("status", "--json").json()
        assert st["socket"] == str(home / "run" / "ikigai.sock")  # type: ignore[index]
        assert st["database"] == f"sqlite:///{home}/ikigai.db"  # type: ignore[index]
        r = d.ikictl("send", "--no-autostart", "nobody", "hi", code=4)
        # a prompt through an autostarted daemon reaches the fake provider
        d.ikictl("new", "--name", "auto")
        assert d.ikictl("send", "auto", "--no-thinking", "hi").lines[0] == "Hello! I am the offline demo model. Ask me anything."
    finally:
        r = d.ikictl("daemon", "stop", code=None)
    assert r.code == 0 and r.out.startswith("ikigaid stopped (pid ")
    assert d.ikictl("daemon", "stop").out.startswith("ikigaid is not running")
    d.ikictl("--no-autostart", "ls", code=3)


def test_daemon_start_is_idempotent(home: Path) -> None:
    d = Daemon(home, clean_env(home))
    try:
        r = d.ikictl("daemon", "start")
        assert r.out.startswith("ikigaid started (pid ")
        assert d.ikictl("daemon", "start").out.startswith("ikigaid is already running (pid ")
        assert json.loads(d.ikictl("daemon", "start", "--json").out)["started"] is False
    finally:
        d.ikictl("daemon", "stop")


def test_config_or_env_can_turn_autostart_off(home: Path) -> None:
    cfg = json.loads((home / "config.json").read_text())
    (home / "config.json").write_text(json.dumps({**cfg, "autostart": False}))
    d = Daemon(home, clean_env(home))
    r = d.ikictl("ls", code=3)
    assert "no daemon answers at" in r.err
    (home / "config.json").write_text(json.dumps(cfg))
    env = {**clean_env(home), "IKIGAI_AUTOSTART": "0"}
    Daemon(home, env).ikictl("ls", code=3)


def test_autostart_failure_is_exit_3_with_a_hint(home: Path) -> None:
    (home / "config.json").write_text('{"default_model": 42}')  # the daemon refuses to start
    d = Daemon(home, clean_env(home))
    r = d.ikictl("ls", code=3)
    assert r.err.startswith("ikictl: started ikigaid but it exited with status ")
    assert "ikictl daemon logs" in r.err
