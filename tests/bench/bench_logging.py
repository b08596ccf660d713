"""Log calls on the event loop's thread: what one log line costs the thread
that logs it, the log going to a file, now that a writer thread formats,
scrubs and writes it, beside the setup before (all of it in the calling
thread), side by side in the same run.

    .venv/bin/python tests/bench/bench_logging.py [--lines 2000] [--reps 21] [--json PATH]

  ours        daemon.process.logs.configure_logging(dir, foreground=False): the
              call runs structlog's chain (contextvars, level, name) and puts
              the record on the writer thread's queue
  comparison  BEFORE_configure_logging (below): a copy of the setup of commit
              2e216cb, every line formatted (structlog's ProcessorFormatter
              chain, the redaction, JSON) and written (a write() per line) in
              the calling thread
Lines: ``log.info("turn ended", agent=..., turn=..., n=..., ...)`` as a turn
logs them, inside ``bound_contextvars(agent=..., turn=...)``; one secret
registered (none is in the lines, the common case).
Rows:
  calling-thread CPU per log line   time.thread_time() of the logging thread
                                    around the log calls: what the loop pays
  process CPU per log line          time.process_time() from the first call
                                    until every line is on disk (ours: the
                                    writer thread's work counted too)
Figures: per line, medians of equal, interleaved repetitions
(tests/bench/_measure.py), each repetition in a fresh log folder.
Not a test: nothing is asserted (it checks that both sides write the same
lines, timestamps aside).
"""

from __future__ import annotations

import argparse
import json
import logging
import logging.handlers
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import structlog  # noqa: E402

from daemon.process import logs  # noqa: E402
from providers.redact import redact  # noqa: E402
from tests.bench._measure import interleaved, median  # noqa: E402

# ------------------------------------------------------------------ BEFORE: the setup of commit 2e216cb, kept to compare
#
# daemon/process/logs.py's handlers, formatter and structlog configuration as
# they were before the writer thread; its comments left out, its names
# prefixed BEFORE_ / _Before.


def _BEFORE_redact_processor(_logger: Any, _method: str, event_dict: Any) -> Any:
    return redact(event_dict)


_BEFORE_FIRST = ("timestamp", "level", "logger", "event")


def _BEFORE_order(_logger: Any, _method: str, event_dict: Any) -> Any:
    head = {k: event_dict[k] for k in _BEFORE_FIRST if k in event_dict}
    return {**head, **{k: v for k, v in event_dict.items() if k not in head}}


class _BeforeRotatingFileHandler(logging.handlers.RotatingFileHandler):
    _last: tuple[logging.LogRecord | None, str] = (None, "")

    def format(self, record: logging.LogRecord) -> str:
        last, text = self._last
        if last is not record:
            text = super().format(record)
            self._last = (record, text)
        return text

    def _open(self) -> Any:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, self.mode, encoding=self.encoding, errors=self.errors)


_BEFORE_OURS = "_ikigai_before_handler"


def _BEFORE_formatter() -> logging.Formatter:
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.stdlib.ExtraAdder(),
            structlog.processors.TimeStamper(fmt="iso", utc=True),
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            _BEFORE_redact_processor,
            _BEFORE_order,
            structlog.processors.JSONRenderer(ensure_ascii=False),
        ],
    )


def BEFORE_close_logging() -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, _BEFORE_OURS, False):
            root.removeHandler(h)
            h.close()


def BEFORE_configure_logging(log_dir: Path) -> None:
    """The file-only setup (foreground=False, level info) as it was."""
    BEFORE_close_logging()
    log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fh = _BeforeRotatingFileHandler(
        log_dir / "ikigaid.log", maxBytes=logs.MAX_BYTES, backupCount=logs.BACKUPS, encoding="utf-8"
    )
    fh.setFormatter(_BEFORE_formatter())
    setattr(fh, _BEFORE_OURS, True)
    fh.setLevel(logging.INFO)
    root = logging.getLogger()
    root.addHandler(fh)
    root.setLevel(logging.INFO)
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


