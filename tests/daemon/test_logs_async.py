"""The log's lines are formatted, scrubbed and written by one writer thread,
never by the thread that logs (daemon/process/logs.py): in order, scrubbed,
tagged with the caller's contextvars, stamped and given their traceback at
the call, all on disk after close_logging or any exit, and bounded when the
writer stalls. A stalled writer is real here: stderr is a pipe filled up
before the test, so the writer blocks on its first stderr line until the test
starts reading the pipe."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import structlog
import trio
import trio.lowlevel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.process.logs import (
    QUEUE_BOUND,
    REDACTED,
    _forget_secrets,
    close_logging,
    configure_logging,
    flush_logging,
    register_secret,
)

ROOT = Path(__file__).resolve().parents[2]
SECRET = "Qq9!odd*shaped~KEY#2024"  # no known shape: only its registration scrubs it
WRITER = "ikigai-log-writer"


@pytest.fixture
def log_dir(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "logs"
    yield d
    close_logging()
    _forget_secrets()
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
    logging.getLogger().setLevel(logging.WARNING)


def lines(d: Path) -> list[dict]:
    assert flush_logging()
    return [json.loads(line) for line in (d / "ikigaid.log").read_text().splitlines()]


def assert_clean(text: str) -> None:
    assert SECRET not in text
    assert SECRET[5:17] not in text  # not even a piece of it


class StalledPipe:
    """A pipe, filled to the brim: whoever writes to ``stream`` blocks until
    ``release`` starts reading it."""

    def __init__(self) -> None:
        self.r, w = os.pipe()
        flags = fcntl.fcntl(w, fcntl.F_GETFL)
        fcntl.fcntl(w, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        with contextlib.suppress(BlockingIOError):
            while True:
                os.write(w, b"." * 65536)
        fcntl.fcntl(w, fcntl.F_SETFL, flags)
        self.stream = os.fdopen(w, "w", encoding="utf-8")
        self.reader: threading.Thread | None = None

    def configure(self, log_dir: Path, queue_bound: int = QUEUE_BOUND) -> None:
        """configure_logging(foreground=True) with this pipe as its stderr (set
        here: pytest puts its own sys.stderr back before each test phase)."""
        with contextlib.redirect_stderr(self.stream):
            configure_logging(log_dir, foreground=True, queue_bound=queue_bound)

    def release(self) -> None:
        if self.reader is None:
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.reader.start()

    def _read(self) -> None:
        while os.read(self.r, 65536):
            pass

    def close(self) -> None:
        self.release()
        close_logging()  # its last lines go through the pipe
        self.stream.close()
        assert self.reader is not None
        self.reader.join(30)
        os.close(self.r)


@pytest.fixture
def stalled(log_dir: Path) -> Iterator[StalledPipe]:
    pipe = StalledPipe()
    try:
        yield pipe
    finally:
        pipe.close()


# ------------------------------------------------------------------ order, threads


def test_lines_from_many_threads_arrive_each_in_its_order(log_dir: Path) -> None:
    configure_logging(log_dir, foreground=False)

    def worker(k: int) -> None:
        log = structlog.get_logger("ikigai.worker")
        for i in range(500):
            if i % 2:
                log.info("line", worker=k, i=i)
            else:
                logging.getLogger("some.lib").warning("line %d %d", k, i)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = lines(log_dir)
    assert len(got) == 8 * 500
    for k in range(8):
        mine = [
            r["i"] if "i" in r else int(r["event"].split()[2])
            for r in got
            if r.get("worker") == k or r["event"].startswith(f"line {k} ")
        ]
        assert mine == list(range(500))


async def test_lines_of_trio_tasks_arrive_in_the_order_they_were_logged(log_dir: Path) -> None:
    configure_logging(log_dir, foreground=False)
    log = structlog.get_logger("ikigai.tasks")
    seq = iter(range(10**9))

    async def task(name: str) -> None:
        for _ in range(100):
            n = next(seq)
            if n % 3:
                log.info("step", task=name, n=n)
            else:
                logging.getLogger("httpx").warning("step %d", n)
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        for k in range(20):
            nursery.start_soon(task, f"t{k}")
    got = lines(log_dir)
    assert [r["n"] if "n" in r else int(r["event"].split()[1]) for r in got] == list(range(2000))


def test_the_calling_thread_neither_formats_nor_writes(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrote: list[str] = []
    formatted: list[str] = []

    class Recording(io.StringIO):
        def write(self, s: str) -> int:
            wrote.append(threading.current_thread().name)
            return super().write(s)

    real = structlog.stdlib.ProcessorFormatter.format

    def recording(self, record):
        formatted.append(threading.current_thread().name)
        return real(self, record)

    monkeypatch.setattr(sys, "stderr", Recording())
    monkeypatch.setattr(structlog.stdlib.ProcessorFormatter, "format", recording)
    configure_logging(log_dir, foreground=True)
    structlog.get_logger("ikigai.test").info("from the loop's thread", key=SECRET)
    logging.getLogger("httpx").warning("a foreign line")
    t = threading.Thread(target=lambda: structlog.get_logger("x").info("from another"))
    t.start()
    t.join()
    assert len(lines(log_dir)) == 3
    assert len(formatted) == 6 and len(wrote) >= 3  # file and stderr, each line
    assert set(formatted) == set(wrote) == {WRITER}


# ------------------------------------------------------------------ what the call knows


async def test_stdlib_lines_carry_the_callers_contextvars(log_dir: Path) -> None:
    configure_logging(log_dir, foreground=False)

    async def agent(name: str) -> None:
        with structlog.contextvars.bound_contextvars(agent=name, turn=f"turn-{name}"):
            for i in range(30):
                logging.getLogger("httpx").warning("retrying %s %d", name, i)
                if i % 10 == 0:
                    structlog.get_logger("ikigai.agents").info("turn step", i=i)
                await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        for name in ("019ab3", "019ab4", "019ab5"):
            nursery.start_soon(agent, name)
    logging.getLogger("httpx").warning("outside any turn")
    got = lines(log_dir)
    assert len(got) == 3 * 33 + 1
    for r in got[:-1]:
        name = r["event"].split()[1] if r["logger"] == "httpx" else r["agent"]
        assert (r.get("agent"), r.get("turn")) == (name, f"turn-{name}"), r
    assert "agent" not in got[-1] and "turn" not in got[-1]


def _ts(rec: dict) -> float:
    return datetime.fromisoformat(rec["timestamp"]).timestamp()


def test_timestamps_are_the_calls_not_the_writes(log_dir: Path, stalled: StalledPipe) -> None:
    stalled.configure(log_dir)
    times: list[float] = []

    def calls() -> None:
        structlog.get_logger("x").info("first")  # the writer blocks on its stderr line
        times.append(time.time())
        structlog.get_logger("ikigai.test").info("a structlog line")
        logging.getLogger("some.lib").warning("a stdlib line")
        times.append(time.time())

    caller = threading.Thread(target=calls, daemon=True)
    caller.start()
    caller.join(60)
    assert len(times) == 2, "logging waited for a stalled writer"
    before, after = times
    stalled.release()  # only now can the two lines above be written
    recs = {r["event"]: r for r in lines(log_dir)}
    for event in ("a structlog line", "a stdlib line"):
        assert before - 1e-6 <= _ts(recs[event]) <= after + 1e-6, recs[event]
        assert recs[event]["timestamp"].endswith("Z")  # as TimeStamper(fmt="iso", utc=True)


def test_exception_tracebacks_are_taken_at_the_call_and_scrubbed(log_dir: Path) -> None:
    configure_logging(log_dir, foreground=False)
    register_secret(SECRET)
    log = structlog.get_logger("ikigai.test")

    def call_provider() -> None:
        raise RuntimeError(f"provider said: invalid key {SECRET}")

    try:
        call_provider()
    except RuntimeError:
        log.exception("turn failed")
        log.error("with exc_info", exc_info=True)
        logging.getLogger("some.lib").exception("stdlib says %s", SECRET)
    # the exception is no longer being handled here, and never was in the writer
    text = (log_dir / "ikigaid.log").read_text() if flush_logging() else ""
    assert_clean(text)
    recs = lines(log_dir)
    assert [r["event"] for r in recs] == ["turn failed", "with exc_info", f"stdlib says {REDACTED}"]
    for r in recs:
        assert r["level"] == "error"
        assert r["exception"].startswith("Traceback (most recent call last):")
        assert "in call_provider" in r["exception"]
        assert r["exception"].endswith(f"RuntimeError: provider said: invalid key {REDACTED}")


def test_stacks_are_the_callers(log_dir: Path) -> None:
    configure_logging(log_dir, foreground=False)
    structlog.get_logger("ikigai.test").info("where am I", stack_info=True)
    logging.getLogger("some.lib").warning("and here", stack_info=True)
    for r in lines(log_dir):
        assert r["stack"].startswith("Stack (most recent call last):")
        assert "in test_stacks_are_the_callers" in r["stack"]
        assert "_run" not in r["stack"].splitlines()[-1]  # not the writer's loop


# ------------------------------------------------------------------ nothing lost, bounded


def test_close_logging_writes_every_queued_line(log_dir: Path) -> None:
    configure_logging(log_dir, foreground=False, queue_bound=20_000)
    log = structlog.get_logger("ikigai.test")
    for i in range(10_000):
        log.info("line", agent="019ab3", i=i)
    close_logging()  # no flush before: closing writes them
    got = [json.loads(x) for x in (log_dir / "ikigaid.log").read_text().splitlines()]
    assert [r["i"] for r in got] == list(range(10_000))


def test_a_stalled_writer_drops_lines_past_the_bound_and_says_how_many(
    log_dir: Path, stalled: StalledPipe
) -> None:
    stalled.configure(log_dir, queue_bound=50)
    log = structlog.get_logger("ikigai.test")
    done = threading.Event()

    def burst() -> None:
        for i in range(2000):
            log.info("line", i=i)
        done.set()

    threading.Thread(target=burst, daemon=True).start()
    # the writer is stuck on the pipe all along: logging must not wait for it
    assert done.wait(60), "logging waited for a stalled writer"
    stalled.release()
    got = lines(log_dir)
    kept = [r["i"] for r in got if r["event"] == "line"]
    (note,) = [r for r in got if r["event"] != "line"]
    assert note["event"] == f"{note['dropped']} log lines dropped: the log writer fell behind"
    assert note["level"] == "warning"
    assert kept == sorted(kept) and kept[0] == 0
    # said once the writer was back under half the bound, lines still to write
    assert got[-1]["event"] == "line"
    # the line the writer was stuck on, and at most the bound waiting behind it
    assert len(kept) <= 51
    assert len(kept) + note["dropped"] == 2000
    log.info("after")  # and it goes on
    assert lines(log_dir)[-1]["event"] == "after"


EXIT_SCRIPT = """
import signal, sys
sys.path.insert(0, {root!r})
from pathlib import Path
import structlog, trio
from daemon.process.logs import configure_logging

