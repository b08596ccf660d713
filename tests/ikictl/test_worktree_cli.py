"""Git worktrees from the command line (issue 36): ``--worktree`` of
``new``/``fork``, the WORKTREE column of ``ls``, ``show``'s block, ``diff``,
``merge`` (exit 5 on a conflict), ``worktrees``, ``kill``/``rm
--prune-worktree`` and ``prune --worktrees``.

First without a daemon: the parser, the rendering fed with results shaped
as protocol/worktree_results.py's TypedDicts, and the params sent (the
canned JSON-RPC server of test_mcp_cli on a real Unix socket). Then the real
ikictl against the real daemon on a real git repository the test makes."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ikictl import render, worktree
from ikictl.cli import build_parser, main, parse
from ikictl.worktree import worktree_param

from .conftest import IKICTL, ROOT, Daemon, clean_env
from .ptyexpect import PtyProcess
from .test_mcp_cli import HOSTILE, canned, controls, ikictl

UUID = "0190aaaa-0000-7000-8000-000000000001"
CHILD = "0190bbbb-0000-7000-8000-000000000002"
BASE = "1a2b3c4d5e6f708192a3b4c5d6e7f80910111213"
HEAD = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
BRIEF = {"path": "/home/u/.local/share/ikigai/worktrees/fix-1", "branch": "ikigai/fix-1",
         "base": BASE, "repo": "/home/u/src/app"}
ROW = {  # a worktree.list row (protocol.results.Worktree)
    "agent": CHILD, "name": "fix-1", "alive": True, "path": BRIEF["path"], "branch": "ikigai/fix-1",
    "base": BASE, "repo": "/home/u/src/app", "created_at": "2026-11-30T08:00:00Z", "pruned_at": None,
    "exists": True, "head": HEAD, "dirty": 3, "ahead": 2, "bytes": None,
}
USAGE = {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0}


def agent(uuid: str, name: str, parent: str | None = None, wt: dict | None = None) -> dict[str, Any]:
    return {"uuid": uuid, "short": uuid[:8], "name": name, "parent": parent, "provider": "p", "model": "m",
            "state": "idle", "status": "running", "usage": USAGE, "worktree": wt}


PARENT, FORKED = agent(UUID, "main"), agent(CHILD, "fix-1", UUID, BRIEF)
CREATED = {"agent": FORKED, "model": {"description": "p/m"}, "turn": None}


# ---------------------------------------------------------------- the parser (no daemon)


@pytest.mark.parametrize(
    ("flags", "sent"),
    [
        ([], None),
        (["--worktree"], True),
        (["--branch", "fix/a"], {"branch": "fix/a"}),  # --branch and --from imply --worktree
        (["--from", "v1.2"], {"from": "v1.2"}),
        (["--worktree", "--branch", "b", "--from", "main~2"], {"branch": "b", "from": "main~2"}),
    ],
)
@pytest.mark.parametrize("command", [["new"], ["fork", "A"], ["fork", "A", "--count", "3", "p"]])
def test_the_worktree_flags_are_the_param_sent(command: list[str], flags: list[str], sent: object) -> None:
    assert worktree_param(parse([*command, *flags])) == sent


def test_the_other_worktree_commands_parse() -> None:
    a = parse(["merge", "A", "--into", "main", "--squash", "-m", "one commit"])
    assert (a.agent, a.into, a.squash, a.message, a.func) == ("A", "main", True, "one commit", "worktree:cmd_merge")
    a = parse(["diff", "A", "--stat"])
    assert (a.agent, a.stat, a.func) == ("A", True, "worktree:cmd_diff")
    a = parse(["worktrees", "--all", "--disk", "--json"])
    assert (a.all, a.disk, a.json, a.func) == (True, True, True, "worktree:cmd_worktrees")
    a = parse(["kill", "A", "--prune-worktree", "--force"])
    assert (a.prune_worktree, a.force) == (True, True)
    a = parse(["rm", "A", "B", "--prune-worktree", "-f"])
    assert (a.agents, a.prune_worktree, a.force) == (["A", "B"], True, True)
    a = parse(["prune", "--worktrees", "--force", "--dry-run", "-y"])
    assert (a.worktrees, a.force, a.dry_run, a.yes) == (True, True, True, True)


def _sub(name: str) -> Any:
    import argparse

    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise AssertionError(name)


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("new", ["--worktree", "--branch", "--from"]),
        ("fork", ["--worktree", "--branch", "--from"]),
        ("kill", ["--prune-worktree", "--force"]),
        ("rm", ["--prune-worktree"]),
        ("prune", ["--worktrees", "--force"]),
        ("diff", ["--stat"]),
        ("merge", ["--into", "--squash", "--message"]),
        ("worktrees", ["--all", "--disk"]),
    ],
)
def test_every_new_flag_says_what_it_does(command: str, flags: list[str]) -> None:
    helps = {s: a.help for a in _sub(command)._actions for s in a.option_strings}
    for flag in flags:
        assert helps.get(flag) and len(helps[flag]) > 30, (command, flag)


def test_help_documents_the_notation_and_the_exit_code() -> None:
    r = subprocess.run([sys.executable, "-m", "ikictl", "ls", "--help"], capture_output=True, text=True,
                       cwd=ROOT, env=clean_env(ROOT), timeout=30, check=True)
    assert "+N  N commits" in r.stdout and "*N  N files with uncommitted changes" in r.stdout
    assert "ikigai/fix-1 +2 *3" in r.stdout
    r = subprocess.run([sys.executable, "-m", "ikictl", "merge", "--help"], capture_output=True, text=True,
                       cwd=ROOT, env=clean_env(ROOT), timeout=30, check=True)
    assert "exit code is 5" in r.stdout and "5 merge conflict" in r.stdout


def test_bash_completes_the_new_commands_and_flags() -> None:
    from .test_completion import _complete

    env = {"PATH": os.environ["PATH"]}
    assert set(_complete(["ikictl", "wo"], env)) == {"worktrees"}
    assert "--prune-worktree" in _complete(["ikictl", "kill", "a", "--pr"], env)
    assert set(_complete(["ikictl", "fork", "a", "--b"], env)) >= {"--branch", "--budget"}
    assert _complete(["ikictl", "merge", "a", "--into", ""], env) == []  # typed: no file names


# ---------------------------------------------------------------- rendering (no daemon)


def test_ls_has_a_worktree_column_only_when_an_agent_has_a_worktree() -> None:
    out = io.StringIO()
    render.agent_tree([PARENT], out, worktrees=worktree.ls_cells([PARENT], None))  # type: ignore[list-item]
    assert "WORKTREE" not in out.getvalue()
    cells = worktree.ls_cells([PARENT, FORKED], [ROW])
    assert cells == {CHILD: "ikigai/fix-1 +2 *3"}
    out = io.StringIO()
    render.agent_tree([PARENT, FORKED], out, worktrees=cells)  # type: ignore[list-item]
    head, root, child = out.getvalue().splitlines()
    assert head.split()[-1] == "WORKTREE"
    assert root.endswith("$0  -") and child.endswith("$0  ikigai/fix-1 +2 *3")
    assert child.index("ikigai/") == head.index("WORKTREE")


@pytest.mark.parametrize(
    ("change", "cell"),
    [
        ({"ahead": 0, "dirty": 0}, "ikigai/fix-1"),  # clean, nothing to merge: the branch alone
        ({"ahead": 5, "dirty": 0}, "ikigai/fix-1 +5"),
        ({"ahead": 0, "dirty": 1}, "ikigai/fix-1 *1"),
        ({"exists": False, "dirty": None}, "ikigai/fix-1 (missing)"),
        ({"pruned_at": "2026-12-01T00:00:00Z", "exists": False}, "ikigai/fix-1 (pruned)"),
    ],
)
def test_the_worktree_cell_says_ahead_dirty_or_gone(change: dict, cell: str) -> None:
    assert worktree.ls_cells([FORKED], [{**ROW, **change}]) == {CHILD: cell}
    # no state known (an older daemon, or no row): the branch alone, never a guess
    assert worktree.ls_cells([FORKED], []) == {CHILD: "ikigai/fix-1"}


def test_show_gives_the_worktree_block() -> None:
    out = io.StringIO()
    worktree.show_block({**BRIEF, "dirty": 3, "ahead": 1}, out)
    assert out.getvalue().splitlines() == [
        f"worktree:     {BRIEF['path']}",
        "branch:       ikigai/fix-1",
        "base:         1a2b3c4d (the commit it started from)",
        "repo:         /home/u/src/app (the checkout merges land in)",
        "uncommitted:  3 files (changed or new, not committed)",
        "ahead:        1 commit on the branch that its base lacks",
    ]
    out = io.StringIO()
    worktree.show_block({**BRIEF, "dirty": None, "ahead": None}, out)
    assert out.getvalue().splitlines()[0].endswith("(the folder is gone)")
    assert "uncommitted:  ? (changed" in out.getvalue() and "ahead:        ? commits" in out.getvalue()
    out = io.StringIO()
    worktree.show_block(None, out)
    assert out.getvalue() == ""


def test_worktrees_is_a_table() -> None:
    dead = {**ROW, "agent": UUID, "name": "fix-2", "alive": False, "branch": "fix/two", "dirty": 0, "ahead": 0,
            "bytes": 5 * 1024 * 1024}
    pruned = {**dead, "name": "fix-3", "pruned_at": "2026-12-01T00:00:00Z", "exists": False, "dirty": None}
    out = io.StringIO()
    worktree.worktrees_table([{**ROW, "bytes": 900}, dead, pruned], out, disk=True)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["AGENT", "STATE", "BRANCH", "BASE", "AHEAD", "DIRTY", "DISK", "PATH"]
    assert lines[1].split()[:8] == ["fix-1", "alive", "ikigai/fix-1", "1a2b3c4d", "2", "3", "900", "B"]
    assert lines[2].split()[:8] == ["fix-2", "dead", "fix/two", "1a2b3c4d", "0", "0", "5.0", "MiB"]
    assert lines[3].split()[5:] == ["-", "-", BRIEF["path"], "(pruned)"]
    out = io.StringIO()
    worktree.worktrees_table([{**ROW, "exists": False, "dirty": None}], out)
    assert out.getvalue().splitlines()[0].split() == ["AGENT", "STATE", "BRANCH", "BASE", "AHEAD", "DIRTY", "PATH"]
    assert out.getvalue().splitlines()[1].endswith("fix-1 (missing)")
    out = io.StringIO()
    worktree.worktrees_table([], out)
    assert "ikictl fork AGENT --worktree" in out.getvalue()
    assert [worktree.size(n) for n in (0, 1023, 1024, 150 * 1024, 3 * 1024**3, None)] == [
        "0 B", "1023 B", "1.0 KiB", "150 KiB", "3.0 GiB", "?",
    ]


def test_merge_says_what_it_did() -> None:
    res = {"agent": CHILD, "branch": "ikigai/fix-1", "into": "main", "checkout": "/home/u/src/app",
           "commit": HEAD, "fast_forward": True, "squashed": False, "commits": 2}
    assert worktree.merged_text(res) == (
        "merged 2 commits of ikigai/fix-1 into main: fast-forward; main is at 9f8e7d6c (in /home/u/src/app)"
    )
    assert worktree.merged_text({**res, "fast_forward": False, "commits": 1}) == (
        "merged 1 commit of ikigai/fix-1 into main: merge commit 9f8e7d6c; main is at 9f8e7d6c (in /home/u/src/app)"
    )
    assert worktree.merged_text({**res, "fast_forward": False, "squashed": True}) == (
        "squashed 2 commits of ikigai/fix-1 into main as commit 9f8e7d6c (in /home/u/src/app)"
    )
    assert worktree.merged_text({**res, "commits": 0}).startswith("nothing to merge: main already has")


def test_a_conflict_is_gits_message_the_paths_and_nothing_changed() -> None:
    text = worktree.conflict_text("merge: conflicts in 2 file(s). git said:\nCONFLICT (content): a.txt",
                                  {"conflicts": ["a.txt", "src/b.py"]})
    assert text.splitlines() == [
        "merge: conflicts in 2 file(s). git said:",
        "CONFLICT (content): a.txt",
        "conflicting paths (2):",
        "  a.txt",
        "  src/b.py",
        "nothing was merged: the checkout was left unchanged (exit 5). Merge by hand there, "
        "or have the agent rebase its branch first.",
    ]


def test_prune_report_lists_deleted_and_kept_with_the_reason() -> None:
    res = {"pruned": [{**ROW, "alive": False, "note": "branch ikigai/fix-1 kept: 2 commit(s) on no other branch"}],
           "kept": [{"agent": UUID, "path": "/w/fix-2", "reason": "3 file(s) have uncommitted changes"}]}
    out = io.StringIO()
    worktree.pruned_report(res, out, dry_run=True, force=False)
    assert out.getvalue().splitlines() == [
        "would delete 1 worktree:",
        f"  fix-1  ikigai/fix-1  {BRIEF['path']}",
        "    branch ikigai/fix-1 kept: 2 commit(s) on no other branch",
        "kept 1:",
        f"  {UUID}  /w/fix-2",
        "    3 file(s) have uncommitted changes",
        "(--force deletes those with uncommitted changes too: they are lost)",
    ]
    out = io.StringIO()
    worktree.pruned_report({"pruned": [], "kept": []}, out, dry_run=False, force=True)
    assert out.getvalue() == "no worktrees to delete\n"


def test_a_diff_on_a_terminal_is_colored_and_safe() -> None:
    patch = f"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new {HOSTILE}\n same\n"
    plain = worktree.colored_diff(patch, False)
    assert not controls(plain) and plain.count("\n") == patch.count("\n")
    colored = worktree.colored_diff(patch, True)
    assert f"{render.RED}-old{render.RESET}\n" in colored and f"{render.CYAN}@@ -1 +1 @@{render.RESET}" in colored
    assert f"{render.GREEN}+new x^[]0;pwned" in colored and "\n same\n" in colored


def test_hostile_texts_drive_no_terminal() -> None:
    bad = {**ROW, "name": HOSTILE, "branch": HOSTILE, "path": HOSTILE, "base": HOSTILE, "note": HOSTILE}
    brief = {**BRIEF, "path": HOSTILE, "branch": HOSTILE, "repo": HOSTILE, "dirty": 1, "ahead": 1}
    out = io.StringIO()
    worktree.worktrees_table([bad], out, disk=True)
    worktree.show_block(brief, out)
    worktree.pruned_report({"pruned": [bad], "kept": [{"agent": HOSTILE, "path": HOSTILE, "reason": HOSTILE}]},
                           out, dry_run=False, force=False)
    render.agent_tree([{**FORKED, "worktree": brief}], out,  # type: ignore[list-item]
                      worktrees=worktree.ls_cells([{**FORKED, "worktree": brief}], [bad]))
    out.write(worktree.merged_text({"branch": HOSTILE, "into": HOSTILE, "checkout": HOSTILE, "commit": HOSTILE,
                                    "commits": 1}) + "\n")
    out.write(worktree.conflict_text("m", {"conflicts": [HOSTILE]}) + "\n")
    out.write(str(worktree.created_line({"worktree": brief})) + "\n")
    assert not controls(out.getvalue())


# ---------------------------------------------------------------- the params sent (a canned daemon)


@pytest.fixture
def tmp() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="ikwt"))  # short: a socket path has a length limit
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_new_and_fork_send_the_worktree_and_say_where_it_is(tmp: Path) -> None:
    forked = {"children": [CREATED, {**CREATED, "agent": {**FORKED, "name": "fix-2", "worktree": None}}]}
    answers = {"agent.create": CREATED, "agent.fork": CREATED}
    with canned(tmp, answers) as srv:
        out = ikictl(tmp, "fork", "main", "--worktree").stdout
        ikictl(tmp, "fork", "main", "--branch", "fix/a", "--from", "v1")
        ikictl(tmp, "fork", "main")
        ikictl(tmp, "new", "--from", "main~1")
        ikictl(tmp, "new")
        srv.answers["agent.fork"] = forked
        many = ikictl(tmp, "fork", "main", "--count", "2", "--worktree", "go").stdout
        forks, creates = srv.sent("agent.fork"), srv.sent("agent.create")
    assert out.splitlines()[1] == f"worktree: {BRIEF['path']} on branch ikigai/fix-1 (from 1a2b3c4d)"
    # absent unless asked: the parent's policy decides (fork_isolation), or none
    assert [f.get("worktree", "absent") for f in forks] == [True, {"branch": "fix/a", "from": "v1"}, "absent", True]
    assert [c.get("worktree", "absent") for c in creates] == [{"from": "main~1"}, "absent"]
    assert many.splitlines()[1] == f"  worktree: {BRIEF['path']} on branch ikigai/fix-1 (from 1a2b3c4d)"
    assert len(many.splitlines()) == 3  # the second child has no worktree: no line for it


def test_ls_asks_the_worktree_states_once_and_only_when_needed(tmp: Path) -> None:
    with canned(tmp, {"agent.list": [PARENT], "worktree.list": [ROW]}) as srv:
        plain = ikictl(tmp, "ls").stdout
        assert srv.sent("worktree.list") == []
        srv.answers["agent.list"] = [PARENT, FORKED]
        out = ikictl(tmp, "ls").stdout
        ikictl(tmp, "ls", "--all")
        ikictl(tmp, "ls", "-q")
        ikictl(tmp, "ls", "--json")
        ikictl(tmp, "ls", "--format", "{worktree.branch}")
        assert srv.sent("worktree.list") == [{"all": False, "disk": False}, {"all": True, "disk": False}]
        srv.answers["worktree.list"] = {"error": {"code": -32601, "message": "method not found"}}
        old = ikictl(tmp, "ls").stdout  # a daemon without worktree.list: the branch alone
    assert "WORKTREE" not in plain
    assert out.splitlines()[2].endswith("  ikigai/fix-1 +2 *3")
    assert old.splitlines()[2].endswith("  ikigai/fix-1")


def test_show_diff_merge_and_worktrees_print_the_answers(tmp: Path) -> None:
    shown = {**FORKED, "worktree": {**BRIEF, "dirty": 0, "ahead": 2}, "cwd": BRIEF["path"], "queued": 0,
             "created_at": "2026-11-30T08:00:00Z"}
    diff = {"agent": CHILD, "branch": "ikigai/fix-1", "base": BASE, "diff": "+é\r\n\x1b[2J", "truncated": True}
    merged = {"agent": CHILD, "branch": "ikigai/fix-1", "into": "main", "checkout": "/r", "commit": HEAD,
              "fast_forward": True, "squashed": False, "commits": 2}
    answers = {"agent.show": shown, "worktree.diff": diff, "worktree.merge": merged, "worktree.list": [ROW]}
    with canned(tmp, answers) as srv:
        show = ikictl(tmp, "show", "fix-1").stdout
        r = subprocess.run([*IKICTL, "--no-autostart", "--socket", str(tmp / "s.sock"), "diff", "fix-1", "--stat"],
                           capture_output=True, env=clean_env(tmp), timeout=30, stdin=subprocess.DEVNULL)
        merge = ikictl(tmp, "merge", "fix-1", "--into", "main", "--squash", "-m", "msg").stdout
        ikictl(tmp, "merge", "fix-1")
        table = ikictl(tmp, "worktrees", "--disk").stdout
        js = json.loads(ikictl(tmp, "worktrees", "--json").stdout)
        assert srv.sent("worktree.diff") == [{"agent": "fix-1", "stat": True}]
        assert srv.sent("worktree.merge") == [
            {"agent": "fix-1", "into": "main", "squash": True, "message": "msg"},
            {"agent": "fix-1", "squash": False},
        ]
        assert srv.sent("worktree.list") == [{"all": False, "disk": True}, {"all": False, "disk": False}]
    assert "ahead:        2 commits on the branch that its base lacks" in show
    # a pipe gets the patch byte for byte (| git apply), the cut said on stderr
    assert r.returncode == 0 and r.stdout == "+é\r\n\x1b[2J".encode()
    assert b"the diff was cut" in r.stderr and b"git diff 1a2b3c4d" in r.stderr
    assert merge.startswith("merged 2 commits of ikigai/fix-1 into main: fast-forward")
    assert table.splitlines()[0].split() == ["AGENT", "STATE", "BRANCH", "BASE", "AHEAD", "DIRTY", "DISK", "PATH"]
    assert js == [ROW]


def test_a_merge_conflict_is_exit_5_with_the_paths(tmp: Path) -> None:
    error = {"code": -32008, "message": "merge: conflicts in 1 file(s); the checkout at /r was left as it was. "
             "git said:\nCONFLICT (content): Merge conflict in a.txt", "data": {"conflicts": ["a.txt"]}}
    with canned(tmp, {"worktree.merge": {"error": error}}):
        r = ikictl(tmp, "merge", "fix-1", code=5)
        js = ikictl(tmp, "--json", "merge", "fix-1", code=5)
    assert r.stdout == ""
    assert r.stderr.splitlines()[1:] == [
        "CONFLICT (content): Merge conflict in a.txt",
        "conflicting paths (1):",
        "  a.txt",
        "nothing was merged: the checkout was left unchanged (exit 5). Merge by hand there, "
        "or have the agent rebase its branch first.",
    ]
    err = json.loads(js.stderr)["error"]
    assert (err["code"], err["exit"], err["data"], err["message"]) == (-32008, 5, {"conflicts": ["a.txt"]},
                                                                       error["message"])


def test_kill_and_rm_send_prune_worktree_and_say_what_went(tmp: Path) -> None:
    gone = {**ROW, "alive": False}
    kept = {**gone, "note": "branch ikigai/fix-1 kept: 2 commit(s) on no other branch"}
    answers = {"agent.kill": {"killed": [CHILD], "worktree": gone},
               "agent.remove": {"removed": [CHILD], "purged_rows": 0, "worktree": kept}}
    with canned(tmp, answers) as srv:
        kill = ikictl(tmp, "kill", "fix-1", "--prune-worktree", "--force").stdout
        ikictl(tmp, "kill", "fix-1")
        rm = ikictl(tmp, "rm", "fix-1", "--prune-worktree").stdout
        ikictl(tmp, "rm", "fix-1")
        r = ikictl(tmp, "kill", "fix-1", "--force", code=2)
        assert srv.sent("agent.kill") == [{"agent": "fix-1", "prune_worktree": True, "force": True},
                                          {"agent": "fix-1"}]  # not asked: the call of before
        assert [x.get("prune_worktree", "absent") for x in srv.sent("agent.remove")] == [True, "absent"]
        assert srv.sent("agent.show") == []  # what went is in the answer
    assert kill.splitlines()[1] == f"deleted its worktree {BRIEF['path']} and its branch ikigai/fix-1"
    assert rm.splitlines()[1] == (
        f"  deleted its worktree {BRIEF['path']}; branch ikigai/fix-1 kept: 2 commit(s) on no other branch"
    )
    assert "--force goes with --prune-worktree" in r.stderr


def test_prune_worktrees_sends_the_flags_and_lists_both_lists(tmp: Path) -> None:
    res = {"pruned": [{**ROW, "alive": False}], "kept": [{"agent": UUID, "path": "/w/x", "reason": "dirty"}]}
    with canned(tmp, {"worktree.prune": res}) as srv:
        r = ikictl(tmp, "prune", "--worktrees", code=2)  # stdin not a terminal, no -y
        assert srv.requests == []
        out = ikictl(tmp, "prune", "--worktrees", "-y").stdout
        ikictl(tmp, "prune", "--worktrees", "--dry-run", "--force")
        q = ikictl(tmp, "prune", "--worktrees", "-y", "-q").stdout
        assert ikictl(tmp, "prune", "--worktrees", "-y", "--purge", code=2).stderr.startswith("ikictl: --purge")
        assert ikictl(tmp, "prune", "-y", "--force", code=2).stderr.startswith("ikictl: --force goes with")
        assert srv.sent("worktree.prune") == [{"force": False, "dry_run": False}, {"force": True, "dry_run": True},
                                              {"force": False, "dry_run": False}]
    assert "-y" in r.stderr and "--dry-run" in r.stderr
    assert out.startswith("deleted 1 worktree:\n  fix-1  ikigai/fix-1") and "kept 1:" in out
    assert q == f"{CHILD}\n"


def test_prune_worktrees_asks_on_a_terminal(tmp: Path) -> None:
    res = {"pruned": [{**ROW, "alive": False}], "kept": []}
    argv = [*IKICTL, "--no-autostart", "--socket", str(tmp / "s.sock"), "prune", "--worktrees"]
    with canned(tmp, {"worktree.prune": res}) as srv:
        pty = PtyProcess(argv, clean_env(tmp))
        try:
            pty.expect("would delete 1 worktree")
            pty.expect(r"delete this worktree and its branch\? \[y/N\]")
            pty.sendline("n")
            pty.expect("nothing deleted")
            assert pty.wait() == 0
        finally:
            pty.close()
        assert srv.sent("worktree.prune") == [{"force": False, "dry_run": True}]
        pty = PtyProcess([*argv, "--force"], clean_env(tmp))
        try:
            pty.expect(r"uncommitted changes and unmerged commits are lost\)\? \[y/N\]")
            pty.sendline("y")
            pty.expect("deleted 1 worktree")
            assert pty.wait() == 0
        finally:
            pty.close()
        assert srv.sent("worktree.prune")[1:] == [{"force": True, "dry_run": True}, {"force": True, "dry_run": False}]


def test_the_worktree_commands_import_nothing_heavy(tmp: Path) -> None:
    with canned(tmp, {"agent.list": [PARENT, FORKED], "worktree.list": [ROW]}):
        for command in (["ls"], ["worktrees"]):
            r = subprocess.run(
                [sys.executable, "-X", "importtime", "-m", "ikictl", "--no-autostart", "--socket",
                 str(tmp / "s.sock"), *command],
                capture_output=True, text=True, env=clean_env(tmp), cwd=ROOT, timeout=30, check=True,
            )
            loaded = {ln.split("|")[-1].strip().split(".")[0] for ln in r.stderr.splitlines() if "|" in ln}
            assert "ikigai/fix-1 +2 *3" in r.stdout or "fix-1" in r.stdout
            assert not loaded & {"trio", "httpx", "msgspec", "sqlalchemy", "anyio", "typing", "agents"}


def test_a_bad_flag_with_json_is_one_json_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json", "merge", "A", "--squish"]) == 2
    err = json.loads(capsys.readouterr().err)["error"]
    assert err["exit"] == 2 and "--squish" in err["message"]


# ---------------------------------------------------------------- the real daemon, a real repository


def git(repo: Path | str, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"git {' '.join(args)}: {r.stderr}"
    return r.stdout


@pytest.fixture
def repo() -> Iterator[Path]:
    """A git repository with one commit on main, its identity set locally
    (the commits of the test and of merges need one; the user's is not read)."""
    d = Path(tempfile.mkdtemp(prefix="ikwtrepo")).resolve()
    git(d, "init", "-q", "-b", "main")
    git(d, "config", "user.name", "Test")
    git(d, "config", "user.email", "test@example.com")
    (d / "a.txt").write_text("one\ntwo\nthree\n")
    (d / "README").write_text("a repository\n")
    git(d, "add", "-A")
    git(d, "commit", "-q", "-m", "first")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def shown(d: Daemon, ref: str) -> dict[str, Any]:
    info: dict[str, Any] = d.ikictl("show", ref, "--json").json()  # type: ignore[assignment]
    return info


def row_of(d: Daemon, name: str) -> str:
    return next(ln for ln in d.ikictl("ls", "--all").lines if f" {name} " in ln)


def commit_in(where: str | Path, path: str, text: str, message: str) -> None:
    (Path(where) / path).write_text(text)
    git(where, "add", path)
    git(where, "commit", "-q", "-m", message)


def test_fork_worktree_is_shown_diffed_and_merged(daemon: Daemon, repo: Path) -> None:
    daemon.ikictl("new", "--name", "wt-root", "--cwd", str(repo))
    head = git(repo, "rev-parse", "HEAD").strip()
    out = daemon.ikictl("fork", "wt-root", "--worktree", "--name", "wt-a").lines
    wt = shown(daemon, "wt-a")["worktree"]
    path = wt["path"]
    assert (wt["branch"], wt["base"], wt["repo"]) == ("ikigai/wt-a", head, str(repo))
    assert out[1] == f"worktree: {path} on branch ikigai/wt-a (from {head[:8]})"
    assert shown(daemon, "wt-a")["cwd"] == path and (Path(path) / "a.txt").is_file()
    assert git(path, "branch", "--show-current").strip() == "ikigai/wt-a"
    # a clean worktree: the branch alone; the parent has none: "-"
    header = daemon.ikictl("ls").lines[0]
    assert header.split()[-1] == "WORKTREE"
    assert row_of(daemon, "wt-a").endswith("  ikigai/wt-a") and row_of(daemon, "wt-root").endswith("  -")

    # the agent's work (done here by the test): a commit, then a file not committed
    commit_in(path, "a.txt", "one\ntwo changed\nthree\n", "change two")
    (Path(path) / "new.txt").write_text("not committed\n")
    assert row_of(daemon, "wt-a").endswith("  ikigai/wt-a +1 *1")
    show = daemon.ikictl("show", "wt-a").lines
    for line in (f"worktree:     {path}", "branch:       ikigai/wt-a", f"base:         {head[:8]} (the commit it started from)",
                 f"repo:         {repo} (the checkout merges land in)", "uncommitted:  1 file (changed or new, not committed)",
                 "ahead:        1 commit on the branch that its base lacks"):
        assert line in show
    diff = daemon.ikictl("diff", "wt-a").out
    assert "-two\n+two changed\n" in diff and "+not committed\n" in diff and "b/new.txt" in diff
    stat = daemon.ikictl("diff", "wt-a", "--stat").out
    assert "a.txt" in stat and "new.txt" in stat and "2 files changed" in stat
    rows = daemon.ikictl("worktrees").lines
    assert rows[0].split() == ["AGENT", "STATE", "BRANCH", "BASE", "AHEAD", "DIRTY", "PATH"]
    assert next(r for r in rows if r.startswith("wt-a ")).split() == ["wt-a", "alive", "ikigai/wt-a", head[:8], "1", "1", path]

    # a fast-forward into main, in the parent's checkout; the file not committed stays behind
    merged = daemon.ikictl("merge", "wt-a").out
    assert merged.startswith("merged 1 commit of ikigai/wt-a into main: fast-forward; main is at ")
    assert (repo / "a.txt").read_text() == "one\ntwo changed\nthree\n" and not (repo / "new.txt").exists()
    assert git(repo, "status", "--porcelain") == ""
    assert daemon.ikictl("merge", "wt-a").out.startswith("nothing to merge: main already has")


def test_a_conflict_is_exit_5_and_leaves_the_checkout_as_it_was(daemon: Daemon, repo: Path) -> None:
    daemon.ikictl("new", "--name", "wt-root2", "--cwd", str(repo))
    daemon.ikictl("fork", "wt-root2", "--branch", "fix/b", "--name", "wt-b")
    path = shown(daemon, "wt-b")["worktree"]["path"]
    commit_in(path, "a.txt", "one\ntwo by the agent\nthree\n", "agent's two")
    commit_in(repo, "a.txt", "one\ntwo by hand\nthree\n", "my two")
    before = git(repo, "rev-parse", "HEAD")
    r = daemon.ikictl("merge", "wt-b", code=5)
    assert r.out == "" and "CONFLICT" in r.err
    assert "conflicting paths (1):\n  a.txt\n" in r.err and "the checkout was left unchanged" in r.err
    assert git(repo, "rev-parse", "HEAD") == before and git(repo, "status", "--porcelain") == ""
    assert (repo / "a.txt").read_text() == "one\ntwo by hand\nthree\n"
    err = json.loads(daemon.ikictl("--json", "merge", "wt-b", code=5).err)["error"]
    assert err["code"] == -32008 and err["data"]["conflicts"] == ["a.txt"]

    # a checkout with changes not committed is never merged into
    daemon.ikictl("fork", "wt-root2", "--worktree", "--name", "wt-c")
    other = shown(daemon, "wt-c")["worktree"]["path"]
    commit_in(other, "c1.txt", "1\n", "c one")
    commit_in(other, "c2.txt", "2\n", "c two")
    (repo / "README").write_text("edited, not committed\n")
    r = daemon.ikictl("merge", "wt-c", "--squash", code=2)
    assert "uncommitted changes" in r.err
    assert git(repo, "rev-parse", "HEAD") == before
    git(repo, "checkout", "--", "README")
    out = daemon.ikictl("merge", "wt-c", "--squash", "-m", "both c files").out
    assert out.startswith("squashed 2 commits of ikigai/wt-c into main as commit ")
    assert git(repo, "log", "-1", "--format=%s").strip() == "both c files"
    assert (repo / "c1.txt").exists() and (repo / "c2.txt").exists()


def test_rm_and_kill_prune_the_worktree_only_without_lost_changes(daemon: Daemon, repo: Path) -> None:
    daemon.ikictl("new", "--name", "wt-root3", "--cwd", str(repo))
    daemon.ikictl("fork", "wt-root3", "--worktree", "--name", "wt-d")
    path = Path(shown(daemon, "wt-d")["worktree"]["path"])
    (path / "a.txt").write_text("changed, not committed\n")
    daemon.ikictl("kill", "wt-d")  # without --prune-worktree: the worktree stays
    assert path.is_dir()
    r = daemon.ikictl("rm", "wt-d", "--prune-worktree", code=2)
    assert "uncommitted" in r.err
    assert path.is_dir() and " wt-d " in "\n".join(daemon.ikictl("ls", "--all").lines)  # nothing done
    out = daemon.ikictl("rm", "wt-d", "--prune-worktree", "--force").lines
    assert out[1] == f"  deleted its worktree {path} and its branch ikigai/wt-d"
    assert not path.exists() and "ikigai/wt-d" not in git(repo, "branch", "--list")

    daemon.ikictl("fork", "wt-root3", "--worktree", "--name", "wt-e")
    path = Path(shown(daemon, "wt-e")["worktree"]["path"])
    (path / "x.txt").write_text("new\n")
    r = daemon.ikictl("kill", "wt-e", "--prune-worktree", code=2)
    assert "uncommitted" in r.err and shown(daemon, "wt-e")["status"] == "running" and path.is_dir()
    out = daemon.ikictl("kill", "wt-e", "--prune-worktree", "--force").lines
    assert out[1] == f"deleted its worktree {path} and its branch ikigai/wt-e"
    assert not path.exists() and "ikigai/wt-e" not in git(repo, "branch", "--list")


def test_worktrees_lists_dead_ones_and_prune_deletes_the_clean(daemon: Daemon, repo: Path) -> None:
    daemon.ikictl("new", "--name", "wt-root4", "--cwd", str(repo))
    daemon.ikictl("fork", "wt-root4", "--worktree", "--name", "wt-f")
    daemon.ikictl("fork", "wt-root4", "--worktree", "--name", "wt-g")
    dirty = Path(shown(daemon, "wt-f")["worktree"]["path"])
    clean = Path(shown(daemon, "wt-g")["worktree"]["path"])
    (dirty / "a.txt").write_text("not committed\n")
    daemon.ikictl("kill", "wt-f")
    daemon.ikictl("kill", "wt-g")
    rows = daemon.ikictl("worktrees", "--disk").lines
    assert rows[0].split() == ["AGENT", "STATE", "BRANCH", "BASE", "AHEAD", "DIRTY", "DISK", "PATH"]
    f_row = next(r for r in rows if r.startswith("wt-f ")).split()
    assert f_row[1] == "dead" and f_row[5] == "1" and f_row[-1] == str(dirty)

    dry = daemon.ikictl("prune", "--worktrees", "--dry-run").out
    assert f"wt-g  ikigai/wt-g  {clean}" in dry and str(dirty) in dry.split("kept")[1]
    assert clean.is_dir()  # a dry run deletes nothing
    daemon.ikictl("prune", "--worktrees", code=2)  # stdin is not a terminal: -y needed
    out = daemon.ikictl("prune", "--worktrees", "-y").out
    assert f"wt-g  ikigai/wt-g  {clean}" in out.split("kept")[0] and "uncommitted" in out
    assert not clean.exists() and dirty.is_dir()
    assert "ikigai/wt-g" not in git(repo, "branch", "--list")
    assert not any(r.startswith("wt-g ") for r in daemon.ikictl("worktrees").lines)
    pruned = next(r for r in daemon.ikictl("worktrees", "--all").lines if r.startswith("wt-g "))
    assert pruned.endswith(f"{clean} (pruned)")


def test_new_worktree_starts_an_agent_in_one(daemon: Daemon, repo: Path) -> None:
    out = daemon.ikictl("new", "--worktree", "--cwd", str(repo), "--name", "wt-new").lines
    wt = shown(daemon, "wt-new")["worktree"]
    assert wt["branch"] == "ikigai/wt-new" and wt["repo"] == str(repo)
    assert out[1] == f"worktree: {wt['path']} on branch ikigai/wt-new (from {wt['base'][:8]})"
    daemon.ikictl("new", "--from", "main", "--cwd", str(repo), "--name", "wt-new2")
    assert shown(daemon, "wt-new2")["worktree"]["branch"] == "ikigai/wt-new2"
    r = daemon.ikictl("new", "--worktree", "--cwd", str(repo.parent), "--name", "wt-new3", code=2)
    assert "not inside a git repository" in r.err


def test_bad_worktree_input_is_refused_by_name(daemon: Daemon, repo: Path, tmp: Path) -> None:
    daemon.ikictl("new", "--name", "wt-root5", "--cwd", str(repo))
    before = daemon.ikictl("ls", "--all", "-q").lines
    branches = git(repo, "branch", "--list")
    for argv, words in (
        (["fork", "wt-root5", "--from", "no-such-ref"], "no-such-ref"),
        (["fork", "wt-root5", "--branch", "bad..name"], "bad..name"),
        (["fork", "wt-root5", "--branch", "main"], "'main' already exists"),
        (["fork", "wt-root5", "--worktree", "--cwd", str(tmp)], "not inside a git repository"),
    ):
        r = daemon.ikictl(*argv, code=2)
        assert words in r.err, (argv, r.err)
    assert daemon.ikictl("ls", "--all", "-q").lines == before
    assert git(repo, "branch", "--list") == branches
