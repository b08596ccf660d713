"""TLS, HTTP proxies and redirects on the provider stream path.

In process: an HttpProvider built the way the daemon builds one
(providers.settings.settings_for + providers.registry.make_provider) talks to
the fake provider served over real loopback TLS (a trustme CA, tests/fakes/tls.py),
directly or through a real loopback proxy (tests/fakes/proxy.py). The client's
environment (SSL_CERT_FILE, HTTPS_PROXY, HTTP_PROXY, NO_PROXY) is set before
the provider is built, as a user sets it before starting the daemon. Two tests
run the real daemon process with that environment.

Only public behaviour is checked, so these tests judge any transport under
HttpProvider.stream: the httpx one and its replacements alike.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from providers.http import HttpProvider
from providers.registry import make_provider
from providers.settings import settings_for
from providers.types import (
    DoneEvent,
    ErrorEvent,
    Message,
    ProviderFailure,
    Request,
    StreamEvent,
    TextBlock,
    TextDelta,
)
from tests.daemon.conftest import DaemonProcess
from tests.fakes.proxy import FakeProxy
from tests.fakes.recorded import RecordedRequest
from tests.fakes.script import Raw, Reply
from tests.fakes.server import FakeProvider
from tests.fakes.tls import Certs, make_certs
from tests.faults.conftest import Case, FaultDaemon, Script, assert_history

WIRES = {
    # wire api: (catalog provider, key variable, path under the fake, model, key)
    "messages": ("anthropic", "ANTHROPIC_API_KEY", "", "claude-sonnet-4-5", "sk-ant-api03-TlsTestKey0123456789abcdef"),
    "chat": ("openai", "OPENAI_API_KEY", "/v1", "gpt-4o", "sk-proj-TlsTestKey0123456789abcdefgh"),
    "responses": ("openai", "OPENAI_API_KEY", "/v1", "o3-mini", "sk-proj-TlsTestKey9876543210zyxwvu"),
    "generate_content": ("google", "GEMINI_API_KEY", "/v1beta", "gemini-2.5-flash", "AIzaSyTlsTestKey0123456789abcdefghij"),
}  # fmt: skip

# every variable a client may read a proxy or a trust store from
ENV_VARS = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
)
LONG = "Streams cross the proxy whole, byte for byte. " * 40
PROXY_USER, PROXY_PASSWORD = "ikiuser", "Pr0xyPassw0rd-7Hq2Zx9Lm4"
LIMIT = 20  # seconds for one in-process test


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy and no trust store from the machine: each test sets its own."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("tls"))


@pytest.fixture
async def tls_fake(nursery: trio.Nursery, certs: Certs) -> FakeProvider:
    fake = FakeProvider(ssl_context=certs.server_context)
    await nursery.start(fake.serve)
    return fake


@pytest.fixture
def trusted(clean_env: pytest.MonkeyPatch, certs: Certs) -> Certs:
    clean_env.setenv("SSL_CERT_FILE", certs.ca_file)
    return certs


async def start_proxy(nursery: trio.Nursery, **modes: object) -> FakeProxy:
    proxy = FakeProxy(**modes)  # type: ignore[arg-type]
    await nursery.start(proxy.serve)
    return proxy


def provider_for(wire: str, fake: FakeProvider) -> HttpProvider:
    name, env, path, _, key = WIRES[wire]
    settings = settings_for(
        name, env={env: key}, base_url=fake.base_url + path, read_timeout=5, connect_timeout=5
    )
    return make_provider(settings, api=wire)  # type: ignore[arg-type]


def ask(wire: str, text: str = "hi") -> Request:
    return Request(
        model=WIRES[wire][3], messages=[Message(role="user", content=[TextBlock(text=text)])]
    )


async def stream_once(provider: HttpProvider, request: Request) -> list[StreamEvent]:
    with trio.fail_after(LIMIT):
        async with provider.stream(request) as events:
            return [e async for e in events]


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def assert_whole(events: list[StreamEvent], text: str) -> None:
    """One complete answer: the text, then exactly one DoneEvent, no error."""
    assert not [e for e in events if isinstance(e, ErrorEvent)], events
    assert isinstance(events[-1], DoneEvent), events[-1]
    assert sum(isinstance(e, DoneEvent) for e in events) == 1
    assert text_of(events) == text


def only_error(events: list[StreamEvent]) -> ErrorEvent:
    assert len(events) >= 1 and isinstance(events[-1], ErrorEvent), events
    assert not [e for e in events if isinstance(e, DoneEvent)], events
    assert sum(isinstance(e, ErrorEvent) for e in events) == 1, events
    return events[-1]


# ------------------------------------------------------------------ TLS


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_stream_and_a_complete_call_over_tls_on_every_wire(
    tls_fake: FakeProvider, trusted: Certs, wire: str
):
    assert tls_fake.base_url.startswith("https://localhost:")
    provider = provider_for(wire, tls_fake)
    try:
        tls_fake.push(Reply(text=LONG, pieces=20), Reply(text="complete over TLS"))
        assert_whole(await stream_once(provider, ask(wire)), LONG)
        with trio.fail_after(LIMIT):
            response = await provider.complete(ask(wire))
        assert [b.text for b in response.blocks if isinstance(b, TextBlock)] == [
            "complete over TLS"
        ]
        assert len(tls_fake.requests) == 2
    finally:
        await provider.aclose()


async def test_an_untrusted_certificate_is_a_network_error_and_nothing_crosses(
    tls_fake: FakeProvider,
):
    # no SSL_CERT_FILE: the client trusts its default store, which lacks the test CA
    provider = provider_for("messages", tls_fake)
    try:
        tls_fake.push(Reply(text="never seen"), Reply(text="never seen"))
        error = only_error(await stream_once(provider, ask("messages"))).error
        assert error.category == "network", error
        with pytest.raises(ProviderFailure) as failure, trio.fail_after(LIMIT):
            await provider.complete(ask("messages"))
        assert failure.value.error.category == "network"
        # one refused handshake per call: no request crossed, nothing retried in a loop
        assert tls_fake.requests == []
        assert tls_fake.connections == 2
        assert WIRES["messages"][4] not in f"{error} {failure.value}"
    finally:
        await provider.aclose()


async def test_an_untrusted_certificate_error_says_it_is_the_certificate(tls_fake: FakeProvider):
    provider = provider_for("chat", tls_fake)
    try:
        error = only_error(await stream_once(provider, ask("chat"))).error
        assert error.category == "network", error
        assert "certificate" in error.message.lower(), error
        with pytest.raises(ProviderFailure) as failure, trio.fail_after(LIMIT):
            await provider.complete(ask("chat"))
        assert "certificate" in failure.value.error.message.lower(), failure.value.error
    finally:
        await provider.aclose()


async def test_keep_alive_over_tls_ten_streams_one_connection(
    tls_fake: FakeProvider, trusted: Certs
):
    provider = provider_for("chat", tls_fake)
    try:
        for i in range(10):
            tls_fake.push(Reply(text=f"answer {i}", pieces=4))
            assert_whole(await stream_once(provider, ask("chat")), f"answer {i}")
        assert len(tls_fake.requests) == 10
        assert tls_fake.connections == 1  # one TLS handshake for ten turns
    finally:
        await provider.aclose()


# ------------------------------------------------------------------ proxies


async def test_https_goes_through_the_proxy_in_a_connect_tunnel(
    nursery: trio.Nursery, tls_fake: FakeProvider, trusted: Certs, clean_env: pytest.MonkeyPatch
):
    proxy = await start_proxy(nursery)
    clean_env.setenv("HTTPS_PROXY", proxy.url)
    provider = provider_for("messages", tls_fake)
    try:
        tls_fake.push(Reply(text=LONG, pieces=30))
        assert_whole(await stream_once(provider, ask("messages")), LONG)
        assert [(r.method, r.target) for r in proxy.requests] == [
            ("CONNECT", f"localhost:{tls_fake.port}")
        ]
        assert proxy.requests[0].authorization is None
        assert len(tls_fake.requests) == 1
    finally:
        await provider.aclose()


async def test_proxy_credentials_reach_the_proxy_and_nothing_else(
    nursery: trio.Nursery, tls_fake: FakeProvider, trusted: Certs, clean_env: pytest.MonkeyPatch
):
    proxy = await start_proxy(nursery, credentials=(PROXY_USER, PROXY_PASSWORD))
    clean_env.setenv("HTTPS_PROXY", proxy.url_with(PROXY_USER, PROXY_PASSWORD))
    provider = provider_for("chat", tls_fake)
    shown: list[str] = []
    try:
        tls_fake.push(Reply(text="through an authenticating proxy"))
        assert_whole(await stream_once(provider, ask("chat")), "through an authenticating proxy")
        [seen] = proxy.requests
        assert (seen.method, seen.target) == ("CONNECT", f"localhost:{tls_fake.port}")
        assert seen.credentials == (PROXY_USER, PROXY_PASSWORD)
        # the origin never sees the proxy's credentials
        assert "proxy-authorization" not in tls_fake.requests[0].headers
        assert PROXY_PASSWORD not in json.dumps(tls_fake.requests[0].headers)
        # the server fails the request: the error names no proxy credential
        tls_fake.push(Reply(fault=Raw(b'{"error": {"message": "upstream broke"}}', status=500)))
        shown.append(repr(only_error(await stream_once(provider, ask("chat")))))
    finally:
        await provider.aclose()
    # wrong credentials: the proxy answers 407; neither password shows in the error
    wrong = "Wr0ngPassw0rd-Kk8Jj7Hh6"
    clean_env.setenv("HTTPS_PROXY", proxy.url_with(PROXY_USER, wrong))
    provider = provider_for("chat", tls_fake)
    try:
        error = only_error(await stream_once(provider, ask("chat"))).error
        assert error.category in ("network", "auth"), error
        assert "407" in error.message, error
        shown.append(repr(error))
        with pytest.raises(ProviderFailure) as failure, trio.fail_after(LIMIT):
            await provider.complete(ask("chat"))
        shown.append(repr(failure.value.error))
    finally:
        await provider.aclose()
    for text in shown:
        assert PROXY_PASSWORD not in text and wrong not in text, text
    assert proxy.requests[-1].credentials == (PROXY_USER, wrong)


async def test_a_proxy_that_refuses_connect_is_a_network_error_naming_the_status(
    nursery: trio.Nursery, tls_fake: FakeProvider, trusted: Certs, clean_env: pytest.MonkeyPatch
):
    proxy = await start_proxy(nursery, refuse_connect=True)
    clean_env.setenv("HTTPS_PROXY", proxy.url)
    provider = provider_for("responses", tls_fake)
    try:
        tls_fake.push(Reply(text="never seen"))
        error = only_error(await stream_once(provider, ask("responses"))).error
        assert error.category == "network", error
        assert "403" in error.message, error
        assert [r.method for r in proxy.requests] == ["CONNECT"]
        assert tls_fake.requests == [] and tls_fake.connections == 0
    finally:
        await provider.aclose()


async def test_a_tunnel_cut_mid_stream_is_a_network_error_and_the_next_try_is_whole(
    nursery: trio.Nursery, tls_fake: FakeProvider, trusted: Certs, clean_env: pytest.MonkeyPatch
):
    # the handshake and the head take well under 4 kB; the body is about 20 kB
    proxy = await start_proxy(nursery, cut_after=6000, cuts=1)
    clean_env.setenv("HTTPS_PROXY", proxy.url)
    provider = provider_for("generate_content", tls_fake)
    try:
        tls_fake.push(Reply(text=LONG * 4, pieces=80), Reply(text=LONG, pieces=10))
        events = await stream_once(provider, ask("generate_content"))
        error = only_error(events).error
        assert error.category == "network" and error.retryable, error
        assert 0 < len(text_of(events)) < len(LONG * 4), "the cut was not mid-stream"
        assert_whole(await stream_once(provider, ask("generate_content")), LONG)
        assert proxy.tunnel_bytes[0] == 6000
        assert [r.method for r in proxy.requests] == ["CONNECT", "CONNECT"]
    finally:
        await provider.aclose()


async def test_plain_http_goes_through_http_proxy_in_absolute_form(
    nursery: trio.Nursery, fake_provider: FakeProvider, clean_env: pytest.MonkeyPatch
):
    proxy = await start_proxy(nursery)
    clean_env.setenv("HTTP_PROXY", proxy.url)
    provider = provider_for("chat", fake_provider)
    try:
        fake_provider.push(Reply(text=LONG, pieces=10))
        assert_whole(await stream_once(provider, ask("chat")), LONG)
        [seen] = proxy.requests
        assert (seen.method, seen.target) == (
            "POST",
            f"{fake_provider.base_url}/v1/chat/completions",
        )
        assert [r.path for r in fake_provider.requests] == ["/v1/chat/completions"]
    finally:
        await provider.aclose()


@pytest.mark.parametrize("no_proxy", ["localhost", "127.0.0.1,localhost", "*"])
async def test_no_proxy_bypasses_the_proxy(
    nursery: trio.Nursery,
    tls_fake: FakeProvider,
    fake_provider: FakeProvider,
    trusted: Certs,
    clean_env: pytest.MonkeyPatch,
    no_proxy: str,
):
    proxy = await start_proxy(nursery)
    clean_env.setenv("HTTPS_PROXY", proxy.url)
    clean_env.setenv("HTTP_PROXY", proxy.url)
    clean_env.setenv("NO_PROXY", no_proxy)
    plain = provider_for("chat", fake_provider)  # http://127.0.0.1
    secure = provider_for("messages", tls_fake)  # https://localhost
    try:
        tls_fake.push(Reply(text="direct over TLS"))
        assert_whole(await stream_once(secure, ask("messages")), "direct over TLS")
        if "127.0.0.1" in no_proxy or no_proxy == "*":
            fake_provider.push(Reply(text="direct over plain HTTP"))
            assert_whole(await stream_once(plain, ask("chat")), "direct over plain HTTP")
        assert proxy.requests == []
    finally:
        await plain.aclose()
        await secure.aclose()


# ------------------------------------------------------------------ redirects

SECRET_QUERY = "sig=Qs7Vb2Nm4Lk8Jh6Gf5Dd3Ss1"


def redirect_once(status: int, location: str) -> object:
    """A responder: the first request is redirected, the others answered."""

    def responder(request: RecordedRequest) -> Reply | None:
        if request.index == 0:
            return Reply(
                fault=Raw(
                    b"", status=status, content_type="text/plain", headers={"location": location}
                )
            )
        return Reply(text="answered after the redirect", pieces=3)

    return responder


async def test_a_307_to_the_same_origin_is_followed_with_method_and_body(
    tls_fake: FakeProvider, trusted: Certs
):
    tls_fake.responder = redirect_once(307, f"{tls_fake.base_url}/v1/messages")
    provider = provider_for("messages", tls_fake)
    try:
        events = await stream_once(provider, ask("messages", "follow me"))
        assert len(tls_fake.requests) == 2, "the 307 was not followed"
        first, second = tls_fake.requests
        assert (second.method, second.path, second.body) == (first.method, first.path, first.body)
        assert_whole(events, "answered after the redirect")
    finally:
        await provider.aclose()


async def test_a_redirect_to_another_origin_sends_nothing_there(
    nursery: trio.Nursery, tls_fake: FakeProvider, trusted: Certs
):
    other = FakeProvider(default=Reply(text="stolen"))
    await nursery.start(other.serve)
    tls_fake.responder = redirect_once(307, f"{other.base_url}/v1/messages?{SECRET_QUERY}")
    provider = provider_for("messages", tls_fake)
    try:
        events = await stream_once(provider, ask("messages"))
        only_error(events)
        assert other.connections == 0 and other.requests == []  # the key stays home
        assert len(tls_fake.requests) == 1
    finally:
        await provider.aclose()


@pytest.mark.parametrize("status,elsewhere", [(302, False), (307, True), (301, False)])
async def test_a_redirect_not_followed_names_the_location_without_its_query(
    nursery: trio.Nursery, tls_fake: FakeProvider, trusted: Certs, status: int, elsewhere: bool
):
    other = FakeProvider(default=Reply(text="stolen"))
    await nursery.start(other.serve)
    base = other.base_url if elsewhere else tls_fake.base_url
    location = f"{base}/v2/messages"
    tls_fake.responder = redirect_once(status, f"{location}?{SECRET_QUERY}")
    provider = provider_for("messages", tls_fake)
    try:
        error = only_error(await stream_once(provider, ask("messages"))).error
        assert error.category == "invalid_request", error
        assert location in error.message, error
        assert SECRET_QUERY not in error.message and "sig=" not in error.message, error
        assert other.requests == [] and len(tls_fake.requests) == 1
    finally:
        await provider.aclose()


# ------------------------------------------------------------------ the daemon


class EnvDaemon(DaemonProcess):
    """The daemon process with the proxy and trust-store variables of the test only."""

    def __init__(self, home: Path, extra: dict[str, str]) -> None:
        super().__init__(home)
        self.extra = extra

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in super().env.items() if k.upper() not in ENV_VARS}
        return {**env, **self.extra}


@pytest.fixture
def daemon_home() -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="ikt-", dir="/tmp"))  # short: socket paths are limited
    yield home
    shutil.rmtree(home, ignore_errors=True)


async def start_daemon(
    home: Path, fake: FakeProvider, nursery: trio.Nursery, env: dict[str, str]
) -> FaultDaemon:
    script = Script()
    fake.responder = script
    d = FaultDaemon(home, fake, script, nursery)
    d.proc = EnvDaemon(home, env)
    d.configure()
    cfg = json.loads((home / "config.json").read_text())
    for p in cfg["providers"].values():
        p["connect_timeout"] = 5  # a TLS handshake through a proxy on two busy cores
        p["read_timeout"] = 5
    (home / "config.json").write_text(json.dumps(cfg))
    await d.proc.start()
    return d


async def test_daemon_streams_over_tls_through_an_authenticating_proxy_and_retries_a_cut(
    nursery: trio.Nursery, tls_fake: FakeProvider, certs: Certs, daemon_home: Path
):
    # the first tunnel is cut mid-stream; the retry opens another
    proxy = await start_proxy(
        nursery, credentials=(PROXY_USER, PROXY_PASSWORD), cut_after=6000, cuts=1
    )
    env = {
        "SSL_CERT_FILE": certs.ca_file,
        "HTTPS_PROXY": proxy.url_with(PROXY_USER, PROXY_PASSWORD),
    }
    d = await start_daemon(daemon_home, tls_fake, nursery, env)
    try:
        cut = await d.run(
            Case("cut", [Reply(text=LONG * 4, pieces=80), Reply(text=LONG, pieces=10)]), limit=30
        )
        assert cut.status == "completed", cut.ended
        cut.assert_retries(["network"])
        assert_history(cut, ["user", "assistant"], reply=LONG)
        plain = await d.run(
            Case("plain", [Reply(text="over TLS, through the proxy")], model="gpt-4o"), limit=30
        )
        assert plain.status == "completed", plain.ended
        assert_history(plain, ["user", "assistant"], reply="over TLS, through the proxy")
    finally:
        d.stop()
    assert proxy.requests and all(
        (r.method, r.target) == ("CONNECT", f"localhost:{tls_fake.port}") for r in proxy.requests
    )
    assert all(r.credentials == (PROXY_USER, PROXY_PASSWORD) for r in proxy.requests)
    assert proxy.tunnel_bytes[0] == 6000
    assert all("proxy-authorization" not in r.headers for r in tls_fake.requests)
    for where in (d.log_text, json.dumps(cut.events), json.dumps(plain.events), d.proc.output()):
        assert PROXY_PASSWORD not in where
    d.assert_clean_log()


async def test_daemon_refuses_an_untrusted_certificate_after_bounded_retries(
    nursery: trio.Nursery, tls_fake: FakeProvider, daemon_home: Path
):
    # no SSL_CERT_FILE: the test CA is unknown to the daemon
    d = await start_daemon(daemon_home, tls_fake, nursery, {})
    try:
        o = await d.run(Case("untrusted", [Reply(text="never seen")]), limit=30)
    finally:
        d.stop()
    assert o.status == "error", o.ended
    error = o.ended["error"]
    # (that the message names the certificate: tested above, in process)
    assert error["category"] == "network", error
    o.assert_retries(["network"] * 3)  # three attempts in all, then the turn ends
    assert tls_fake.requests == [] and tls_fake.connections == 3
    assert_history(o, ["user"])
    d.assert_clean_log()
