"""Logging for ikigaid: structlog over the standard library's logging.

- The log folder gets JSON lines in ``ikigaid.log`` (mode 0600, rotated by
  size: 10 MB x 5 by default).
- In the foreground, stderr gets readable lines as well.
- Every line passes ``redact``: API keys, Authorization / x-api-key /
  x-goog-api-key headers, key-shaped strings and every secret registered with
  ``register_secret`` become ``[REDACTED]``, in the event text, in keys, in
  nested values and in tracebacks. Records of other libraries' standard
  loggers (httpx...) go through the same chain.
- ``structlog.contextvars`` are merged into every line, so
  ``structlog.contextvars.bound_contextvars(agent=..., turn=...)`` around a
  turn tags everything logged inside it, including httpx's lines.

Off the event loop: a log call only builds its record and puts it on a
``queue.SimpleQueue`` (``_QueueHandler``, the root logger's one handler);
one writer thread takes them in order and formats, scrubs and writes them
with the file and stderr handlers. What only the calling thread knows is
taken at the call: structlog's chain merges the contextvars there, a stdlib
record (httpx...) carries a copy of the caller's context, in which the writer
runs its chain; ``exc_info=True`` becomes the exception being handled and a
stack is rendered there; the timestamp is the record's ``created``. Values
are rendered by the writer: a mutable value logged and then changed at once
may show the change.

Bound: at most ``QUEUE_BOUND`` (10,000) records wait for the writer. When it
falls that far behind (a full or stalled disk, a blocked stderr), further
records are dropped, never waited for, and counted; once fewer than half the
bound wait, it writes one warning, "N log lines dropped". ``close_logging``
(also run at exit: atexit) writes everything queued before it returns;
``flush_logging`` waits for what is queued so far.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import datetime
import logging
import logging.handlers
import os
import queue
import sys
import threading
from pathlib import Path
from typing import Any

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from protocol.paths import LOG_FILE, ensure_private_dir
from providers.redact import redact

# The one secret registry lives with the providers (the lowest layer), so the
# provider shell scrubs its errors with the same values; these names stay
# here for the daemon's callers.
from providers.secrets import MIN_SECRET as MIN_SECRET
from providers.secrets import REDACTED, register_secret, register_secrets
from providers.secrets import _forget_secrets as _forget_secrets

__all__ = [
    "LEVELS",
    "REDACTED",
    "close_logging",
    "configure_logging",
    "flush_logging",
    "redact",
    "register_secret",
    "register_secrets",
]

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
MAX_BYTES = 10 * 1024 * 1024
BACKUPS = 5
QUEUE_BOUND = 10_000
# how long close_logging waits for the writer: a disk that hangs longer must
# not hang the daemon's exit with it
DRAIN_TIMEOUT = 30.0


def _redact_processor(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    return redact(event_dict)


_FIRST = ("timestamp", "level", "logger", "event")


def _order(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """timestamp, level, logger and event first in a JSON line, for people reading it."""
    head = {k: event_dict[k] for k in _FIRST if k in event_dict}
    return {**head, **{k: v for k, v in event_dict.items() if k not in head}}


_UTC = datetime.UTC


def _stamp(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """The time of the call (the record's), not of the write; as
    TimeStamper(fmt="iso", utc=True) wrote it."""
    created = event_dict["_record"].created
    stamp = datetime.datetime.fromtimestamp(created, _UTC).isoformat()
    event_dict["timestamp"] = stamp.replace("+00:00", "Z")
    return event_dict


def _exc_info_now(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """``log.exception`` / ``exc_info=True``: the exception being handled, taken
    here; the writer thread's sys.exc_info() would be empty."""
    exc = event_dict.get("exc_info")
    if exc and not isinstance(exc, BaseException | tuple):
        event_dict["exc_info"] = sys.exc_info()
    return event_dict


def _record_stack(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """A stdlib record's ``stack_info`` was rendered by logging at the call: kept
    (StackInfoRenderer would render the writer's stack)."""
    stack = event_dict.pop("stack_info", None)
    if stack:
        event_dict["stack"] = stack
    return event_dict


# ------------------------------------------------------------------ handlers


def _handle_error(handler: logging.Handler, record: logging.LogRecord) -> None:
    """Say a line was lost, naming only why: the stdlib's handleError prints the
    record's message and arguments, which are not scrubbed yet."""
    kind = type(sys.exc_info()[1]).__name__
    # stderr itself may be gone: then nothing is left to tell
    with contextlib.suppress(Exception):
        sys.stderr.write(f"ikigaid: a {record.levelname} log line could not be written ({kind})\n")


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    handleError = _handle_error  # the stdlib's name


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Opens the log file with mode 0600: prompts and replies end up in it."""

    handleError = _handle_error  # the stdlib's name

    _last: tuple[logging.LogRecord | None, str] = (None, "")

    def format(self, record: logging.LogRecord) -> str:
        # shouldRollover formats each record to measure it, then emit formats it
        # again: once is enough (redaction is most of a line's cost). Both run
        # under the handler's lock.
        last, text = self._last
        if last is not record:
            text = super().format(record)
            self._last = (record, text)
        return text

    def _open(self) -> Any:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, self.mode, encoding=self.encoding, errors=self.errors)


_OURS = "_ikigai_handler"
_STOP = object()  # the writer's last item


class _Writer:
    """The one thread that formats, scrubs and writes the records, in the order
    they were queued, with ``handlers`` (which nothing else calls)."""

    def __init__(self, handlers: list[logging.Handler], bound: int) -> None:
        self.handlers = handlers
        self.bound = bound
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.dropped = 0
        self._drop_lock = threading.Lock()  # only dropping takes it: the rare path
        self.thread = threading.Thread(target=self._run, name="ikigai-log-writer", daemon=True)
        self.thread.start()

    def drop(self) -> None:
        with self._drop_lock:
            self.dropped += 1

    def write(self, record: logging.LogRecord) -> None:
        for h in self.handlers:
            if record.levelno >= h.level:
                h.handle(record)

    def _take(self, item: Any) -> None:
        if type(item) is tuple:
            record, ctx = item
            if ctx is None:
                self.write(record)
            else:  # a stdlib record: its chain merges the caller's contextvars
                ctx.run(self.write, record)
            if self.dropped and self.queue.qsize() <= self.bound // 2:
                self._report_drops()
        elif item is not _STOP:  # a flush's event: everything before it is written
            self._report_drops()
            item.set()

    def _run(self) -> None:
        get = self.queue.get
        while True:
            item = get()
            if item is _STOP:
                self._report_drops()
                return
            try:
                self._take(item)
            except Exception as e:  # the handlers report their own errors: this is ours
                # one bad record must not silence the writer for the daemon's life
                with contextlib.suppress(Exception):
                    sys.stderr.write(f"ikigaid: a log line was lost: {type(e).__name__}\n")

    def _report_drops(self) -> None:
        with self._drop_lock:
            n, self.dropped = self.dropped, 0
        if n:
            record = logging.LogRecord(
                __name__,
                logging.WARNING,
                __file__,
                0,
                "%d log lines dropped: the log writer fell behind",
                (n,),
                None,
            )
            record.dropped = n
            self.write(record)

    def flush(self, timeout: float | None) -> bool:
        if not self.thread.is_alive():
            return True
        done = threading.Event()
        self.queue.put(done)
        return done.wait(timeout)

    def stop(self, timeout: float | None) -> bool:
        """Write everything queued, then end the thread; False if it did not end in time."""
        if threading.current_thread() is not self.thread:
            self.queue.put(_STOP)
            self.thread.join(timeout)
            if self.thread.is_alive():
                return False
        # records another thread queued while we stopped
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                self._take(item)
        self._report_drops()
        return True


class _QueueHandler(logging.Handler):
    """Hands each record to the writer: O(1) on the caller's thread, nothing
    formatted, never a wait (no handler lock: the queue is thread-safe).
    Not logging.handlers.QueueHandler: its prepare() formats the record in the
    caller's thread, the very cost this saves, and turns structlog's event dict
    in ``record.msg`` into a string."""

    def __init__(self, writer: _Writer, level: int) -> None:
        super().__init__(level)
        self.writer = writer
        self._put = writer.queue.put
        self._qsize = writer.queue.qsize
        self._bound = writer.bound
        self._closed = False

    def handle(self, record: logging.LogRecord) -> bool:
        if self.filters and not self.filter(record):
            return False
        if self._qsize() >= self._bound:
            self.writer.drop()
        elif "_name" in record.__dict__:  # structlog's: its chain merged the contextvars
            self._put((record, None))
        else:
            self._put((record, contextvars.copy_context()))
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)

    def flush(self) -> None:
        self.writer.flush(DRAIN_TIMEOUT)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.writer.stop(DRAIN_TIMEOUT):
                for h in self.writer.handlers:
                    h.close()
            # else: still writing (a hung disk); closing the file under it would lose more
        super().close()


def _pre_chain() -> list[Processor]:
    """Run on records of plain stdlib loggers before the shared tail, in the
    writer thread, within a copy of the caller's context."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        _record_stack,
    ]


def _formatter(*renderer: Processor) -> logging.Formatter:
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_pre_chain(),
        processors=[
            _stamp,
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.stdlib.PositionalArgumentsFormatter(),  # log.info("%s", x): here
            structlog.processors.format_exc_info,  # traceback text, redacted next
            _redact_processor,
            *renderer,
        ],
    )


