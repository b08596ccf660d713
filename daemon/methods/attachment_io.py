"""The bytes of an attachment given by ``path`` or ``url`` (``agent.prompt``),
read without blocking the event loop and never more than the limit: a file's
size is checked with stat before it is read, and then read with a bound (it
may grow meanwhile); a URL's body is streamed and dropped as soon as it
passes the limit. Each failure is a ``Refused`` whose text the caller puts
after the field's name (daemon/methods/attachments.py)."""

from __future__ import annotations

import os
import stat
import urllib.parse
from typing import TYPE_CHECKING, NamedTuple

import httpx
import trio

from protocol import params as P

if TYPE_CHECKING:
    from agents.tools import Guard

__all__ = ["MAX_REDIRECTS", "URL_TIMEOUT", "Loaded", "Refused", "read_path", "read_url"]

URL_TIMEOUT = 30.0  # seconds for a whole download, redirects included
MAX_REDIRECTS = 5


class Refused(Exception):
    """Why a file cannot be attached (the text after ``attachments[i].FIELD: ``)."""


class Loaded(NamedTuple):
    data: bytes
    name: str  # the file's name: its basename, or the URL's last path segment
    media_type: str | None = None  # what the source says (a URL's Content-Type)
    charset: str | None = None  # the Content-Type's charset, for text


def _shown(path: str) -> str:
    return P.excerpt(path, 200)


def _read_file(path: str, limit: int, guard: Guard | None) -> Loaded:
    """(in a worker thread) The file at ``path``, at most ``limit`` bytes."""
    shown = _shown(path)
    look = guard.look() if guard is not None else None
    why = look.reason(path) if look is not None else None
    if why is not None:
        raise Refused(f"{shown} {why}: it cannot be attached")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise Refused(f"no such file: {shown}") from None
    except NotADirectoryError:
        raise Refused(f"no such file: {shown} (a part of it is not a folder)") from None
    except OSError as e:
        raise Refused(f"cannot read {shown}: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise Refused(f"{shown} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{shown} is not a regular file (a device, pipe or socket)")
    if st.st_size > limit:
        raise Refused(f"{shown} is {st.st_size} bytes; a file is at most {limit} bytes")
    try:
        # O_NONBLOCK: a path swapped for a pipe after the stat does not hang the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise Refused(f"cannot read {shown}: {e.strerror or e}") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise Refused(f"{shown} is not a regular file")
        why = look.reason_of(opened) if look is not None else None
        if why is not None:
            raise Refused(f"{shown} {why}: it cannot be attached")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # one byte past the limit tells it grew past it
            chunk = f.read(min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    if size > limit:
        raise Refused(f"{shown} grew past {limit} bytes while it was read")
    return Loaded(b"".join(chunks), os.path.basename(path) or shown)


async def read_path(path: str, limit: int, guard: Guard | None = None) -> Loaded:
    """The file at the absolute ``path`` (a regular file, at most ``limit``
    bytes, not one the daemon protects: its keys, database, socket)."""
    if "\x00" in path:
        raise Refused("a path holds no NUL character")
    if not os.path.isabs(path):
        raise Refused(
            f"{_shown(path)} is relative: give an absolute path (the daemon's folder is "
            "not the caller's; ikictl and the client library resolve it)"
        )
    return await trio.to_thread.run_sync(_read_file, path, limit, guard)


def shown_url(url: str) -> str:
    """A URL as errors show it: no user, password, query or fragment (a
    signed link's query is a credential)."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return P.excerpt(url.split("?", 1)[0], 200)
    return P.excerpt(f"{parts.scheme}://{host}{port}{parts.path}", 200)


def _url_name(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    last = urllib.parse.unquote(parts.path.rstrip("/").rpartition("/")[2])
    return last or parts.hostname or "download"


def _checked_url(url: str) -> str:
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as e:
        raise Refused(f"not a URL: {e}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise Refused(f"{shown_url(url)}: only http and https URLs are fetched")
    if not parts.hostname:
        raise Refused(f"{shown_url(url)}: the URL names no host")
    return url


async def read_url(url: str, limit: int) -> Loaded:
    """The body of ``url`` (http or https), at most ``limit`` bytes, with
    its Content-Type; redirects followed (at most MAX_REDIRECTS), the whole
    download within URL_TIMEOUT seconds."""
    _checked_url(url)
    shown = shown_url(url)
    with trio.move_on_after(URL_TIMEOUT) as scope:
        try:
            return await _download(url, limit, shown)
        except httpx.TooManyRedirects:
            raise Refused(f"{shown}: more than {MAX_REDIRECTS} redirects") from None
        except httpx.InvalidURL as e:
            raise Refused(f"{shown}: not a URL that can be fetched: {e}") from None
        except httpx.HTTPError as e:
            why = f"{type(e).__name__}: {P.excerpt(str(e), 200)}"
            raise Refused(f"{shown} could not be fetched: {why}") from None
    assert scope.cancelled_caught
    raise Refused(f"{shown}: no whole answer within {URL_TIMEOUT:g} seconds")


async def _download(url: str, limit: int, shown: str) -> Loaded:
    async with (
        httpx.AsyncClient(
            follow_redirects=True, max_redirects=MAX_REDIRECTS, timeout=httpx.Timeout(URL_TIMEOUT)
        ) as client,
        client.stream("GET", url, headers={"accept-encoding": "identity"}) as r,
    ):
        if r.status_code >= 400:
            raise Refused(f"{shown} answered HTTP {r.status_code} {r.reason_phrase}".rstrip())
        if r.status_code >= 300:
            raise Refused(f"{shown} answered HTTP {r.status_code} without a place to go")
        declared = r.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise Refused(f"{shown} is {declared} bytes; a file is at most {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        # asked for identity; a server that compresses anyway is decoded
        # (the limit counts the decoded bytes)
        encoded = r.headers.get("content-encoding", "identity").lower() != "identity"
        async for chunk in r.aiter_bytes() if encoded else r.aiter_raw():
            size += len(chunk)
            if size > limit:
                raise Refused(f"{shown} is over {limit} bytes; a file is at most {limit} bytes")
            chunks.append(chunk)
        kind = r.headers.get("content-type")
        charset = r.charset_encoding
        final = str(r.url)
    return Loaded(b"".join(chunks), _url_name(final), kind, charset)
