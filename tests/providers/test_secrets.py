"""Keys never leave in text: providers.secrets.scrub, and every error HttpProvider emits.

A provider's error body quoting the key used to be cut at 500 characters
before an exact-match scrub ran, so the start of the key survived; one
provider quotes only the key's first 34 characters. Now every registered
secret and every prefix of 8+ characters of one is redacted, before any cut,
and HttpProvider scrubs each error it emits with its own key and the registry.
"""

from __future__ import annotations

import json
import string
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.h1 import H1Response, StreamClient, TransportError
from providers.http import HttpProvider
from providers.registry import make_provider
from providers.secrets import REDACTED, _forget_secrets, register_secret, register_secrets, scrub
from providers.settings import ProviderSettings, settings_for
from providers.types import ErrorEvent, Message, ProviderError, ProviderFailure, Request, TextBlock
from tests.fakes.script import HttpError, Raw, Reply
from tests.fakes.server import FakeProvider
from tests.freeze import wall_clock

KEY_CHARS = string.ascii_letters + string.digits + "-_"
FILLER = " \n\t.,;:!?()<>{}\"'/@#%&*+=|~"  # shares no character with a key


@pytest.fixture(autouse=True)
def no_secrets() -> Iterator[None]:
    _forget_secrets()
    yield
    _forget_secrets()


def leaks(text: str, key: str) -> list[str]:
    """The 8-character pieces of ``key`` found in ``text``."""
    return [key[i : i + 8] for i in range(len(key) - 7) if key[i : i + 8] in text]


# ------------------------------------------------------------ scrub: properties

keys = st.text(KEY_CHARS, min_size=8, max_size=120)
fillers = st.text(FILLER, max_size=60)


@settings(max_examples=300, deadline=None)
@given(key=keys, data=st.data())
def test_every_prefix_of_eight_or_more_goes_wherever_it_is(key: str, data: st.DataObject) -> None:
    _forget_secrets()  # the fixture runs once per test, not per example
    register_secret(key)
    pieces = data.draw(
        st.lists(
            st.one_of(
                st.integers(8, len(key)).map(lambda n: key[:n]),
                st.text(KEY_CHARS + FILLER, max_size=30),
            ),
            max_size=8,
        )
    )
    cut = data.draw(st.integers(8, len(key)))
    text = "".join(pieces) + key[:cut]
    assert key[:8] not in scrub(text)


@settings(max_examples=300, deadline=None)
@given(key=keys, before=fillers, after=fillers, data=st.data())
def test_only_the_key_goes_and_the_rest_is_kept(key: str, before: str, after: str, data: st.DataObject) -> None:
    _forget_secrets()
    cut = data.draw(st.integers(8, len(key)))
    text = f"{before}{key[:cut]}{after}"
    # registered, or only given to scrub (as HttpProvider gives its own key): the same
    assert scrub(text, key) == f"{before}{REDACTED}{after}"
    register_secret(key)
    assert scrub(text) == f"{before}{REDACTED}{after}"


@settings(max_examples=300, deadline=None)
@given(secrets=st.lists(keys, min_size=1, max_size=5), text=st.text(max_size=300), data=st.data())
def test_text_without_a_secret_is_unchanged(secrets: list[str], text: str, data: st.DataObject) -> None:
    _forget_secrets()
    register_secrets(secrets)
    # near misses too: prefixes of 7 characters, glued to text
    short = data.draw(st.lists(st.sampled_from(secrets).map(lambda s: s[:7]), max_size=4))
    text = text.join(short) if short else text
    if any(s[:8] in text for s in secrets):
        return
    assert scrub(text) == text


def reference_scrub(text: str, secrets: list[str]) -> str:
    """Every occurrence of every prefix of 8+ characters, by brute force; overlapping ones merged.

    And of every piece of 12+ characters from anywhere in a secret (issue 28):
    keys of two letters hold such pieces that start with no prefix."""
    spans = sorted(
        (i, i + n)
        for s in secrets
        for n in range(8, len(s) + 1)
        for i in range(len(text))
        if text.startswith(s[:n], i)
    )
    spans += ((i, i + 12) for s in secrets for i in range(len(text) - 11) if text[i : i + 12] in s)
    spans.sort()
    out, last, cur = [], 0, None
    for a, b in spans:
        if cur is not None and a < cur[1]:
            cur = (cur[0], max(cur[1], b))
            continue
        if cur is not None:
            out += [text[last : cur[0]], REDACTED]
            last = cur[1]
        cur = (a, b)
    if cur is not None:
        out += [text[last : cur[0]], REDACTED]
        last = cur[1]
    return "".join(out) + text[last:]


@settings(max_examples=400, deadline=None)
@given(
    secrets=st.lists(st.text("ab", min_size=8, max_size=20), min_size=1, max_size=3),
    text=st.text("abc", max_size=80),
)
def test_scrub_agrees_with_brute_force_on_keys_that_overlap_themselves(secrets: list[str], text: str) -> None:
    # a two-letter alphabet makes keys that overlap themselves and each other
    _forget_secrets()
    register_secrets(secrets)
    assert scrub(text) == reference_scrub(text, secrets)


