"""``ikictl schedule add|ls|show|rm|pause|resume|run`` (issue 31): the parser
(no daemon), the tables from results shaped as docs/protocol.md's Schedule and
Run, the params sent (a canned JSON-RPC server on a real Unix socket), the
history marker of a scheduled run, and the whole family against the real
daemon and the fake provider."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import ikigai
from ikictl import render, schedule
from ikictl.cli import main, parse
from ikictl.histview import tools_view
from tests._ready import READY_TIMEOUT

from .conftest import ROOT, Daemon, clean_env
from .test_mcp_cli import HOSTILE, canned, controls, ikictl

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PARIS = ZoneInfo("Europe/Paris")  # CET (UTC+1) on these dates
UUID = "0190aaaa-0000-7000-8000-000000000001"
FORK = "0190bbbb-0000-7000-8000-000000000009"

FIRED = {
    "id": 12, "schedule": 3, "due_at": "2026-11-30T08:00:00Z", "fired_at": "2026-11-30T08:00:05Z",
    "status": "fired", "reason": None, "agent": UUID, "turn": "00000001-1a2b3c4d",
    "turn_status": "completed",
}
SKIPPED = {
    "id": 13, "schedule": 3, "due_at": "2026-11-30T11:50:00Z", "fired_at": "2026-11-30T11:50:00Z",
    "status": "skipped", "reason": "the previous run (12) is still running", "agent": None,
    "turn": None, "turn_status": None,
}
NIGHTLY = {
    "id": 3, "name": "nightly", "agent": UUID, "agent_name": "main", "fork": False, "keep": None,
    "prompt": "summarize the day", "rule": "cron 0 9 * * 1-5 (Europe/Paris)",
    "cron": "0 9 * * 1-5", "tz": "Europe/Paris", "every": None, "at": None,
    "missed": "once", "overlap": "skip", "budget_usd": None,
    "status": "active", "next_run": "2026-12-01T08:00:00Z", "fired": 4, "skipped": 1,
    "last_run": FIRED, "created_at": "2026-11-27T22:00:00Z",
}
FORKS = {
    **NIGHTLY, "id": 4, "name": None, "agent_name": None, "fork": True, "keep": 3, "budget_usd": 0.5,
    "rule": "every 10m", "cron": None, "tz": None, "every": 600, "status": "paused",
    "next_run": None, "fired": 0, "skipped": 1, "last_run": SKIPPED,
}


# ---------------------------------------------------------------- the parser (no daemon)


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """argparse's refusal of ``argv``: exit 2, the message on stderr."""
    with pytest.raises(SystemExit) as e:
        parse(argv)
    assert e.value.code == 2
    return capsys.readouterr().err


ADD = ["schedule", "add", "main"]


@pytest.mark.parametrize(
    ("rule", "key", "value"),
    [
        (["--cron", "0 9 * * 1-5", "--tz", "Europe/Paris"], "cron", "0 9 * * 1-5"),
        (["--every", "10m"], "every", "10m"),
        (["--at", "2026-12-01T09:00"], "at", "2026-12-01T09:00"),
        (["--in", "2h"], "in_", "2h"),
        # passed as typed: the daemon is the one that parses and names the bad field
        (["--every", "ten minutes"], "every", "ten minutes"),
        (["--cron", "61 * * * *"], "cron", "61 * * * *"),
    ],
)
def test_each_rule_is_parsed_as_typed(rule: list[str], key: str, value: str) -> None:
    args = parse([*ADD, *rule, "do it"])
    assert getattr(args, key) == value
    assert (args.agent, args.prompt, args.func) == ("main", "do it", "schedule:cmd_add")
    # the options may come after the prompt too
    assert getattr(parse([*ADD, "do it", *rule]), key) == value


