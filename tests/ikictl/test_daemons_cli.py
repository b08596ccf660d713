"""Several daemons in ikictl (issue 32): ``ikictl daemons``, ``new --on``,
the DAEMON column of ``ls``, ``show``'s ``daemon:`` line, ``status``'s
cluster lines and AGENT_UNAVAILABLE's exit code. The parser and the
rendering with no daemon (results shaped as protocol.cluster_results and
protocol.results say); the params sent and the calls made (a canned
JSON-RPC server on a real Unix socket); then ikictl against two real
ikigaid on one real PostgreSQL database (tests/cluster/conftest.py)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import ikigai
from ikictl import daemons, render
from ikictl.cli import build_parser, main, parse
from tests._ready import READY_TIMEOUT
from tests.cluster.conftest import Cluster, Member, cluster, cluster_db  # noqa: F401 - the fixtures

from .conftest import IKICTL, ROOT, clean_env
from .test_mcp_cli import HOSTILE, canned, controls, ikictl

A, B = "hosta-1a2b3c4d", "hostb-9f8e7d6c"
UUID = "0190aaaa-0000-7000-8000-000000000001"
OTHER = "0190bbbb-0000-7000-8000-000000000002"
USAGE = {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0}


def row(id: str, **over: Any) -> dict[str, Any]:
    """A daemons.list row (protocol.cluster_results.DaemonRow)."""
    return {
        "id": id, "host": id.split("-")[0], "pid": 4242, "state": "up", "agents": 2,
        "heartbeat_age": 0.412, "expired": False, "version": "0.9.0", "schema": "0011_daemons",
        "labels": [], "lease": 10.0, "generation": 1, "started_at": "2026-11-30T08:00:00Z",
        "socket": f"/run/{id}.sock", "self": False, **over,
    }


LISTED = {"daemons": [row(A, self=True), row(B, labels=["gpu", "fast"], agents=7, heartbeat_age=63.2)],
          "self": A}
CLUSTER = {"id": A, "generation": 1, "shared": True, "lease": 10.0, "heartbeat": 5.0,
           "lease_held": True, "labels": []}
STATUS = {"version": "0.9.0", "pid": 4242, "uptime": 75.0, "socket": "/s", "database": "postgresql://db",
          "agents": {"running": 2, "dead": 0}, "connections": 1, "default_model": "p/m",
          "max_line_bytes": 1 << 20, "protocol_version": 1, "started_at": "2026-11-30T08:00:00Z",
          "cluster": CLUSTER}


def agent(uuid: str, name: str, daemon: str | None, status: str = "running") -> dict[str, Any]:
    return {"uuid": uuid, "short": uuid[:8], "name": name, "parent": None, "provider": "p", "model": "m",
            "state": "idle", "status": status, "usage": USAGE, "worktree": None, "daemon": daemon}


@pytest.fixture
def tmp() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="ikdms"))  # short: a socket path has a length limit
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- the parser (no daemon)


def test_the_daemons_command_and_new_on_parse() -> None:
    a = parse(["daemons"])
    assert (a.func, a.all, bool(a.json)) == ("daemons:cmd_daemons", False, False)
    a = parse(["daemons", "--all", "--json"])
    assert (a.all, a.json) == (True, True)
    assert parse(["daemons", "-a"]).all
    assert parse(["new"]).on is None
    for target in ("any", A, "hostb", "gpu"):
        assert parse(["new", "--on", target, "a prompt"]).on == target
    assert parse(["new", "--on", "any", "--name", "n", "hi"]).prompt == "hi"


def test_the_help_explains_daemons_states_and_each_form_of_on(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["daemons", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for said in ("several of them", "PostgreSQL database", "docs/cluster.md", "up ", "draining",
                 "stopped", "lost", "(expired)", "--all"):
        assert said.lower() in text.lower(), said
    with pytest.raises(SystemExit):
        main(["new", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--on DAEMON|HOST|LABEL|any" in text
    for said in ("DAEMON a daemon's id", "HOST the daemon on that host", "LABEL a daemon with that label",
                 "any: the live daemon with the fewest running agents", "Default: the daemon asked"):
        assert said in text, said
    assert "daemons" in build_parser().format_help()


# ---------------------------------------------------------------- rendering (no daemon)


@pytest.mark.parametrize(
    ("age", "text"),
    [(0.412, "0.4s ago"), (0, "0.0s ago"), (9.96, "10.0s ago"), (12.7, "12s ago"), (192, "3m12s ago"),
     (7500, "2h05m ago"), (3 * 86400 + 4 * 3600, "3d04h ago"), (-0.2, "0.0s ago"), (None, "?"),
     ("3", "?"), (True, "?"), (float("nan"), "?"), (float("inf"), "?"), (1e300, "?")],
)
def test_heartbeat_age(age: object, text: str) -> None:
    assert daemons.heartbeat_text(age) == text


def test_the_daemons_table_marks_the_answering_daemon() -> None:
    out = io.StringIO()
    daemons.daemons_table(LISTED, out)  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["ID", "HOST", "PID", "STATE", "AGENTS", "HEARTBEAT", "VERSION", "LABELS"]
    assert lines[1].split() == [A, "*", "hosta", "4242", "up", "2", "0.4s", "ago", "0.9.0", "-"]
    assert lines[2].split() == [B, "hostb", "4242", "up", "7", "1m03s", "ago", "0.9.0", "gpu,fast"]
    assert len(lines) == 3


def test_the_states_gone_and_expired() -> None:
    listed = {"self": A, "daemons": [
        row(A, self=True), row(B, expired=True), row("c", state="draining"),
        row("d", state="draining", expired=True), row("e", state="stopped", agents=0),
        row("f", state="lost", expired=False, agents=0),
    ]}
    out = io.StringIO()
    daemons.daemons_table(listed, out)  # type: ignore[arg-type]
    cells = {ln.split()[0]: ln for ln in out.getvalue().splitlines()[1:]}
    assert "up (expired)" in cells[B] and "up (expired)" not in cells[A]
    assert "draining" in cells["c"] and "(expired)" not in cells["c"]
    assert "draining (expired)" in cells["d"]
    assert " stopped " in cells["e"] and " lost " in cells["f"]
    # on a terminal: the lost and the expired in red, drawn after the widths are measured
    out = io.StringIO()
    daemons.daemons_table(listed, out, color=True)  # type: ignore[arg-type]
    text = out.getvalue()
    assert f"{render.RED}lost{render.RESET}" in text
    assert f"{render.RED}up (expired){render.RESET}" in text
    assert f"{render.YELLOW}draining{render.RESET}" in text


def test_the_answering_daemon_is_marked_by_self_when_rows_do_not_say() -> None:
    out = io.StringIO()
    daemons.daemons_table({"self": B, "daemons": [row(A), row(B)]}, out)  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert lines[1].split()[:2] == [A, "hosta"] and lines[2].split()[:2] == [B, "*"]
    out = io.StringIO()
    daemons.daemons_table({"self": A, "daemons": []}, out)  # type: ignore[arg-type]
    assert out.getvalue() == "no daemons listed\n"


def test_what_other_daemons_wrote_cannot_drive_the_terminal() -> None:
    out = io.StringIO()
    bad = row(HOSTILE, host=HOSTILE, version=HOSTILE, labels=[HOSTILE], state=HOSTILE, pid=HOSTILE)
    daemons.daemons_table({"self": HOSTILE, "daemons": [bad]}, out, color=True)  # type: ignore[arg-type]
    assert not controls(out.getvalue())
    assert "^[]0;pwned" in out.getvalue()
    out = io.StringIO()
    daemons.status_lines({**STATUS, "cluster": {**CLUSTER, "id": HOSTILE, "labels": [HOSTILE]}}, out)
    daemons.show_line({"daemon": HOSTILE, "status": "running"}, out)
    assert not controls(out.getvalue())


def test_ls_tree_with_a_daemon_column() -> None:
    agents = [agent(UUID, "here", A), agent(OTHER, "there", B)]
    out = io.StringIO()
    render.agent_tree(agents, out, daemons={UUID: A, OTHER: B})  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert lines[0].split()[-1] == "DAEMON"
    assert lines[1].split()[-1] == A and lines[2].split()[-1] == B
    out = io.StringIO()
    render.agent_tree(agents, out)  # type: ignore[arg-type]
    assert "DAEMON" not in out.getvalue()
    # beside a worktree column, after it; an agent with no cell gets "-"
    out = io.StringIO()
    render.agent_tree(agents, out, worktrees={UUID: "ikigai/here"}, daemons={OTHER: B})  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert lines[0].split()[-2:] == ["WORKTREE", "DAEMON"]
    assert lines[1].split()[-2:] == ["ikigai/here", "-"] and lines[2].split()[-2:] == ["-", B]


def test_show_line() -> None:
    for info, text in (
        ({"daemon": B, "status": "running"}, f"daemon:       {B}\n"),
        ({"daemon": B, "status": "dead"}, f"daemon:       {B}\n"),
        ({"daemon": None, "status": "dead"}, "daemon:       -\n"),
        ({"status": "running"}, ""),  # a daemon older than the field
    ):
        out = io.StringIO()
        daemons.show_line(info, out)
        assert out.getvalue() == text
    out = io.StringIO()
    daemons.show_line({"daemon": None, "status": "running"}, out)
    assert out.getvalue().startswith("daemon:       none at the moment (its daemon was lost")


def test_status_lines() -> None:
    out = io.StringIO()
    daemons.status_lines(STATUS, out)
    assert out.getvalue().splitlines() == [
        f"daemon:      {A}",
        "cluster:     shared database: lease 10 s, heartbeat every 5 s",
        "lease:       held",
    ]
    out = io.StringIO()
    cut = {**CLUSTER, "lease_held": False, "labels": ["gpu", "eu"]}
    daemons.status_lines({**STATUS, "cluster": cut}, out)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"daemon:      {A} (labels gpu,eu)"
    assert lines[2].startswith("lease:       NOT held: cut off from the database, its agents are stopped")
    # SQLite: alone, no lease to speak of
    out = io.StringIO()
    daemons.status_lines({**STATUS, "cluster": {**CLUSTER, "shared": False}}, out)
    assert out.getvalue() == f"daemon:      {A}\n"
    out = io.StringIO()
    daemons.status_lines({k: v for k, v in STATUS.items() if k != "cluster"}, out)
    assert out.getvalue() == ""


def test_agent_unavailable_in_one_line() -> None:
    text = daemons.unavailable_text("daemon hostb-9f8e7d6c\n  stopped answering", {"daemon": B})
    assert "\n" not in text and text.startswith(f"daemon {B} stopped answering")
    assert "ikictl daemons --all" in text
    text = daemons.unavailable_text("agent far has no daemon at the moment", {"daemon": B})
    assert f"(daemon {B})" in text
    assert "(daemon" not in daemons.unavailable_text("no daemon", {"daemon": None})
    assert daemons.unavailable_text("x", "not a dict").startswith("x (")


# ---------------------------------------------------------------- a canned daemon


def test_daemons_asks_daemons_list(tmp: Path) -> None:
    with canned(tmp, {"daemons.list": LISTED}) as srv:
        r = ikictl(tmp, "daemons")
        assert r.stdout.splitlines()[1].split()[:2] == [A, "*"]
        assert json.loads(ikictl(tmp, "--json", "daemons").stdout) == LISTED
        ikictl(tmp, "daemons", "--all")
    assert srv.sent("daemons.list") == [{"include_gone": False}, {"include_gone": False},
                                        {"include_gone": True}]


def test_new_on_is_the_param_sent(tmp: Path) -> None:
    created = {"agent": agent(UUID, "far", B), "model": {"description": "p/m"}, "turn": None}
    with canned(tmp, {"agent.create": created}) as srv:
        ikictl(tmp, "new", "--name", "far", "--on", B)
        ikictl(tmp, "new", "--on", "any")
        ikictl(tmp, "new")
    sent = srv.sent("agent.create")
    assert [s.get("on") for s in sent] == [B, "any", None]
    assert "on" not in sent[2]  # left out: what a daemon of one database alone takes


def test_new_on_a_daemon_that_is_not_there(tmp: Path) -> None:
    message = f"on: no live daemon is 'nope' (an id, a host, a label or \"any\"); live daemons: {A} (host hosta)"
    refused = {"error": {"code": -32602, "message": message, "data": {"daemons": [A]}}}
    with canned(tmp, {"agent.create": refused}):
        r = ikictl(tmp, "new", "--on", "nope", "hi", code=2)
        assert r.stderr == f"ikictl: {message}\n" and r.stdout == ""
        r = ikictl(tmp, "--json", "new", "--on", "nope", code=2)
    assert json.loads(r.stderr)["error"] == {"message": message, "exit": 2, "code": -32602,
                                             "data": {"daemons": [A]}}


@pytest.mark.parametrize(
    ("agents", "column", "asked"),
    [
        # two daemons among the agents: said without asking
        ([agent(UUID, "here", A), agent(OTHER, "there", B)], {UUID: A, OTHER: B}, 0),
        # one, the daemon asked (status says A): no column
        ([agent(UUID, "here", A), agent(OTHER, "too", A)], None, 1),
        # one, another daemon than the one asked
        ([agent(OTHER, "there", B)], {OTHER: B}, 1),
        # a dead agent's daemon does not count; none at all: no call
        ([agent(UUID, "here", A), agent(OTHER, "gone", B, "dead")], None, 1),
        ([agent(UUID, "old", None), {**agent(OTHER, "older", None)}], None, 0),
        ([], None, 0),
    ],
)
def test_ls_shows_a_daemon_column_only_when_the_agents_are_not_all_the_asked_daemons(
    tmp: Path, agents: list[dict[str, Any]], column: dict[str, str] | None, asked: int
) -> None:
    with canned(tmp, {"agent.list": agents, "daemon.status": STATUS}) as srv:
        r = ikictl(tmp, "ls", "--all")
        lines = r.stdout.splitlines()
        if column is None:
            assert "DAEMON" not in lines[0]
        else:
            assert lines[0].split()[-1] == "DAEMON"
            for uuid, daemon in column.items():
                assert any(ln.startswith(uuid[:8]) and ln.split()[-1] == daemon for ln in lines), r.stdout
        assert len(srv.sent("daemon.status")) == asked
        # scripts' forms draw no table: no column, and no call for one
        ikictl(tmp, "ls", "-q")
        ikictl(tmp, "--json", "ls")
        assert len(srv.sent("daemon.status")) == asked


def test_show_and_status_say_the_daemon(tmp: Path) -> None:
    shown = {**agent(UUID, "far", B), "system_prompt": "", "cwd": "/", "queued": 0,
             "created_at": "2026-11-30T08:00:00Z", "current_turn": None, "last_turn": None}
    with canned(tmp, {"agent.show": shown, "daemon.status": STATUS}):
        assert f"daemon:       {B}" in ikictl(tmp, "show", "far").stdout.splitlines()
        out = ikictl(tmp, "status").stdout.splitlines()
    assert f"daemon:      {A}" in out and "lease:       held" in out


def test_agent_unavailable_is_exit_6(tmp: Path) -> None:
    error = {"code": -32009, "message": f"daemon {B} stopped answering", "data": {"daemon": B}}
    with canned(tmp, {"agent.show": {"error": error}, "agent.cancel": {"error": error}}):
        r = ikictl(tmp, "show", "far", code=6)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"ikictl: daemon {B} stopped answering (")
        assert ikictl(tmp, "cancel", "far", code=6).stderr == r.stderr
        r = ikictl(tmp, "--json", "show", "far", code=6)
    assert json.loads(r.stderr)["error"] == {"message": error["message"], "exit": 6, "code": -32009,
                                             "data": {"daemon": B}}


def test_the_daemons_command_imports_nothing_heavy(tmp: Path) -> None:
    with canned(tmp, {"daemons.list": LISTED}):
        r = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ikictl", "--no-autostart", "--socket",
             str(tmp / "s.sock"), "daemons"],
            capture_output=True, text=True, env=clean_env(tmp), cwd=ROOT, timeout=30, check=True,
        )
    loaded = {ln.split("|")[-1].strip().split(".")[0] for ln in r.stderr.splitlines() if "|" in ln}
    assert "ikictl" in loaded and B in r.stdout
    assert not loaded & {"trio", "httpx", "msgspec", "sqlalchemy", "anyio", "typing", "agents"}


def test_no_daemon_answering_is_exit_3_and_none_is_started(tmp: Path) -> None:
    # without --no-autostart too: listing the daemons must not add one
    r = subprocess.run([*IKICTL, "--socket", str(tmp / "none.sock"), "daemons"], capture_output=True,
                       text=True, env=clean_env(tmp), timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 3, r.stderr
    assert not (tmp / "run").exists() and not (tmp / "none.sock").exists()


# ---------------------------------------------------------------- two real daemons, one database


async def run(m: Member, *args: str, code: int = 0) -> tuple[str, str]:
    """ikictl through daemon ``m``: its IKIGAI_HOME and IKIGAI_SOCKET."""
    env = clean_env(m.home)
    env["IKIGAI_SOCKET"] = str(m.proc.socket)
    with trio.fail_after(READY_TIMEOUT):
        r = await trio.run_process([*IKICTL, "--no-autostart", *args], capture_stdout=True,
                                   capture_stderr=True, check=False, env=env, stdin=b"")
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == code, f"ikictl {args} -> {r.returncode}\n{out}\n{err}"
    return out, err


def cells(out: str, key: str, at: int = 0) -> list[str]:
    """The cells of the one table line whose cell ``at`` is ``key``."""
    found = [ln.split() for ln in out.splitlines() if ln.split()[at : at + 1] == [key]]
    assert len(found) == 1, out
    return found[0]


@pytest.mark.postgres
async def test_two_daemons_through_ikictl(cluster: Cluster) -> None:  # noqa: F811 - the fixture
    a = await cluster.add("a")
    b = await cluster.add("b", labels=["gpu"])
    out, _ = await run(a, "daemons")
    assert cells(out, a.id)[:2] == [a.id, "*"] and cells(out, a.id)[4] == "up"
    assert cells(out, b.id)[1] != "*" and cells(out, b.id)[-1] == "gpu"
    assert cells(out, b.id)[3] == "up"
    listed = json.loads((await run(b, "--json", "daemons"))[0])
    assert listed["self"] == b.id and {d["id"] for d in listed["daemons"]} == {a.id, b.id}
    out, _ = await run(a, "status")
    assert f"daemon:      {a.id}" in out.splitlines() and "lease:       held" in out.splitlines()

    # placed on b through a: ls through a has a DAEMON column naming b
    out, _ = await run(a, "new", "--name", "x", "--on", b.id, "-q")
    assert json.loads((await run(a, "--json", "ls"))[0])[0]["uuid"] == out.strip()
    out, _ = await run(a, "ls")
    assert out.splitlines()[0].split()[-1] == "DAEMON"
    assert cells(out, "x", 1)[-1] == b.id
    out, _ = await run(a, "show", "x")
    assert f"daemon:       {b.id}" in out.splitlines()
    # "any" through b: a, which runs none
    await run(b, "new", "--name", "y", "--on", "any", "-q")
    out, _ = await run(b, "ls")
    assert cells(out, "x", 1)[-1] == b.id and cells(out, "y", 1)[-1] == a.id
    assert json.loads((await run(b, "--json", "show", "y"))[0])["daemon"] == a.id
    # ikictl move: y from a to b, asked of a, and back, asked of b
    out, _ = await run(a, "move", "y", "--to", b.id)
    assert out.startswith(f"y moved from {a.id} to {b.id} (its events go on from seq ")
    assert json.loads((await run(a, "--json", "show", "y"))[0])["daemon"] == b.id
    await run(b, "move", "y", "--to", a.id)
    assert json.loads((await run(b, "--json", "show", "y"))[0])["daemon"] == a.id

    # the client library as docs/scripting.md shows it
    def spread() -> tuple[Any, list[str | None]]:
        with ikigai.connect(str(a.proc.socket), autostart=False) as c:
            return c.daemons(), [c.create(name=f"w{i}", on="any")["agent"]["daemon"] for i in range(2)]

    listed, placed = await trio.to_thread.run_sync(spread)
    assert listed["self"] == a.id and {d["id"] for d in listed["daemons"]} == {a.id, b.id}
    assert sorted(placed) == sorted([a.id, b.id])  # one each: x on b, y on a, then the fewest

    # a name that is no daemon: the daemon's message, the live ones listed
    _, err = await run(a, "new", "--on", "nope", code=2)
    assert err.startswith("ikictl: on: no live daemon is 'nope'")
    assert a.id in err and b.id in err and err.count("\n") == 1

    # b stops: its agents are alive but nobody runs them; ls -a and daemons --all say so
    await trio.to_thread.run_sync(b.proc.stop)
    _, err = await run(a, "show", "x", code=6)
    assert err.startswith("ikictl: ") and b.id in err and err.count("\n") == 1
    out, _ = await run(a, "daemons")
    assert b.id not in out
    out, _ = await run(a, "daemons", "--all")
    assert cells(out, b.id)[3] == "stopped"
