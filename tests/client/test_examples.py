"""The documented examples (examples/*.py) run as scripts against the real
daemon: what docs/scripting.md shows works."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ikigai
from tests._ready import READY_TIMEOUT, file_has, wait_ready

from .conftest import Daemon

ROOT = Path(__file__).resolve().parents[2]


def run_example(daemon: Daemon, name: str, *args: str, **kw) -> subprocess.CompletedProcess:
    """Run an example to its end, bounded by the suite's start-up bound (its
    own start is most of its time); one still running fails with its output."""
    try:
        return subprocess.run(
            [sys.executable, str(ROOT / "examples" / name), "--socket", str(daemon.socket), *args],
            capture_output=True, text=True, env=daemon.env, timeout=READY_TIMEOUT, **kw,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(
            f"examples/{name} still running after {READY_TIMEOUT:g} s\nstdout:\n{e.stdout!r}\nstderr:\n{e.stderr!r}"
        ) from None


def test_fanout_gathers_ten_answers(daemon):
    r = run_example(daemon, "fanout.py")
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert [row[0] for row in rows] == [str(i) for i in range(10)]
    assert all(row[1] == "completed" for row in rows)
    # each fork answered its own question (the fake echoes the prompt)
    for _i, _status, question, reply in rows:
        assert f"You said: {question}" in reply
    assert "10 forks, 0 failed" in r.stderr
    with ikigai.connect(str(daemon.socket), autostart=False) as c:
        forks = [a for a in c.agents() if a["name"].startswith("fanout-") and a["name"] != "fanout-root"]
        root = next(a for a in c.agents() if a["name"] == "fanout-root")
        assert len(forks) == 10 and all(a["parent"] == root["uuid"] for a in forks)
        # a fork's history starts with what it inherited from the root
        hist = c.history(forks[0]["uuid"])["messages"]
        assert [m["agent"] for m in hist[:2]] == [root["uuid"]] * 2


def test_watch_tools_logs_each_call_as_it_happens(daemon, tmp_path):
    errors = tmp_path / "watch_tools.err"
    with ikigai.connect(str(daemon.socket), autostart=False) as c, errors.open("w") as err_file:
        agent = c.create(name="watched")["agent"]["uuid"]
        watcher = subprocess.Popen(
            [sys.executable, str(ROOT / "examples" / "watch_tools.py"), agent, "--count", "2",
             "--socket", str(daemon.socket)],
            stdout=subprocess.PIPE, stderr=err_file, text=True, env=daemon.env,
        )
        try:
            # it says "watching" once subscribed: only then are the prompts sent
            wait_ready(watcher, file_has(errors, "watching"), "examples/watch_tools.py", output=[errors])
            assert errors.read_text().startswith("watching")
            first = c.prompt(agent, "run a tool please")
            second = c.prompt(agent, "run another command please")
            assert first.wait()["status"] == "completed" and second.wait()["status"] == "completed"
            out, _ = watcher.communicate(timeout=30)
            err = errors.read_text()
        finally:
            if watcher.poll() is None:
                watcher.kill()
                time.sleep(0.1)
    assert watcher.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 4, out
    assert [line.split()[2:4] for line in lines] == [["call", "bash"], ["ok", "bash:"]] * 2
    assert [line.split()[1] for line in lines] == [first.id, first.id, second.id, second.id]
    assert '"command"' in lines[0]


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_async_fanout_under_each_backend(daemon, backend):
    r = run_example(daemon, "async_fanout.py", "--backend", backend, "--forks", "6")
    assert r.returncode == 0, r.stderr
    rows = dict(line.split("\t", 1) for line in r.stdout.splitlines())
    assert sorted(rows) == [str(i) for i in range(6)]
    for i, reply in rows.items():
        assert f"You said: What is {i} squared?" in reply
    assert "6 answers" in r.stderr


INVOICES = [
    ("Acme Tools", "A-1001", "2026-01-05", 120.5, "EUR"),
    ("Bolt & Nut", "BN-7", "5 Feb 2026", 99.0, "USD"),
    ("Cogs Ltd", "C-33", "2026-03-01", 1250.0, "GBP"),
    ("Dyna Corp", "D-1", "2026-04-11", 7.25, "EUR"),
    ("Echo SA", "E-909", "2026-05-30", 3000.0, "CHF"),
]


def _invoices(folder: Path) -> None:
    folder.mkdir()
    for i, (vendor, number, date, total, currency) in enumerate(INVOICES):
        (folder / f"inv-{i}.txt").write_text(
            f"INVOICE\nVendor: {vendor}\nInvoice number: {number}\nDate: {date}\n"
            f"Items: 3 widgets\nTotal: {total:,.2f}\nCurrency: {currency}\nThank you!\n"
        )


@pytest.mark.parametrize("model", [None, "claude-sonnet-4-20250514"])
def test_extract_gives_one_validated_record_per_file_from_parallel_forks(daemon, tmp_path, model):
    """Natively (the default model takes a response schema), and through the
    final_result tool (one that does not); forks of one agent, three at a time."""
    folder = tmp_path / "invoices"
    _invoices(folder)
    more = ["--model", model] if model else []
    name = f"extract-{model or 'default'}"
    r = run_example(daemon, "extract.py", str(folder), "--jobs", "3", "--name", name, *more)
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in r.stdout.splitlines()]
    assert [rec["file"] for rec in records] == [f"inv-{i}.txt" for i in range(len(INVOICES))]
    for rec, (vendor, number, date, total, currency) in zip(records, INVOICES, strict=True):
        assert rec == {
            "file": rec["file"], "vendor": vendor, "invoice_number": number, "date": date,
            "total": total, "currency": currency,
        }
    assert f"{len(INVOICES)} files, 0 failed" in r.stderr
    with ikigai.connect(str(daemon.socket), autostart=False) as c:
        agents = c.agents()
        root = next(a for a in agents if a["name"] == name)
        forks = [a for a in agents if a["parent"] == root["uuid"]]
        assert len(forks) == len(INVOICES)


def test_extract_names_a_file_without_a_valid_record_and_exits_1(daemon, tmp_path):
    """A credit note's negative total breaks the record's ``total >= 0``:
    one corrective retry (the demo model answers the same), then the turn
    fails invalid_output; the other files' records are still printed."""
    folder = tmp_path / "docs"
    _invoices(folder)
    (folder / "inv-9.txt").write_text("CREDIT NOTE\nVendor: Acme Tools\nTotal: -20.00\nCurrency: EUR\n")
    r = run_example(daemon, "extract.py", str(folder), "--name", "extract-credit")
    assert r.returncode == 1
    assert "inv-9.txt: invalid_output: the answer does not match the schema" in r.stderr
    assert "-20.0 is less than the minimum of 0" in r.stderr
    assert len(r.stdout.splitlines()) == len(INVOICES)
    assert f"{len(INVOICES) + 1} files, 1 failed" in r.stderr