configure_logging(Path(sys.argv[1]), foreground=False, queue_bound=100_000)
log = structlog.get_logger("ikigai.exit")

def burst():
    for i in range(10_000):
        log.info("line", i=i)

how = sys.argv[2]
if how == "raise":
    burst()
    raise RuntimeError("uncaught")
if how == "return":
    burst()
if how == "sigterm":  # as ikigaid takes it: trio's signal receiver, then a normal exit
    async def main():
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            print("ready", flush=True)
            async for _ in signals:
                burst()
                return
    trio.run(main)
"""


@pytest.mark.parametrize("how", ["return", "raise", "sigterm"])
def test_every_line_is_written_at_exit(tmp_path: Path, how: str) -> None:
    # nobody calls close_logging: the exit itself must write what is queued
    d = tmp_path / "logs"
    proc = subprocess.Popen(
        [sys.executable, "-c", EXIT_SCRIPT.format(root=str(ROOT)), str(d), how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if how == "sigterm":
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n", proc.stderr.read() if proc.stderr else ""
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == (1 if how == "raise" else 0), err
    got = [json.loads(x) for x in (d / "ikigaid.log").read_text().splitlines()]
    assert [r["i"] for r in got] == list(range(10_000))


# ------------------------------------------------------------------ hostile input

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)  # no lone surrogates
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(event=_TEXT, value=_VALUES, where=st.integers(0, 60))
def test_any_value_comes_out_as_one_json_line_without_the_secret(
    log_dir: Path, event: str, value: object, where: int
) -> None:
    configure_logging(log_dir, foreground=False)
    register_secret(SECRET)
    event = event[:where] + SECRET + event[where:]
    structlog.get_logger("ikigai.test").info(event, value=value, also=[SECRET, {SECRET: value}])
    logging.getLogger("some.lib").warning("%s %r", event, value)
    close_logging()
    # lines end at "\n" only: a JSON string may hold U+0085 or U+2028 as they are
    got = (log_dir / "ikigaid.log").read_bytes().decode().split("\n")[-3:-1]
    assert_clean("\n".join(got))
    first, second = (json.loads(x) for x in got)
    assert first["logger"] == "ikigai.test" and second["logger"] == "some.lib"
    assert first["also"][0] == REDACTED


def test_a_line_that_cannot_be_written_is_reported_without_its_content(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a lone surrogate cannot be written as UTF-8: the stdlib's handleError
    # would print the record's message, secret and all
    configure_logging(log_dir, foreground=False)
    register_secret(SECRET)
    structlog.get_logger("ikigai.test").info("bad \udc80 text " + SECRET, key=SECRET)
    structlog.get_logger("ikigai.test").info("next line")
    close_logging()
    err = capsys.readouterr().err
    assert SECRET not in err and "\udc80" not in err
    assert "ikigaid: a INFO log line could not be written (UnicodeEncodeError)" in err
    # the lines after it are written
    assert json.loads((log_dir / "ikigaid.log").read_text().splitlines()[-1])["event"] == "next line"
