"""Redaction: every text ikigai writes out (a log line, an error message, a
tool's output) passes through ``redact`` or ``scrub`` first.

Key-shaped strings (sk-..., AIza..., JWTs, Bearer tokens, password=...), the
values of sensitive names (authorization, x-api-key, token...) and every
secret registered in ``providers.secrets`` become ``[REDACTED]``. Pure text
work with no I/O: the daemon's logs, the credentials reader and the provider
shell share it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .secrets import REDACTED, generation, redact_spans, secret_spans

__all__ = ["REDACTED", "redact", "scrub"]

_MAX_DEPTH = 32

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
    spans = secret_spans(text)
    if not spans:  # the common case: each pattern replaces in turn
        text = _JWT.sub(_after_pre, text)  # whole, before a key shape inside it
        text = _KEY_SHAPES.sub(REDACTED, text)
        text = _AUTH_SCHEME.sub(_after_scheme, text)
        text = _URL_PASSWORD.sub(_after_pre, text)
        text = _NAMED_PASSWORD.sub(_keep_name, text)
        return _NAMED_TOKEN.sub(_keep_name, text)
    # A registered secret is in the text: every pattern reads the text as it
    # came and all spans are replaced at once, so a key shape whose middle is
    # a piece of the secret is still redacted whole, not left in two halves.
    found: list[tuple[int, int]] = [(m.end("pre"), m.end()) for m in _JWT.finditer(text)]
    found += [m.span() for m in _KEY_SHAPES.finditer(text)]
    found += [(m.end(2), m.end()) for m in _AUTH_SCHEME.finditer(text)]
    found += [m.span("value") for m in _URL_PASSWORD.finditer(text)]
    for pattern in (_NAMED_PASSWORD, _NAMED_TOKEN):
        found += [m.span("value") for m in pattern.finditer(text) if not _redacted(m)]
    return redact_spans(text, _union(spans, found) if found else spans)


def _after_pre(m: re.Match[str]) -> str:
    return f"{m.group('pre')}{REDACTED}"


def _after_scheme(m: re.Match[str]) -> str:
    return f"{m.group(1)}{m.group(2)}{REDACTED}"


def _keep_name(m: re.Match[str]) -> str:
    if _redacted(m):
        return m.group(0)
    return f"{m.group('name')}{m.group('sep')}{REDACTED}"


def _redacted(m: re.Match[str]) -> bool:
    value = m.group("value")
    return value == REDACTED or value.startswith("[REDACTED")


def _union(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans as disjoint spans in order: those that overlap become one."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(a + b):
        if start == end:
            continue
        if out and start < out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


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


scrub = _scrub