def test_the_rule_is_required_and_only_one(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused([*ADD, "do it"], capsys)
    assert "one of the arguments --cron --every --at --in is required" in err
    err = refused([*ADD, "--every", "10m", "--in", "2h", "do it"], capsys)
    assert "argument --in: not allowed with argument --every" in err
    err = refused([*ADD, "--cron", "* * * * *", "--at", "2026-12-01T09:00", "x"], capsys)
    assert "argument --at: not allowed with argument --cron" in err


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--keep", "3"], ["--keep goes with --fork"]),
        (["--budget", "0.5"], ["--budget goes with --fork"]),
        (["--fork", "--keep", "0"], ["argument --keep", "1 or more"]),
        (["--fork", "--keep", "many"], ["argument --keep", "not a whole number"]),
        (["--fork", "--budget", "-1"], ["argument --budget", "positive"]),
        (["--fork", "--budget", "nan"], ["argument --budget"]),
        (["--missed", "never"], ["argument --missed", "invalid choice: 'never'"]),
        (["--overlap", "wait"], ["argument --overlap", "invalid choice: 'wait'"]),
        (["--tz", "Europe/Paris"], ["--tz goes with --cron or --at", "--every"]),
        (["--frok"], ["unrecognized arguments: --frok"]),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(
    extra: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused([*ADD, "--every", "10m", *extra, "do it"], capsys)
    # (argparse has the unknown option said by `schedule`'s parser, not `add`'s)
    assert err.startswith("usage: ikictl schedule")
    for w in words:
        assert w in err


def test_the_fork_options_and_the_policies_parse() -> None:
    args = parse([*ADD, "--in", "2h", "--fork", "--keep", "2", "--budget", "0.25", "--name", "n",
                  "--missed", "all", "--overlap", "queue", "--allow-fast", "x"])
    assert (args.fork, args.keep, args.budget, args.name) == (True, 2, 0.25, "n")
    assert (args.missed, args.overlap, args.allow_fast) == ("all", "queue", True)
    args = parse([*ADD, "--at", "2026-12-01T09:00", "--tz", "UTC", "x"])
    assert (args.at, args.tz) == ("2026-12-01T09:00", "UTC")


@pytest.mark.parametrize(
    ("argv", "func"),
    [
        (["ls"], "schedule:cmd_ls"),
        (["ls", "--all"], "schedule:cmd_ls"),
        (["show", "3", "--limit", "5"], "schedule:cmd_show"),
        (["rm", "nightly"], "schedule:cmd_rm"),
        (["pause", "3"], "schedule:cmd_pause"),
        (["resume", "3"], "schedule:cmd_resume"),
        (["run", "3"], "schedule:cmd_run"),
    ],
)
def test_the_other_actions_parse(argv: list[str], func: str) -> None:
    assert parse(["schedule", *argv]).func == func


def test_the_other_actions_refuse_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert "the following arguments are required: ACTION" in refused(["schedule"], capsys)
    assert "the following arguments are required: ID" in refused(["schedule", "rm"], capsys)
    assert "argument --limit" in refused(["schedule", "show", "3", "--limit", "x"], capsys)
    assert "invalid choice: 'list'" in refused(["schedule", "list"], capsys)


def test_a_bad_flag_with_json_is_one_json_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json", *ADD, "--every", "10m", "--keep", "2", "x"]) == 2
    err = json.loads(capsys.readouterr().err)["error"]
    assert err["exit"] == 2 and err["message"].startswith("--keep goes with --fork")


def help_text(*argv: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "ikictl", *argv, "--help"], capture_output=True, text=True,
        cwd=ROOT, env=clean_env(ROOT), timeout=30, check=True,
    )
    return r.stdout


def test_help_says_what_each_option_takes() -> None:
    add = help_text("schedule", "add")
    for example in ('--cron "0 9 * * 1-5" --tz', "Europe/Paris", "--every 10m", "--at 2026-12-01T09:00",
                    "--in 2h", "--allow-fast", "IANA"):
        assert example in add
    # what --missed and --overlap do, each value; what --fork and --keep do
    for words in ("skip   none of them runs", "once   one run for all of them", "all    each of them runs",
                  "queue  it is queued behind", "fresh fork of AGENT", "--keep N", "most recent finished forks"):
        assert words in add
    top = help_text("schedule")
    for action in ("add", "ls", "show", "rm", "pause", "resume", "run"):
        assert f"\n    {action} " in top
    assert "--cron" in top and "--every 10m" in top
    assert "schedule" in help_text()
    for action in ("ls", "show", "rm", "pause", "resume", "run"):
        assert help_text("schedule", action).startswith(f"usage: ikictl schedule {action}")


def test_bash_completes_the_actions_and_the_policies() -> None:
    from .test_completion import _complete

    env = {"PATH": os.environ["PATH"]}
    assert set(_complete(["ikictl", "schedule", ""], env)) == {
        "add", "ls", "show", "rm", "pause", "resume", "run", "--json", "--no-autostart", "--socket", "-h", "--help",
    }
    assert _complete(["ikictl", "schedule", "add", "a", "--missed", ""], env) == ["skip", "once", "all"]
    assert _complete(["ikictl", "schedule", "add", "a", "--overlap", "q"], env) == ["queue"]
    assert "--allow-fast" in _complete(["ikictl", "schedule", "add", "--al"], env)


# ---------------------------------------------------------------- rendering


def test_ls_is_a_table_of_the_schedules() -> None:
    out = io.StringIO()
    schedule.schedules_table([NIGHTLY, FORKS], out, now=NOW, tz=PARIS)
    assert out.getvalue().splitlines() == [
        "ID  NAME     AGENT             RULE                             NEXT RUN               LAST RUN               FIRED/SKIPPED  STATUS",
        " 3  nightly  main              cron 0 9 * * 1-5 (Europe/Paris)  Dec 01 09:00 (in 20h)  3h 59m ago, completed            4/1  active",
        " 4  -        fork of 0190aaaa  every 10m                        -                      10m ago, skipped                 0/1  paused",
    ]


def test_ls_says_a_run_waits_for_approval_and_colors_it() -> None:
    waiting = {**NIGHTLY, "last_run": {**FIRED, "turn_status": "waiting_for_approval"}}
    out = io.StringIO()
    schedule.schedules_table([waiting], out, now=NOW, tz=PARIS, color=True)
    assert f"{render.YELLOW}3h 59m ago, waiting_for_approval{render.RESET}" in out.getvalue()


def test_an_empty_list_says_how_to_add_one() -> None:
    out = io.StringIO()
    schedule.schedules_table([], out)
    assert out.getvalue().splitlines() == [
        "no schedules; add one with",
        '  ikictl schedule add AGENT --every 1h "PROMPT"   (ikictl schedule add --help)',
    ]


def test_show_gives_the_fields_then_the_runs_newest_first() -> None:
    out = io.StringIO()
    schedule.show_schedule({**NIGHTLY, "runs": [SKIPPED, FIRED]}, out, now=NOW, tz=PARIS)
    assert out.getvalue().splitlines() == [
        "schedule:  3",
        "name:      nightly",
        "status:    active",
        f"agent:     main ({UUID})",
        "rule:      cron 0 9 * * 1-5 (Europe/Paris)",
        "next run:  Dec 01 09:00 (in 20h)",
        "last run:  3h 59m ago, completed",
        "runs:      4 fired, 1 skipped",
        "missed:    once (due times missed while the daemon was down)",
        "overlap:   skip (a run due while the previous one goes)",
        "prompt:    summarize the day",
        "created:   Nov 27 23:00 (2d 14h ago)",
        "",
        "RUN  DUE    STATUS                                           AGENT  TURN               TURN STATUS",
        " 13  12:50  skipped: the previous run (12) is still running  -      -                  -",
        " 12  09:00  fired                                            main   00000001-1a2b3c4d  completed",
    ]


def test_show_of_a_fork_schedule_names_each_runs_fork() -> None:
    out = io.StringIO()
    schedule.show_schedule({**FORKS, "runs": [{**FIRED, "agent": FORK}]}, out, now=NOW, tz=PARIS)
    lines = out.getvalue().splitlines()
    assert f"agent:     {UUID}; a fresh fork each run, the 3 newest kept, budget $0.50 each" in lines
    assert lines[-1].split() == ["12", "09:00", "fired", FORK, "00000001-1a2b3c4d", "completed"]
    out = io.StringIO()
    schedule.show_schedule({**FORKS, "runs": []}, out, now=NOW, tz=PARIS)
    assert out.getvalue().endswith("\nno runs yet\n")


def test_times_are_local_and_relative() -> None:
    utc = ZoneInfo("UTC")
    at = datetime(2026, 11, 30, 15, 12, tzinfo=UTC)
    assert schedule.clock(at, NOW, utc) == "15:12"
    assert schedule.clock(at, NOW, PARIS) == "16:12"
    assert schedule.clock(datetime(2027, 1, 2, 3, 4, tzinfo=UTC), NOW, utc) == "2027-01-02 03:04"
    assert schedule.relative(at, NOW) == "in 3h 12m"
    assert schedule.relative(NOW, NOW) == "now"
    assert [schedule.span(s) for s in (0, 59, 60, 61, 3600, 3660, 90000, 200000)] == [
        "0s", "59s", "1m", "1m 1s", "1h", "1h 1m", "1d 1h", "2d 7h",
    ]
    assert schedule.next_text({"next_run": None}) == "-"
    assert schedule.next_text({"next_run": "not a time"}) == "-"
    assert schedule.last_text({"last_run": None}) == "-"


def test_run_says_what_it_started_or_why_not() -> None:
    assert schedule.run_text({**FIRED, "turn_status": "queued"}) == (
        f"run 12 of schedule 3: started turn 00000001-1a2b3c4d on agent {UUID} (queued)"
    )
    assert schedule.run_text(SKIPPED) == (
        "run 13 of schedule 3 skipped: the previous run (12) is still running"
    )


def test_hostile_texts_drive_no_terminal() -> None:
    bad = {**NIGHTLY, "name": HOSTILE, "agent_name": HOSTILE, "prompt": HOSTILE, "rule": HOSTILE,
           "status": HOSTILE, "last_run": {**FIRED, "turn_status": HOSTILE}}
    run = {**SKIPPED, "reason": HOSTILE}
    for color in (False, True):
        out = io.StringIO()
        schedule.schedules_table([bad], out, now=NOW, color=color)
        schedule.show_schedule({**bad, "runs": [run, {**FIRED, "agent": HOSTILE, "turn": HOSTILE}]},
                               out, now=NOW, color=color)
        text = out.getvalue().replace(render.YELLOW, "").replace(render.RESET, "")
        assert not controls(text)
    assert not controls(schedule.run_text(run) + schedule.run_text({**FIRED, "turn": HOSTILE}))


# ---------------------------------------------------------------- history: a scheduled run's prompt


ROWS = [
    {"id": 7, "agent": UUID, "kind": "user", "content": "summarize the day", "created_at": "2026-11-30T08:00:05Z",
     "data": {"turn": "t1", "schedule": 3, "schedule_run": 12}, "turn": "t1", "turn_status": "completed",
     "blocks": [{"type": "text", "text": "summarize the day"}]},
    {"id": 8, "agent": UUID, "kind": "assistant", "content": "done", "created_at": "2026-11-30T08:00:06Z",
     "data": {"model": "m"}, "turn": "t1", "turn_status": "completed", "blocks": [{"type": "text", "text": "done"}]},
    {"id": 9, "agent": UUID, "kind": "user", "content": "by hand", "created_at": "2026-11-30T09:00:00Z",
     "data": {"turn": "t2"}, "turn": "t2", "turn_status": "completed", "blocks": [{"type": "text", "text": "by hand"}]},
]


def test_history_marks_the_prompt_of_a_scheduled_run() -> None:
    out = io.StringIO()
    render.history(ROWS, out)  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert lines[0] == "#7  08:00:05  user [schedule 3, run 12]  summarize the day"
    assert lines[2] == "#9  09:00:00  user  by hand"
    out = io.StringIO()
    tools_view(ROWS, out)
    heads = [ln for ln in out.getvalue().splitlines() if ln.startswith("──")]
    assert heads == ["── turn t1 · completed, schedule 3, run 12 ──", "── turn t2 · completed ──"]
    assert schedule.scheduled({"schedule": HOSTILE}) == "schedule x^[]0;pwned^G ^[[2J\\x9b31m^?^MFAKE"
    out = io.StringIO()
    render.history([{**ROWS[0], "data": {"schedule": HOSTILE}}], out)  # type: ignore[list-item]
    assert not controls(out.getvalue())


# ---------------------------------------------------------------- the params sent (a canned daemon)


@pytest.fixture
def tmp() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="iksch"))  # short: a socket path has a length limit
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_add_sends_only_what_was_given_as_typed(tmp: Path) -> None:
    with canned(tmp, {"schedule.add": NIGHTLY}) as srv:
        out = ikictl(tmp, "schedule", "add", "main", "--cron", "0 9 * * 1-5", "--tz", "Europe/Paris",
                     "--name", "nightly", "summarize the day").stdout
        ikictl(tmp, "schedule", "add", "main", "--in", "2h", "--fork", "--keep", "2", "--budget", "0.5",
               "--missed", "all", "--overlap", "queue", "--allow-fast", "x")
        sent = srv.sent("schedule.add")
    assert out.startswith("added schedule 3 (nightly): cron 0 9 * * 1-5 (Europe/Paris); next run ")
    # an option not given is absent (the client leaves out None): the daemon's default holds
    assert sent == [
        {"agent": "main", "prompt": "summarize the day", "cron": "0 9 * * 1-5", "tz": "Europe/Paris",
         "fork": False, "name": "nightly", "allow_fast": False},
        {"agent": "main", "prompt": "x", "in": "2h", "fork": True, "keep": 2, "budget_usd": 0.5,
         "missed": "all", "overlap": "queue", "allow_fast": True},
    ]


