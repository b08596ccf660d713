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
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

# The one secret registry lives with the providers (the lowest layer), so the
# provider shell scrubs its errors with the same values; these names stay
# here for the daemon's callers.
from providers.secrets import MIN_SECRET as MIN_SECRET
from providers.secrets import REDACTED, generation, register_secret, register_secrets
from providers.secrets import _forget_secrets as _forget_secrets
from providers.secrets import scrub as scrub_secrets

from .paths import LOG_FILE, ensure_private_dir

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
_MAX_DEPTH = 32

# ------------------------------------------------------------------ redaction
#
# Every pattern here is linear in the text: client text of any size goes
# through them (an error message quoting a 1 MiB request). A run of name
# characters is matched only from its first character (a lookbehind), never
# from each of its positions: re-scanning a run from every position was
# quadratic (16 KB took 10 s).

# A mapping key (or header name) whose string value is a secret whatever it looks like.
_SENSITIVE_NAME = re.compile(
    r"(?i)(?:^|[_.\-])(?:api[_\-]?key|apikey|key|authorization|auth|token|secret|"
    r"password|passwd|pwd|cookie|set[_\-]cookie|credentials?)$"
)

# Strings shaped like keys, wherever they appear. A failing alternative stops
# within its minimum length (the greedy runs always succeed once that long).
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"sk-ant-[A-Za-z0-9_\-]{8,}"  # Anthropic
    r"|sk-[A-Za-z0-9_\-]{16,}"  # OpenAI (sk-proj-...), DeepSeek, OpenRouter (sk-or-...)
    r"|AIza[0-9A-Za-z_\-]{20,}"  # Google
    r"|xai-[A-Za-z0-9_\-]{16,}"  # xAI
    r"|gsk_[A-Za-z0-9]{16,}"  # Groq
    r"|hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r")"
)
# A JWT: eyJ<header>.<payload>.<signature>. The header segment needs a "."
# after it, so it is tried once per run of segment characters (from the run's
# start: ``pre`` skips, possessively, to the first place a token may begin).
_JWT_START = r"(?<![A-Za-z0-9])eyJ"
_JWT = re.compile(
    r"(?<![A-Za-z0-9_\-])"
    rf"(?P<pre>(?:(?!{_JWT_START})[A-Za-z0-9_\-])*+)"
    r"eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+"
)
# Authorization: Bearer <token> / Basic <token>
_AUTH_SCHEME = re.compile(r"(?i)\b(bearer|basic)(\s++)[A-Za-z0-9._~+/=\-]{8,}")
# api_key=..., "token": "...", x-api-key: ..., ?key=...: a long token after such a name
_NAMED_TOKEN = re.compile(
    r"(?i)(?<![a-z0-9_.\-])(?P<name>[a-z0-9_.\-]*(?:key|token|secret|authorization))"
    r"(?P<sep>[\"']?\s*+[:=]\s*+[\"']?)"
    r"(?P<value>[a-z0-9+/_.~=\-]{12,})"
)
# password=... of any length and shape (up to a separator)
_NAMED_PASSWORD = re.compile(
    r"(?i)(?<![a-z0-9_.\-])(?P<name>[a-z0-9_.\-]*(?:password|passwd|pwd))"
    r"(?P<sep>[\"']?\s*+[:=]\s*+[\"']?)"
    r"(?P<value>[^\s\"'&,;]+)"
)
# scheme://user:password@host (the scheme run is taken whole, from its start)
_URL_PASSWORD = re.compile(
    r"(?i)(?P<pre>(?<![a-z0-9+.\-])[a-z0-9+.\-]++://[^\s:/@]++:)(?P<value>[^\s@/]++)(?=@)"
)


# a log line's keys and most of its values (ids, states, names) recur: each
# short text is scrubbed once per generation of registered secrets
_CACHED_LEN = 200
_CACHE_SIZE = 4096
_cache: tuple[object, dict[str, str]] = (None, {})


def _scrub(text: str) -> str:
    if len(text) > _CACHED_LEN:
        return _scrub_now(text)
    gen, cache = _cache
    if gen is not generation():
        _reset_cache()
        gen, cache = _cache
    found = cache.get(text)
    if found is None:
        found = _scrub_now(text)
        if len(cache) >= _CACHE_SIZE:
            cache.clear()
        if gen is generation():  # secrets registered meanwhile: not worth keeping
            cache[text] = found
    return found


def _reset_cache() -> None:
    global _cache
    _cache = (generation(), {})


def _scrub_now(text: str) -> str:
    text = scrub_secrets(text)
    text = _JWT.sub(
        lambda m: f"{m.group('pre')}{REDACTED}", text
    )  # whole, before a key shape inside it
    text = _KEY_SHAPES.sub(REDACTED, text)
    text = _AUTH_SCHEME.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('pre')}{REDACTED}", text)
    text = _NAMED_PASSWORD.sub(_keep_name, text)
    return _NAMED_TOKEN.sub(_keep_name, text)


def _keep_name(m: re.Match[str]) -> str:
    if m.group("value") == REDACTED or m.group("value").startswith("[REDACTED"):
        return m.group(0)
    return f"{m.group('name')}{m.group('sep')}{REDACTED}"


_SENSITIVE_SEEN: dict[str, bool] = {}  # field names recur on every line


def _is_sensitive(name: object) -> bool:
    if not isinstance(name, str):
        return False
    found = _SENSITIVE_SEEN.get(name)
    if found is None:
        found = _SENSITIVE_NAME.search(name) is not None
        if len(_SENSITIVE_SEEN) < _CACHE_SIZE and len(name) <= _CACHED_LEN:
            _SENSITIVE_SEEN[name] = found
    return found


def redact(obj: Any) -> Any:
    """A copy of ``obj`` with secrets replaced by ``[REDACTED]``.

    Strings are scrubbed of key-shaped text and registered secrets; mappings
    have their keys scrubbed and the string values of sensitive names
    (authorization, x-api-key, api_key, token, password...) replaced whole;
    lists, tuples and sets are walked; any other object becomes its scrubbed
    ``repr`` (what the JSON renderer would have written anyway). Numbers,
    booleans and None pass through.
    """
    return _redact(obj, False, 0)


def _redact(obj: Any, sensitive: bool, depth: int) -> Any:
    if obj is None or isinstance(obj, bool | int | float):
        return obj
    if isinstance(obj, str):
        return REDACTED if sensitive and obj else _scrub(obj)
    if isinstance(obj, bytes | bytearray):
        return _redact(bytes(obj).decode("utf-8", "replace"), sensitive, depth)
    if depth >= _MAX_DEPTH:
        return "[...]"
    if isinstance(obj, Mapping):
        out: dict[Any, Any] = {}
        for k, v in obj.items():
            key = _scrub(k) if isinstance(k, str) else k
            hidden = sensitive or _is_sensitive(k)
            if v is None or type(v) is int or type(v) is float or type(v) is bool:
                out[key] = v  # the common fields of a log line, without a call each
            elif type(v) is str and not hidden:
                out[key] = _scrub(v)
            else:
                out[key] = _redact(v, hidden, depth + 1)
        return out
    if isinstance(obj, list | tuple | set | frozenset):
        items = [_redact(v, sensitive, depth + 1) for v in obj]
        return tuple(items) if isinstance(obj, tuple) else items
    try:
        text = repr(obj)
    except Exception:  # a broken __repr__ must not lose the line
        text = f"<unrepresentable {type(obj).__name__}>"
    return _redact(text, sensitive, depth)


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
