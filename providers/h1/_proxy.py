"""Which proxy a URL goes through, decided from the environment exactly as httpx does.

httpx (trust_env) reads ``urllib.request.getproxies()`` (HTTP_PROXY, HTTPS_PROXY,
ALL_PROXY, NO_PROXY in either case) into mount patterns ``http://``,
``https://``, ``all://`` -> proxy and NO_PROXY entries -> no proxy, sorts them
most specific first (port, then longer host, then longer scheme) and takes the
first that matches. This module mirrors httpx._utils.get_environment_proxies
and URLPattern (httpx 0.28) so streamed and non-streamed calls agree.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.request
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}


class Proxy(NamedTuple):
    scheme: str  # http, https, socks5...
    host: str
    port: int
    auth: tuple[str, str] | None  # userinfo, never shown

    @property
    def shown(self) -> str:
        """The proxy for messages: no credentials."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


class _Pattern(NamedTuple):
    scheme: str  # "" = any
    host: str  # "" = any
    port: int | None
    host_regex: re.Pattern[str] | None
    proxy: str | None

    @property
    def priority(self) -> tuple[int, int, int]:
        return (0 if self.port is not None else 1, -len(self.host), -len(self.scheme))


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host.split("/")[0])
    except ValueError:
        return False
    return True


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host.split("/")[0])
    except ValueError:
        return False
    return True


def environment_mounts(env: dict[str, str] | None = None) -> dict[str, str | None]:
    """httpx's get_environment_proxies: mount key -> proxy URL (None: go direct)."""
    info = urllib.request.getproxies() if env is None else env
    mounts: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        value = info.get(scheme)
        if value:
            mounts[f"{scheme}://"] = value if "://" in value else f"http://{value}"
    for host in (h.strip() for h in info.get("no", "").split(",")):
        if host == "*":
            return {}
        if not host:
            continue
        if "://" in host:
            mounts[host] = None
        elif _is_ipv4(host):
            mounts[f"all://{host}"] = None
        elif _is_ipv6(host):
            mounts[f"all://[{host}]"] = None
        elif host.lower() == "localhost":
            mounts[f"all://{host}"] = None
        else:
            mounts[f"all://*{host}"] = None
    return mounts


def _pattern(key: str, proxy: str | None) -> _Pattern:
    parts = urlsplit(key)
    scheme = "" if parts.scheme == "all" else parts.scheme.lower()
    try:
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        host, port = "", None
    if host == "*":
        host = ""
    if not host:
        regex = None
    elif host.startswith("*."):
        regex = re.compile(f"^.+\\.{re.escape(host[2:])}$")
    elif host.startswith("*"):
        regex = re.compile(f"^(.+\\.)?{re.escape(host[1:])}$")
    else:
        regex = re.compile(f"^{re.escape(host)}$")
    return _Pattern(scheme, host, port, regex, proxy)


class ProxyMap:
    """The proxy for each target URL (built once per client, as httpx mounts once)."""

    def __init__(self, mounts: dict[str, str | None]) -> None:
        patterns = [_pattern(key, proxy) for key, proxy in mounts.items()]
        self._patterns = sorted(patterns, key=lambda p: p.priority)  # stable, as httpx

    @classmethod
    def from_environment(cls, trust_env: bool = True) -> ProxyMap:
        return cls(environment_mounts() if trust_env else {})

    def proxy_url(self, scheme: str, host: str, port: int | None) -> str | None:
        """The proxy URL for a target, or None for a direct connection.

        ``port`` is the URL's explicit port (None when it has none), as httpx
        compares them."""
        for p in self._patterns:
            if p.scheme and p.scheme != scheme:
                continue
            if p.host and p.host_regex is not None and not p.host_regex.match(host):
                continue
            if p.port is not None and p.port != port:
                continue
            return p.proxy
        return None


def parse_proxy(url: str) -> Proxy:
    """A proxy URL; ValueError (without the credentials) when it is not one."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"unknown scheme {scheme!r} for a proxy URL")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("invalid port in the proxy URL") from None
    host = parts.hostname
    if not host:
        raise ValueError("no host in the proxy URL")
    auth = None
    if parts.username is not None:
        auth = (unquote(parts.username), unquote(parts.password or ""))
    return Proxy(scheme, host, port or _DEFAULT_PORTS[scheme], auth)