def test_add_reads_the_prompt_from_stdin(tmp: Path) -> None:
    with canned(tmp, {"schedule.add": NIGHTLY}) as srv:
        r = subprocess.run(
            [sys.executable, "-m", "ikictl", "--no-autostart", "--socket", str(tmp / "s.sock"),
             "schedule", "add", "main", "--every", "1h", "-"],
            input="check the build\n", capture_output=True, text=True, env=clean_env(tmp), cwd=ROOT,
            timeout=30,
        )
        assert r.returncode == 0, r.stderr
        assert srv.sent("schedule.add")[0]["prompt"] == "check the build"


def test_each_action_sends_its_method_and_prints_the_answer(tmp: Path) -> None:
    answers = {
        "schedule.list": [NIGHTLY], "schedule.show": {**NIGHTLY, "runs": [FIRED]},
        "schedule.remove": {"removed": 3}, "schedule.pause": {**NIGHTLY, "status": "paused", "next_run": None},
        "schedule.resume": NIGHTLY, "schedule.run": SKIPPED,
    }
    with canned(tmp, answers) as srv:
        assert ikictl(tmp, "schedule", "ls").stdout.splitlines()[0].split()[:4] == ["ID", "NAME", "AGENT", "RULE"]
        ikictl(tmp, "schedule", "ls", "--all")
        assert json.loads(ikictl(tmp, "schedule", "ls", "--json").stdout) == [NIGHTLY]
        assert "RUN" in ikictl(tmp, "schedule", "show", "nightly", "--limit", "5").stdout
        assert json.loads(ikictl(tmp, "schedule", "show", "3", "--json").stdout)["runs"] == [FIRED]
        assert ikictl(tmp, "schedule", "rm", "3").stdout == "removed schedule 3\n"
        assert ikictl(tmp, "schedule", "pause", "3").stdout == "paused schedule 3 (nightly)\n"
        assert ikictl(tmp, "schedule", "resume", "3").stdout.startswith("resumed schedule 3 (nightly): next run ")
        assert ikictl(tmp, "schedule", "run", "3").stdout == (
            "run 13 of schedule 3 skipped: the previous run (12) is still running\n"
        )
        r = ikictl(tmp, "schedule", "show", "3", "--limit", "0", code=2)
        assert "--limit must be 1 or more" in r.stderr
    assert srv.sent("schedule.list") == [{"all": False}, {"all": True}, {"all": False}]
    # the id or name as typed: the daemon takes both
    assert srv.sent("schedule.show") == [{"schedule": "nightly", "limit": 5}, {"schedule": "3"}]
    for method in ("remove", "pause", "resume", "run"):
        assert srv.sent(f"schedule.{method}") == [{"schedule": "3"}]


