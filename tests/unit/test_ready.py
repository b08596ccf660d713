"""tests/_ready.py and the fixtures built on it, against stub processes: a
tiny Python script that opens its socket late, answers late, or exits.

The defect they keep away (issue 28): on a machine at a load average of 50,
ikigaid took more than the fixtures' fixed 20 s to open its socket, and the
failure said only "did not open its socket within 20 s".
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

import tests._ready as ready
import tests.ikictl.conftest as ikictl_fixtures
from tests._ready import NotReady, await_ready, daemon_answers, file_has, tcp_listens, wait_ready
from tests.daemon.conftest import DaemonProcess

# A stand-in for a server: says it is starting, binds its Unix socket after
# STUB_BIND_AFTER s, answers each request line after STUB_ANSWER_AFTER s more
# (till then connections wait in the backlog, as ikigaid's do while it
# restores its agents); with STUB_EXIT it prints a reason and exits instead.
STUB = r"""
import json, os, socket, sys, time
env = os.environ
print("stub: loading modules", file=sys.stderr, flush=True)
if env.get("STUB_MARK"):  # said: a test may look now
    open(env["STUB_MARK"], "w").close()
if env.get("STUB_EXIT"):
    time.sleep(0.2)
    print("stub: config.json: default_model: Expected str, got integer", file=sys.stderr, flush=True)
    sys.exit(int(env["STUB_EXIT"]))
time.sleep(float(env.get("STUB_BIND_AFTER", "0")))
path = env.get("STUB_SOCKET") or os.path.join(env["IKIGAI_HOME"], "run", "ikigai.sock")
os.makedirs(os.path.dirname(path), exist_ok=True)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(64)
print("stub: listening", file=sys.stderr, flush=True)
time.sleep(float(env.get("STUB_ANSWER_AFTER", "0")))
while True:
    c, _ = s.accept()
    try:  # a client that gave up waiting has gone
        line = c.makefile("rb").readline()
        if line:
            answer = {"jsonrpc": "2.0", "id": json.loads(line)["id"], "result": {"pid": os.getpid()}}
            c.sendall(json.dumps(answer).encode() + b"\n")
    except OSError:
        pass
    c.close()