def test_several_keys_overlapping_and_cut() -> None:
    a = "sk-ant-api03-Zq7Lm2Xw9Pv4Rt8Ks1Nb6Hc3Jd5Fg0"
    b = "sk-ant-api03-Yy1Qq2Ww3Ee4Rr5Tt6"  # shares its first 13 characters with a
    c = "aaaaaaaabaaaaaaaab"  # a key that overlaps itself
    register_secrets([a, b, c, "short", None, "  "])
    assert scrub(f"<{a}>") == f"<{REDACTED}>"
    assert scrub(f"<{a[:20]}|{b[:14]}|{a[:13]}Yy1Qq2>") == f"<{REDACTED}|{REDACTED}|{REDACTED}>"
    assert scrub(f"x{c[:9]}{c}y") == f"x{REDACTED}y"  # the second occurrence starts inside the first
    assert scrub("a short note, sk-ant-") == "a short note, sk-ant-"
    assert scrub(f"{a[:7]} {b[:7]}") == f"{a[:7]} {b[:7]}"


def test_long_keys_past_the_trie_depth() -> None:
    key = "".join(KEY_CHARS[(i * 7) % len(KEY_CHARS)] for i in range(300))
    register_secret(key)
    for cut in (8, 63, 64, 65, 100, 255, 299, 300):
        assert scrub(f"[{key[:cut]}]") == f"[{REDACTED}]", cut
    assert scrub(f"{key}{key[:150]}.{key[:70]}") == f"{REDACTED}{REDACTED}.{REDACTED}"
    # this key repeats itself every 64 characters: a copy shifted by 64 runs on past the first
    assert scrub(f"<{key[:100]}{key[36:]}>") == f"<{REDACTED}>"