@pytest.mark.parametrize(
    ("error", "code", "text"),
    [
        ({"code": -32602, "message": "tz: unknown time zone 'Mars/Base'"}, 2, "ikictl: tz: unknown time zone 'Mars/Base'\n"),
        ({"code": -32003, "message": "agent main is dead"}, 2, "ikictl: agent main is dead\n"),
        ({"code": -32001, "message": "no agent 'nope'"}, 4, "ikictl: no agent 'nope'\n"),
        ({"code": -32007, "message": "no schedule 'nope'"}, 4, "ikictl: no schedule 'nope'\n"),
    ],
)
def test_the_daemons_errors_are_said_as_other_commands_say_them(
    tmp: Path, error: dict[str, Any], code: int, text: str
) -> None:
    with canned(tmp, {"schedule.add": {"error": error}, "schedule.run": {"error": error}}):
        assert ikictl(tmp, "schedule", "add", "main", "--every", "1h", "x", code=code).stderr == text
        assert ikictl(tmp, "schedule", "run", "nope", code=code).stderr == text
        r = ikictl(tmp, "--json", "schedule", "run", "nope", code=code)
    assert json.loads(r.stderr)["error"]["code"] == error["code"]


def test_the_schedule_commands_import_nothing_heavy(tmp: Path) -> None:
    with canned(tmp, {"schedule.list": [NIGHTLY]}):
        r = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ikictl", "--no-autostart", "--socket",
             str(tmp / "s.sock"), "schedule", "ls"],
            capture_output=True, text=True, env=clean_env(tmp), cwd=ROOT, timeout=30, check=True,
        )
    loaded = {ln.split("|")[-1].strip().split(".")[0] for ln in r.stderr.splitlines() if "|" in ln}
    assert "ikictl" in loaded and "nightly" in r.stdout
    assert not loaded & {"trio", "httpx", "msgspec", "sqlalchemy", "anyio", "typing", "agents", "cronsim"}


