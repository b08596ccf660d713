"""The ``mcp_servers`` part of config.json: the MCP servers agents may use,
checked beyond their types, and the McpServerSpecs the daemon's hub runs,
with every ``$NAME`` replaced by its value. file.py owns the file; this is
its MCP section, kept apart so each stays small.

``$NAME`` (or ``${NAME}``) in ``args``, ``env`` values, ``url`` and
``headers`` values is taken from credentials.json (an entry of any name),
else from the daemon's environment; ``$$`` is a literal ``$``. The values that
are secrets (see _substitute) are registered with the log redactor.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

import msgspec
from msgspec import Meta

from agents.tools import is_env_name

if TYPE_CHECKING:
    from agents.tools.mcp import McpServerSpec

__all__ = ["McpServerConfig", "mcp_servers_one_by_one", "mcp_specs"]

SERVER_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,30}")
# an HTTP header name (RFC 9110 token)
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# $$, ${NAME}, $NAME, or a $ that is none of them (an error)
_DOLLAR = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)|)")
_QUOTED = 40  # characters of a name a message quotes


class McpServerConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``mcp_servers.NAME``: a server run as a command (stdio) or reached at a URL."""

    command: str | None = None
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None  # ~ expanded; relative to the config file's folder
    url: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    default: bool = False  # agents created without a list of servers get it
    start: Literal["lazy", "eager"] = "lazy"
    # seconds a tool call may stay silent (progress resets it); an hour at most
    call_timeout: Annotated[float, Meta(gt=0, le=3600)] = 120.0
    connect_timeout: Annotated[float, Meta(gt=0, le=600)] = 30.0
    mode: Literal["legacy", "auto"] = "legacy"


class _Fault(ValueError):
    """A fault, raised as the caller's error type (the ConfigError file.py
    passes in)."""


def _error(text: str) -> Exception:
    return _Fault(text)


def _quote(name: str) -> str:
    return repr(name if len(name) <= _QUOTED else f"{name[:_QUOTED]}…")


def mcp_servers_one_by_one(
    data: dict[str, Any],
    where: str,
    base: Path,
    convert: Callable[[Any, type[Any], str, str], Any],
    error: type[Exception],
) -> dict[str, Any]:
    """``data`` with each ``mcp_servers`` entry converted (``convert`` is
    _messages.py's, so messages name ``mcp_servers.NAME.FIELD``) and checked;
    ``error`` (ConfigError) at the first fault."""
    try:
        return _one_by_one(data, where, base, convert)
    except _Fault as e:
        raise error(str(e)) from None


def _one_by_one(
    data: dict[str, Any],
    where: str,
    base: Path,
    convert: Callable[[Any, type[Any], str, str], Any],
) -> dict[str, Any]:
    servers = data.get("mcp_servers")
    if not isinstance(servers, dict):
        return data  # not an object: the Config conversion names it
    out: dict[str, McpServerConfig] = {}
    for name, value in servers.items():
        if not SERVER_NAME.fullmatch(name):
            raise _error(
                f"{where}: mcp_servers: {_quote(name)} is not a server name (1-31 lowercase "
                "letters, digits and '-', starting with a letter or digit)"
            )
        at = f"mcp_servers.{name}"
        if isinstance(value, dict):
            for field in ("env", "headers"):
                values = value.get(field)
                for key, v in values.items() if isinstance(values, dict) else ():
                    if not isinstance(v, str):
                        raise _error(f"{where}: {at}.{field}.{key}: Expected str, got {_kind(v)}")
        server: McpServerConfig = convert(value, McpServerConfig, where, at)
        if server.cwd is not None:
            cwd = Path(os.path.expanduser(server.cwd))
            server = msgspec.structs.replace(
                server, cwd=str(cwd if cwd.is_absolute() else base / cwd)
            )
        fault = _fault(server, at)
        if fault is not None:
            raise _error(f"{where}: {fault}")
        out[name] = server
    return {**data, "mcp_servers": out}


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "list" if isinstance(value, list) else "object"


def _fault(s: McpServerConfig, at: str) -> str | None:
    """What the types cannot say, as ``FIELD: why``; None when nothing is."""
    if (s.command is None) == (s.url is None):
        return f"{at}: give exactly one of command (a server run here) or url (one over HTTP)"
    texts: list[tuple[str, str]] = [(f"{at}.args[{i}]", a) for i, a in enumerate(s.args)]
    if s.command is not None:
        if not s.command.strip():
            return f"{at}.command: must not be empty"
        if s.headers:
            return f"{at}.headers: only a url server takes headers"
        texts.append((f"{at}.command", s.command))
    else:
        assert s.url is not None
        for field, given in (("args", s.args), ("env", s.env), ("cwd", s.cwd)):
            if given:
                return f"{at}.{field}: only a command server takes {field}"
        if not s.url.startswith(("http://", "https://", "$")):
            return f"{at}.url: must start with http:// or https://"
        if "$" not in s.url:
            try:
                _check_url(s.url, f"{at}.url")
            except ValueError as e:
                return str(e)
        texts.append((f"{at}.url", s.url))
    for name, value in s.env.items():
        if not is_env_name(name):
            return (
                f"{at}.env.{name}: not a variable name (letters, digits and '_', "
                "not starting with a digit)"
            )
        texts.append((f"{at}.env.{name}", value))
    for name, value in s.headers.items():
        if not _HEADER_NAME.fullmatch(name):
            return f"{at}.headers: {_quote(name)} is not a header name"
        texts.append((f"{at}.headers.{name}", value))
    for field, text in texts:
        if "\0" in text:
            return f"{field}: may not hold a NUL character"
        fault = _dollar_fault(text)
        if fault is not None:
            return f"{field}: {fault}"
    if s.cwd is not None and not os.path.isdir(s.cwd):
        # cut: a hostile value is quoted in part, never whole
        shown = s.cwd if len(s.cwd) <= _QUOTED else f"{s.cwd[:_QUOTED]}…"
        return f"{at}.cwd: {shown} is not a folder"
    return None