@pytest.mark.parametrize("unit", ["sk-ant-a", "sk-ant-api03-", "sk-ant-api03-Zq7L", "AIzaSyD-", "a", "x" * 64])
def test_scrub_is_linear_on_hostile_text(unit: str) -> None:
    register_secrets(["sk-ant-api03-Zq7Lm2Xw9Pv4Rt8Ks1Nb6Hc3Jd5Fg0", "AIzaSyD-1234567890abcdefghijklmnopq", "x" * 100])
    text = unit * ((1 << 20) // len(unit))
    with wall_clock(5):
        out = scrub(text)
    assert len(out) <= len(text) + len(REDACTED) * (len(text) // 8)
    assert "sk-ant-a" not in out and "AIzaSyD-" not in out


# ------------------------------------------------------------ HttpProvider over loopback

WIRES = {
    # wire api: (catalog provider, key variable, path under the fake, model, key)
    "messages": ("anthropic", "ANTHROPIC_API_KEY", "", "claude-sonnet-4-5", "sk-ant-api03-Hq4Tz8Lp2Wn6Vb1Xc9Mk3Rd7Fs5Gj0Ya"),
    "chat": ("openai", "OPENAI_API_KEY", "/v1", "gpt-4o", "sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5"),
    "responses": ("openai", "OPENAI_API_KEY", "/v1", "o3-mini", "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"),
    "generate_content": ("google", "GEMINI_API_KEY", "/v1beta", "gemini-2.5-flash", "AIzaSyQ-7h3Kd9Lm2Np4Rs6Tv8Wx0Yz1Bc3De"),
}


def provider_for(wire: str, fake: FakeProvider, client: httpx.AsyncClient | None = None) -> HttpProvider:
    name, env, path, _, key = WIRES[wire]
    s: ProviderSettings = settings_for(name, env={env: key}, base_url=fake.base_url + path)
    return make_provider(s, api=wire, client=client)  # type: ignore[arg-type]


def ask(wire: str) -> Request:
    return Request(model=WIRES[wire][3], messages=[Message(role="user", content=[TextBlock(text="hi")])])


def bodies(key: str) -> dict[str, Reply]:
    at_490 = "x" * 490 + key + " was refused"  # a cut at 500 splits the key
    return {
        "text_key_at_490": Reply(fault=Raw(at_490.encode(), status=401, content_type="text/plain")),
        "html_key_at_490": Reply(fault=Raw(f"<html>{at_490}</html>".encode(), status=403, content_type="text/html")),
        "json_first_34": Reply(
            fault=HttpError(401, body={"error": {"message": f"Incorrect API key provided: {key[:34]}...", "type": "invalid_request_error", "code": "invalid_api_key"}})
        ),
        "json_in_5kb": Reply(
            fault=HttpError(401, body={"error": {"message": "y" * 2500 + f" key={key} " + "z" * 2500, "code": 401, "status": "UNAUTHENTICATED"}})
        ),
        "json_key_at_490_of_5kb": Reply(
            fault=HttpError(400, body={"error": {"message": "w" * 490 + key + "v" * 4500, "type": "invalid_request_error"}})
        ),
    }  # fmt: skip


async def events_of(provider: HttpProvider, request: Request) -> list:
    async with provider.stream(request) as events:
        return [e async for e in events]


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_http_errors_quoting_the_key_reach_nobody(fake_provider: FakeProvider, wire: str):
    key = WIRES[wire][4]
    provider = provider_for(wire, fake_provider)
    try:
        for case, reply in bodies(key).items():
            fake_provider.push(reply, reply)
            [event] = await events_of(provider, ask(wire))
            assert isinstance(event, ErrorEvent), (case, event)
            assert event.error.category in ("auth", "invalid_request"), (case, event.error)
            shown = f"{event.error} {event.error!r} {event!r}"
            assert not leaks(shown, key), (case, leaks(shown, key))
            with pytest.raises(ProviderFailure) as failure:
                await provider.complete(ask(wire))
            shown = f"{failure.value} {failure.value.error!r}"
            assert not leaks(shown, key), (case, leaks(shown, key))
            if case.startswith("json"):
                assert REDACTED in failure.value.error.message, case
    finally:
        await provider.aclose()


async def test_a_registered_secret_that_is_not_the_providers_key_goes_too(fake_provider: FakeProvider):
    other = "proxy-token-Ue4Wr6Ty8Ui0Op2As4Df6Gh8"
    register_secret(other)
    provider = provider_for("messages", fake_provider)
    try:
        fake_provider.push(Reply(fault=Raw(("q" * 495 + other).encode(), status=502, content_type="text/plain")))
        [event] = await events_of(provider, ask("messages"))
        assert isinstance(event, ErrorEvent) and event.error.category == "server"
        assert not leaks(event.error.message, other)
    finally:
        await provider.aclose()


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_errors_inside_a_200_stream_and_unexpected_bodies_are_scrubbed(fake_provider: FakeProvider, wire: str):
    key = WIRES[wire][4]
    provider = provider_for(wire, fake_provider)
    try:
        # an error event inside the stream, quoting the key's first 20 characters
        error = {"type": "error", "error": {"type": "authentication_error", "message": f"bad key {key[:20]}"}}
        body = {
            "messages": b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n",
            "chat": b"data: " + json.dumps(error).encode() + b"\n\n",
            "responses": b"data: " + json.dumps({"type": "error", "code": "invalid_api_key", "message": f"bad key {key[:20]}"}).encode() + b"\n\n",
            "generate_content": b"data: " + json.dumps({"error": {"code": 401, "message": f"bad key {key[:20]}", "status": "UNAUTHENTICATED"}}).encode() + b"\n\n",
        }[wire]  # fmt: skip
        fake_provider.push(Reply(fault=Raw(body, content_type="text/event-stream")))
        events = await events_of(provider, ask(wire))
        assert isinstance(events[-1], ErrorEvent), events
        assert not leaks(repr(events), key)
        # a 200 portal page quoting the key: an error naming the content type, scrubbed
        fake_provider.push(Reply(fault=Raw(f"<html>login {key[:30]} please</html>".encode(), content_type="text/html")))
        [event] = await events_of(provider, ask(wire))
        assert isinstance(event, ErrorEvent) and "text/html" in event.error.message
        assert not leaks(repr(event), key)
    finally:
        await provider.aclose()


async def test_transport_failures_quoting_a_url_with_the_key_are_scrubbed(fake_provider: FakeProvider):
    key = WIRES["generate_content"][4]
    quoted = f"cannot reach https://proxy.example/v1beta?key={key}&alt=sse"

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(quoted, request=request)

    class Refusing(StreamClient):
        """The streamed path's transport fails, quoting the URL with the key."""

        @asynccontextmanager
        async def stream(self, *args: object, **kwargs: object) -> AsyncIterator[H1Response]:
            raise TransportError("connect", quoted)
            yield  # pragma: no cover

    async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client:
        name, env, path, _, _ = WIRES["generate_content"]
        s = settings_for(name, env={env: key}, base_url=fake_provider.base_url + path)
        provider = make_provider(s, api="generate_content", client=client, streamer=Refusing())
        [event] = await events_of(provider, ask("generate_content"))
        assert isinstance(event, ErrorEvent) and event.error.category == "network"
        assert "proxy.example" in event.error.message and not leaks(repr(event), key)
        with pytest.raises(ProviderFailure) as failure:
            await provider.complete(ask("generate_content"))
        assert failure.value.error.category == "network" and not leaks(str(failure.value), key)
        with pytest.raises(ProviderFailure) as failure:
            await provider.count_tokens(ask("generate_content"))
        assert not leaks(str(failure.value), key)
        assert not fake_provider.requests  # nothing went round the failing transports


async def test_scrub_keeps_the_error_object_when_there_is_nothing_to_scrub(fake_provider: FakeProvider):
    provider = provider_for("messages", fake_provider)
    try:
        error = ProviderError(category="server", message="nothing secret here")
        assert provider._scrub(error) is error
        quoted = ProviderError(category="auth", message=f"bad {WIRES['messages'][4][:9]}")
        assert provider._scrub(quoted).message == f"bad {REDACTED}"
    finally:
        await provider.aclose()