# ---------------------------------------------------------------- the real daemon


def schedules(d: Daemon, *extra: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = d.ikictl("schedule", "ls", "--json", *extra).json()  # type: ignore[assignment]
    return rows


def wait_turn(d: Daemon, agent: str, turn: str) -> str:
    """How ``turn`` ended, once it has (the daemon answers then: no polling)."""
    with ikigai.connect(str(d.socket), autostart=False) as c:
        return c.wait_turn(agent, turn, timeout=READY_TIMEOUT)["status"]


def test_add_ls_show_run_pause_resume_rm(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "sched-main")
    before = schedules(daemon, "--all")
    # every bad value is refused by the daemon naming it, exit 2, nothing stored
    for rule, field in (
        (["--cron", "61 * * * *"], "cron: "),
        (["--cron", "0 9 * * *", "--tz", "Mars/Base"], "tz: "),
        (["--every", "30s"], "every: "),
        (["--every", "10"], "every: "),
        (["--at", "2020-01-01T09:00"], "at: "),
        (["--in", "soon"], "in: "),
    ):
        r = daemon.ikictl("schedule", "add", "sched-main", *rule, "x", code=2)
        assert r.err.startswith(f"ikictl: {field}"), (rule, r.err)
    assert "allow_fast" in daemon.ikictl("schedule", "add", "sched-main", "--every", "30s", "x", code=2).err
    r = daemon.ikictl("schedule", "add", "no-such-agent", "--every", "1h", "x", code=4)
    assert "no-such-agent" in r.err
    assert schedules(daemon, "--all") == before

    # an hour apart: nothing fires by itself during the test, `run` fires it
    added = daemon.ikictl("schedule", "add", "sched-main", "--every", "1h", "--name", "hourly",
                          "--json", "what time is it?").json()
    assert isinstance(added, dict)
    sid = added["id"]
    assert (added["name"], added["agent_name"], added["status"], added["fired"]) == ("hourly", "sched-main", "active", 0)
    assert added["every"] == 3600 and added["missed"] == "once" and added["overlap"] == "skip"
    table = daemon.ikictl("schedule", "ls").lines
    assert table[0].split() == ["ID", "NAME", "AGENT", "RULE", "NEXT", "RUN", "LAST", "RUN", "FIRED/SKIPPED", "STATUS"]
    row = next(ln for ln in table[1:] if " hourly " in ln)
    assert "sched-main" in row and "every" in row and "(in " in row and row.endswith("0/0  active")
    assert daemon.ikictl("schedule", "show", "hourly").out.endswith("\nno runs yet\n")

    out = daemon.ikictl("schedule", "run", "hourly").out
    assert out.startswith("run ") and f" of schedule {sid}: started turn " in out
    run = daemon.ikictl("schedule", "show", str(sid), "--json").json()["runs"][0]  # type: ignore[index]
    assert run["status"] == "fired" and run["agent"] == added["agent"]
    assert wait_turn(daemon, run["agent"], run["turn"]) == "completed"
    shown = daemon.ikictl("schedule", "show", "hourly").lines
    assert "runs:      1 fired, 0 skipped" in shown
    assert shown[-1].split()[2:] == ["fired", "sched-main", run["turn"], "completed"]
    # the run's prompt says which schedule and run it came from
    history = daemon.ikictl("history", "sched-main").lines
    assert any(f"user [schedule {sid}, run {run['id']}]  what time is it?" in ln for ln in history)
    tools = daemon.ikictl("history", "sched-main", "--tools").out
    assert f"· completed, schedule {sid}, run {run['id']} ──" in tools

    assert daemon.ikictl("schedule", "pause", "hourly").out == f"paused schedule {sid} (hourly)\n"
    assert next(s for s in schedules(daemon) if s["id"] == sid)["status"] == "paused"
    assert daemon.ikictl("schedule", "resume", str(sid)).out.startswith(f"resumed schedule {sid} (hourly): next run ")
    assert daemon.ikictl("schedule", "rm", "hourly").out == f"removed schedule {sid}\n"
    assert sid not in [s["id"] for s in schedules(daemon)]
    assert next(s for s in schedules(daemon, "--all") if s["id"] == sid)["status"] == "removed"
    r = daemon.ikictl("schedule", "show", "no-such-schedule", code=4)
    assert "no-such-schedule" in r.err


def test_a_fork_schedule_runs_in_a_fork_and_leaves_the_agent_as_it_was(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "sched-parent", "hello")
    before = daemon.ikictl("history", "sched-parent", "--json").json()
    added = daemon.ikictl("schedule", "add", "sched-parent", "--every", "1h", "--fork", "--keep", "1",
                          "--json", "run in a fork").json()
    assert isinstance(added, dict) and added["fork"] is True and added["keep"] == 1
    row = next(ln for ln in daemon.ikictl("schedule", "ls").lines if ln.lstrip().startswith(f"{added['id']} "))
    assert "fork of sched-parent" in row
    run = daemon.ikictl("schedule", "run", str(added["id"]), "--json").json()
    assert isinstance(run, dict) and run["status"] == "fired" and run["agent"] != added["agent"]
    assert wait_turn(daemon, run["agent"], run["turn"]) == "completed"
    assert daemon.ikictl("history", "sched-parent", "--json").json() == before
    shown = daemon.ikictl("schedule", "show", str(added["id"])).lines
    assert shown[-1].split()[3:] == [run["agent"], run["turn"], "completed"]
    daemon.ikictl("schedule", "rm", str(added["id"]))