"""


@pytest.fixture
def short_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="ikr-", dir="/tmp"))  # short: socket paths are limited
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def spawn(short_dir: Path) -> Iterator:
    """``spawn(**STUB_VARS)``: the stub as a process (killed at the end); its
    stderr goes to a file (``out``) unless ``stderr`` is given."""
    procs: list[subprocess.Popen] = []

    def start(*, stderr: object = None, **stub: str) -> subprocess.Popen:
        env = {"STUB_SOCKET": str(short_dir / "s.sock"), **stub}
        with (short_dir / "out").open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-c", STUB], env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=out if stderr is None else stderr,
            )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


# ------------------------------------------------------------------ the helper


def test_a_socket_opened_late_is_polled_for_until_it_answers(spawn, short_dir: Path) -> None:
    began = time.monotonic()
    proc = spawn(STUB_BIND_AFTER="1.0")
    wait_ready(proc, daemon_answers(short_dir / "s.sock"), "stub", output=[short_dir / "out"], bound=60)
    assert time.monotonic() - began >= 1.0
    assert daemon_answers(short_dir / "s.sock")()


def test_a_socket_that_accepts_before_it_answers_is_not_ready(spawn, short_dir: Path) -> None:
    # connect() succeeds at once (the backlog): only an answer counts
    began = time.monotonic()
    proc = spawn(STUB_ANSWER_AFTER="1.5")
    wait_ready(proc, file_has(short_dir / "out", "stub: listening"), "stub", bound=60)
    assert not daemon_answers(short_dir / "s.sock", probe_timeout=0.2)()
    wait_ready(proc, daemon_answers(short_dir / "s.sock"), "stub", output=[short_dir / "out"], bound=60)
    assert time.monotonic() - began >= 1.5


@pytest.mark.parametrize("where", ["file", "pipe"])
def test_a_process_that_exits_first_fails_at_once_with_its_output(spawn, short_dir: Path, where: str) -> None:
    proc = spawn(STUB_EXIT="3", stderr=subprocess.PIPE if where == "pipe" else None)
    output = [short_dir / "out"] if where == "file" else []
    began = time.monotonic()
    with pytest.raises(NotReady) as e:
        wait_ready(proc, daemon_answers(short_dir / "s.sock"), "the stub", output=output, bound=600)
    assert time.monotonic() - began < 60  # at its exit, not at the bound
    message = str(e.value)
    assert message.startswith("the stub exited with status 3 before it was ready")
    assert "stub: config.json: default_model: Expected str, got integer" in message
    assert "stub: loading modules" in message


@pytest.mark.parametrize("where", ["file", "pipe"])
def test_a_process_not_ready_in_time_fails_naming_the_bound_with_its_output(
    spawn, short_dir: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = short_dir / "mark"
    proc = spawn(STUB_BIND_AFTER="600", STUB_MARK=str(mark), stderr=subprocess.PIPE if where == "pipe" else None)
    output = [short_dir / "out"] if where == "file" else []
    wait_ready(proc, mark.exists, "stub", bound=60)  # it has printed its first line
    monkeypatch.setattr(ready, "READY_TIMEOUT", 0.5)  # the suite's bound, as the variable sets it
    with pytest.raises(NotReady) as e:
        wait_ready(proc, daemon_answers(short_dir / "s.sock"), "the stub", output=output)
    message = str(e.value)
    assert message.startswith(f"the stub (pid {proc.pid}) was not ready within 0.5 s (IKIGAI_TEST_READY_TIMEOUT sets this bound)")
    assert "stub: loading modules" in message
    if where == "pipe":  # read to its end: the process had to go
        assert proc.poll() is not None


def test_an_empty_output_is_said() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(4)"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with pytest.raises(NotReady, match=r"status 4 before it was ready\n\(it printed nothing\)$"):
        wait_ready(proc, lambda: False, "it", bound=60)


def test_the_bound_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IKIGAI_TEST_READY_TIMEOUT", raising=False)
    assert ready._timeout_from_env() == 120.0
    monkeypatch.setenv("IKIGAI_TEST_READY_TIMEOUT", "300")
    assert ready._timeout_from_env() == 300.0
    for bad in ("0", "-5", "soon", "nan"):
        monkeypatch.setenv("IKIGAI_TEST_READY_TIMEOUT", bad)
        with pytest.raises(ValueError, match="IKIGAI_TEST_READY_TIMEOUT"):
            ready._timeout_from_env()


async def test_await_ready_leaves_the_event_loop_running(spawn, short_dir: Path) -> None:
    # the daemon fixtures wait inside trio, where the fake provider serves
    proc = spawn(STUB_ANSWER_AFTER="1.0")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.sleep(0.01)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        await await_ready(proc, daemon_answers(short_dir / "s.sock"), "stub", output=[short_dir / "out"], bound=60)
        nursery.cancel_scope.cancel()
    assert ticks > 10


async def test_await_ready_fails_at_once_when_the_process_exits(spawn, short_dir: Path) -> None:
    proc = spawn(STUB_EXIT="1")
    with trio.fail_after(60), pytest.raises(NotReady, match="Expected str, got integer"):
        await await_ready(proc, daemon_answers(short_dir / "s.sock"), "stub", output=[short_dir / "out"], bound=600)


def test_tcp_listens() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert not tcp_listens(port)()
        s.listen(1)
        assert tcp_listens(port)()


# ------------------------------------------------------------------ the daemon fixtures on it


class _StubDaemon(DaemonProcess):
    command = [sys.executable, "-c", STUB]

    def __init__(self, home: Path, **stub: str) -> None:
        super().__init__(home)
        self.stub = stub

    @property
    def env(self) -> dict[str, str]:
        return {**super().env, **self.stub}


async def test_the_daemon_fixture_waits_until_the_daemon_answers(short_dir: Path) -> None:
    d = _StubDaemon(short_dir, STUB_ANSWER_AFTER="1.5")
    began = time.monotonic()
    try:
        await d.start()
        assert time.monotonic() - began >= 1.5  # not when the socket appeared
        assert daemon_answers(d.socket, probe_timeout=1)()
    finally:
        d.stop()


async def test_the_daemon_fixture_shows_why_it_exited(short_dir: Path) -> None:
    d = _StubDaemon(short_dir, STUB_EXIT="1")
    with pytest.raises(AssertionError, match=r"(?s)ikigaid exited with status 1.*Expected str, got integer"):
        await d.start()


async def test_the_daemon_fixture_too_slow_names_the_bound_and_shows_its_output(
    short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = short_dir / "mark"
    d = _StubDaemon(short_dir, STUB_BIND_AFTER="600", STUB_MARK=str(mark))
    d.spawn()  # what start() does first, then it waits as below
    assert d.proc is not None
    try:
        await await_ready(d.proc, mark.exists, "stub", bound=60)  # it has printed its first line
        monkeypatch.setattr(ready, "READY_TIMEOUT", 1.0)
        with pytest.raises(AssertionError) as e:
            await d.wait_ready()
    finally:
        d.stop()
    assert "ikigaid (pid " in str(e.value) and "not ready within 1 s (IKIGAI_TEST_READY_TIMEOUT" in str(e.value)
    assert "stub: loading modules" in str(e.value)


@pytest.fixture
def stub_ikigaid(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/ikictl's start_daemon() starting the stub instead of ikigaid."""
    monkeypatch.setattr(ikictl_fixtures, "IKIGAID", [sys.executable, "-c", STUB])


def test_the_ikictl_fixture_waits_until_the_daemon_answers(
    stub_ikigaid: None, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUB_ANSWER_AFTER", "1.5")
    began = time.monotonic()
    d = ikictl_fixtures.start_daemon(short_dir)
    try:
        assert time.monotonic() - began >= 1.5
        assert daemon_answers(d.socket, probe_timeout=1)()
    finally:
        ikictl_fixtures.stop_daemon(d)


def test_the_ikictl_fixture_too_slow_names_the_bound_and_shows_its_output(
    stub_ikigaid: None, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ready, "READY_TIMEOUT", 3.0)  # its first line comes before any import
    monkeypatch.setenv("STUB_BIND_AFTER", "600")
    with pytest.raises(AssertionError) as e:
        ikictl_fixtures.start_daemon(short_dir)
    assert "not ready within 3 s (IKIGAI_TEST_READY_TIMEOUT" in str(e.value)
    assert "stub: loading modules" in str(e.value)