def _dollar_fault(text: str) -> str | None:
    for m in _DOLLAR.finditer(text):
        if m.group(0) == "$":
            return (
                f"a '$' at character {m.start()} names no variable: write $NAME or ${{NAME}} "
                "for a value from credentials.json or the environment, $$ for a '$'"
            )
    return None


# A variable or header whose name says it holds a secret (GIT_TOKEN, API_KEY,
# Authorization...). Not every value is one: "PATH": "$PATH" in env must not
# make the daemon's PATH a secret, which every tool process would then lose.
_SECRET_NAME = re.compile(
    r"(?i)(?:^|[_.-])(?:[a-z]*key|[a-z]*token|secrets?|passw(?:or)?d|pwd|auth|authorization|"
    r"credentials?|cookie|pat|signature)(?:$|[_.-])"
)


def _substitute(
    text: str,
    field: str,
    credentials: Mapping[str, str],
    env: Mapping[str, str],
    found: list[str],
    header: str | None = None,
) -> str:
    """``text`` with its $ names replaced; the secrets among the values go
    in ``found``: every value from credentials.json, and a value from the
    environment whose variable, or the header it goes in, is named like a secret."""

    def value(m: re.Match[str]) -> str:
        if m.group(1):
            return "$"
        name = m.group(2) or m.group(3)
        got = credentials.get(name) or env.get(name)
        if not got:
            raise _error(
                f"{field}: ${name} is not set: add {name!r} to credentials.json "
                "or set it in the daemon's environment"
            )
        if "\0" in got:
            raise _error(f"{field}: the value of ${name} holds a NUL character")
        if (
            name in credentials
            or _SECRET_NAME.search(name)
            or (header is not None and _SECRET_NAME.search(header))
        ):
            found.append(got)
        return got

    return _DOLLAR.sub(value, text)


def _check_url(url: str, field: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise _error(f"{field}: must start with http:// or https:// once $ names are replaced")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number from 0 to 65535
    except ValueError as e:
        raise _error(f"{field}: not a URL ({e})") from None
    if not parts.hostname or any(c.isspace() for c in url):
        raise _error(f"{field}: not a URL (http://HOST[:PORT]/PATH)")


def _one_line(value: str, field: str) -> str:
    # a line break in a header value would start another header
    if "\r" in value or "\n" in value:
        raise _error(f"{field}: a header value is one line")
    return value


def mcp_specs(
    servers: Mapping[str, McpServerConfig],
    credentials: Mapping[str, str],
    env: Mapping[str, str],
    where: str = "config.json",
    *,
    error: type[Exception],
) -> tuple[dict[str, McpServerSpec], list[str]]:
    """The hub's specs, every ``$NAME`` replaced (``error`` naming the field
    and the variable when one is set nowhere), and the secrets among the values
    brought in (see _substitute): the caller registers them with the log
    redactor and keeps them from tool processes. ``error``: ConfigError."""
    try:
        return _specs(servers, credentials, env, where)
    except _Fault as e:
        raise error(str(e)) from None


def _specs(
    servers: Mapping[str, McpServerConfig],
    credentials: Mapping[str, str],
    env: Mapping[str, str],
    where: str,
) -> tuple[dict[str, McpServerSpec], list[str]]:
    from agents.tools.mcp import McpServerSpec

    found: list[str] = []
    specs: dict[str, McpServerSpec] = {}
    for name, s in servers.items():
        at = f"{where}: mcp_servers.{name}"

        def sub(text: str, field: str, header: str | None = None) -> str:
            return _substitute(text, f"{at}.{field}", credentials, env, found, header)  # noqa: B023

        url = None if s.url is None else sub(s.url, "url")
        if url is not None:
            _check_url(url, f"{at}.url")
        specs[name] = McpServerSpec(
            name=name,
            command=s.command,
            args=tuple(sub(a, f"args[{i}]") for i, a in enumerate(s.args)),
            env={k: sub(v, f"env.{k}") for k, v in s.env.items()},
            cwd=s.cwd,
            url=url,
            headers={
                k: _one_line(sub(v, f"headers.{k}", k), f"{at}.headers.{k}")
                for k, v in s.headers.items()
            },
            default=s.default,
            start=s.start,
            call_timeout=s.call_timeout,
            connect_timeout=s.connect_timeout,
            mode=s.mode,
        )
    return specs, list(dict.fromkeys(found))
