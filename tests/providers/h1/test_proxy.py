"""providers.h1 picks the proxy httpx would pick, for every environment and URL here."""

from __future__ import annotations

import httpx
import pytest
from httpx._utils import URLPattern, get_environment_proxies

from providers.h1._pool import parse_target
from providers.h1._proxy import ProxyMap, environment_mounts, parse_proxy

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")

ENVS = [
    {},
    {"HTTPS_PROXY": "http://proxy:3128"},
    {"https_proxy": "proxy.corp:8080", "http_proxy": "http://p2:1"},
    {"ALL_PROXY": "http://all:1", "NO_PROXY": "localhost,127.0.0.1,.internal.example,api.openai.com"},
    {"HTTPS_PROXY": "http://u:p@proxy:3128", "NO_PROXY": "*"},
    {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "example.com, ::1 ,10.0.0.1"},
    {"ALL_PROXY": "socks5://s:1080", "HTTP_PROXY": "http://h:1", "NO_PROXY": "https://secure.example"},
    {"HTTPS_PROXY": "https://tls-proxy:443", "NO_PROXY": "localhost:8080"},
]

URLS = [
    "https://api.openai.com/v1/chat/completions",
    "https://api.anthropic.com/v1/messages",
    "http://localhost:11434/v1/chat/completions",
    "http://127.0.0.1:8080/x",
    "https://a.internal.example/x",
    "https://internal.example/x",
    "https://example.com/x",
    "https://www.example.com/x",
    "https://notexample.com/x",
    "http://[::1]:9000/x",
    "http://10.0.0.1/x",
    "https://secure.example/x",
    "http://secure.example/x",
    "https://api.openai.com:443/v1",
    "http://localhost:8080/x",
]


def httpx_choice(url: str) -> str | None:
    """httpx's own decision (its mount table, sorted and matched as _client does)."""
    mounts = get_environment_proxies()
    for pattern in sorted(URLPattern(k) for k in mounts):
        if pattern.matches(httpx.URL(url)):
            return mounts[pattern.pattern]
    return None


@pytest.mark.parametrize("env", ENVS, ids=range(len(ENVS)))
def test_the_proxy_chosen_is_the_one_httpx_chooses(env: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.lower(), raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    ours = ProxyMap.from_environment()
    assert environment_mounts() == get_environment_proxies()
    for url in URLS:
        t = parse_target(url)
        assert ours.proxy_url(t.scheme, t.host, t.explicit_port) == httpx_choice(url), (env, url)
    assert ProxyMap.from_environment(trust_env=False).proxy_url("https", "api.openai.com", None) is None


def test_proxy_urls_keep_credentials_out_of_what_is_shown():
    p = parse_proxy("http://user:p%40ss@proxy.corp:3128")
    assert (p.host, p.port, p.auth) == ("proxy.corp", 3128, ("user", "p@ss"))
    assert "p@ss" not in p.shown and "user" not in p.shown
    assert parse_proxy("https://tls-proxy").port == 443
    with pytest.raises(ValueError, match="unknown scheme"):
        parse_proxy("ftp://x:1")
