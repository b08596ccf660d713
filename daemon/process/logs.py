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
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
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

def _redact_processor(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    return redact(event_dict)


_FIRST = ("timestamp", "level", "logger", "event")


def _order(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """timestamp, level, logger and event first in a JSON line, for people reading it."""
    head = {k: event_dict[k] for k in _FIRST if k in event_dict}
    return {**head, **{k: v for k, v in event_dict.items() if k not in head}}


# ------------------------------------------------------------------ handlers


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Opens the log file with mode 0600: prompts and replies end up in it."""

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


def _pre_chain() -> list[Processor]:
    """Run on records of plain stdlib loggers before the shared tail."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def _formatter(*renderer: Processor) -> logging.Formatter:
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_pre_chain(),
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,  # traceback text, redacted next
            _redact_processor,
            *renderer,
        ],
    )


def _json() -> tuple[Processor, Processor]:
    return _order, structlog.processors.JSONRenderer(ensure_ascii=False)


def close_logging() -> None:
    """Remove and close the handlers ``configure_logging`` installed."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, _OURS, False):
            root.removeHandler(h)
            h.close()
    logging.captureWarnings(False)


def configure_logging(
    log_dir: Path | None,
    *,
    foreground: bool,
    level: str = "info",
    max_bytes: int = MAX_BYTES,
    backups: int = BACKUPS,
) -> None:
    """Send structlog and stdlib logging to ``log_dir/ikigaid.log`` (JSON lines)
    and, in the foreground, to stderr (readable lines).

    ``log_dir`` None: no file; stderr then gets the lines even in the
    background (JSON lines there, for the journal). The folder is created
    with mode 0700. Calling it again replaces the previous setup.
    """
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
        sh = logging.StreamHandler(sys.stderr)
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
        sh = logging.StreamHandler(sys.stderr)
        sh.setFormatter(_formatter(*_json()))
        handlers.append(sh)

    root = logging.getLogger()
    for h in handlers:
        setattr(h, _OURS, True)
        h.setLevel(levelno)
        root.addHandler(h)
    root.setLevel(levelno)
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
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