def _json() -> tuple[Processor, Processor]:
    return _order, structlog.processors.JSONRenderer(ensure_ascii=False)


def _ours() -> list[_QueueHandler]:
    return [h for h in logging.getLogger().handlers if isinstance(h, _QueueHandler)]


def flush_logging(timeout: float | None = DRAIN_TIMEOUT) -> bool:
    """Wait until every line logged so far is written; False if ``timeout`` passed first."""
    return all(h.writer.flush(timeout) for h in _ours())


def close_logging() -> None:
    """Write every queued line, then remove and close the handlers
    ``configure_logging`` installed."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, _OURS, False):
            root.removeHandler(h)
            h.close()
    logging.captureWarnings(False)


_at_exit = False


def configure_logging(
    log_dir: Path | None,
    *,
    foreground: bool,
    level: str = "info",
    max_bytes: int = MAX_BYTES,
    backups: int = BACKUPS,
    queue_bound: int = QUEUE_BOUND,
) -> None:
    """Send structlog and stdlib logging to ``log_dir/ikigaid.log`` (JSON lines)
    and, in the foreground, to stderr (readable lines), through the writer thread.

    ``log_dir`` None: no file; stderr then gets the lines even in the
    background (JSON lines there, for the journal). The folder is created
    with mode 0700. Calling it again replaces the previous setup.
    """
    global _at_exit
    levelno = LEVELS.get(level.lower())
    if levelno is None:
        raise ValueError(f"unknown log level {level!r} (levels: {', '.join(LEVELS)})")
    close_logging()
    handlers: list[logging.Handler] = []
    if log_dir is not None:
        ensure_private_dir(Path(log_dir))
        fh = _PrivateRotatingFileHandler(
            Path(log_dir) / LOG_FILE, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
        fh.setFormatter(_formatter(*_json()))
        handlers.append(fh)
    if foreground:
        sh = _StderrHandler(sys.stderr)
        colors = bool(getattr(sys.stderr, "isatty", lambda: False)())
        sh.setFormatter(
            _formatter(
                structlog.dev.ConsoleRenderer(
                    colors=colors, exception_formatter=structlog.dev.plain_traceback
                )
            )
        )
        handlers.append(sh)
    elif log_dir is None:
        sh = _StderrHandler(sys.stderr)
        sh.setFormatter(_formatter(*_json()))
        handlers.append(sh)
    for h in handlers:
        h.setLevel(levelno)

    root = logging.getLogger()
    qh = _QueueHandler(_Writer(handlers, queue_bound), levelno)
    setattr(qh, _OURS, True)
    root.addHandler(qh)
    root.setLevel(levelno)
    if not _at_exit:
        # an exit by an uncaught exception, or after SIGTERM, writes what is queued:
        # the writer is a daemon thread, which exit does not wait for
        atexit.register(close_logging)
        _at_exit = True
    # httpx logs every request at INFO: only worth it when debugging.
    logging.getLogger("httpx").setLevel(
        logging.DEBUG if levelno <= logging.DEBUG else logging.WARNING
    )
    logging.captureWarnings(True)

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            _exc_info_now,
            structlog.processors.StackInfoRenderer(),  # the caller's stack, not the writer's
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