# ------------------------------------------------------------------ the two sides

Setup = tuple[Callable[[Path], None], Callable[[], None], Callable[[], None]]
SIDES: dict[str, Setup] = {
    # configure, wait until every line is on disk, close
    "ours": (
        lambda d: logs.configure_logging(d, foreground=False),
        lambda: None if logs.flush_logging() else sys.exit("the log writer did not finish"),
        logs.close_logging,
    ),
    "before": (BEFORE_configure_logging, lambda: None, BEFORE_close_logging),
}
AGENT, TURN = "019ab3c4-5d6e-7f80-9a1b-2c3d4e5f6071", "019ab3c4-9f00-7abc-8def-001122334455"


def log_lines(n: int) -> None:
    log = structlog.get_logger("agents.turn")
    with structlog.contextvars.bound_contextvars(agent=AGENT, turn=TURN):
        for i in range(n):
            log.info(
                "turn ended",
                agent=AGENT,
                turn=TURN,
                n=i,
                status="completed",
                model_calls=1,
                input_tokens=1200 + i,
                output_tokens=340,
                duration_s=1.25,
            )


def run(side: str, n: int) -> tuple[float, float]:
    """(calling-thread CPU, process CPU) in µs per line, for n lines into a fresh folder."""
    configure, drain, close = SIDES[side]
    with tempfile.TemporaryDirectory(prefix="ikbench-log-") as tmp:
        configure(Path(tmp) / "logs")
        p0, t0 = time.process_time(), time.thread_time()
        log_lines(n)
        t1 = time.thread_time()
        drain()
        p1 = time.process_time()
        close()
    return (t1 - t0) / n * 1e6, (p1 - p0) / n * 1e6


def same_lines(n: int = 20) -> None:
    """Both sides write the same lines but for the timestamps: the same work is timed."""
    got = []
    for configure, drain, close in SIDES.values():
        with tempfile.TemporaryDirectory(prefix="ikbench-log-") as tmp:
            configure(Path(tmp) / "logs")
            log_lines(n)
            drain()
            close()
            rows = [
                json.loads(x) for x in (Path(tmp) / "logs" / "ikigaid.log").read_text().splitlines()
            ]
        got.append([{k: v for k, v in r.items() if k != "timestamp"} for r in rows])
    if got[0] != got[1] or len(got[0]) != n:
        raise RuntimeError("ours and before write the bench's lines differently")


UNIT = "µs CPU per log line (comparison: formatted and written in the calling thread)"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lines", type=int, default=2000, help="log lines per repetition")
    ap.add_argument("--reps", type=int, default=21, help="repetitions per contender, interleaved")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    logs.register_secret("sk-ant-api03-Bench0Secret1Value2Xyz3")
    same_lines()
    got = interleaved(args.reps, {side: (lambda s=side: run(s, args.lines)) for side in SIDES})
    rows = [
        _row(
            "calling-thread CPU per log line",
            [x[0] for x in got["ours"]],
            [x[0] for x in got["before"]],
            args,
        ),
        _row(
            "process CPU per log line",
            [x[1] for x in got["ours"]],
            [x[1] for x in got["before"]],
            args,
        ),
    ]
    print(f"{'benchmark':<34} {'ours':>8} {'before':>8} {'ratio':>7}")
    for r in rows:
        print(f"{r['name']:<34} {r['ours']:>8.2f} {r['comparison']:>8.2f} {r['ratio']:>6.2f}x")
    print(f"{UNIT}; medians of {args.reps} interleaved repetitions of {args.lines} lines")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


def _row(
    name: str, ours: list[float], before: list[float], args: argparse.Namespace
) -> dict[str, Any]:
    o, b = median(ours), median(before)
    return {
        "name": name,
        "unit": UNIT,
        "ours": o,
        "comparison": b,
        "ratio": o / b,
        "lines": args.lines,
        "repetitions": args.reps,
    }


if __name__ == "__main__":
    sys.exit(main())
