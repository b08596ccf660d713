"""A piece of a key cut from anywhere in it is scrubbed (issue 28, defect 6).

``scrub`` used to redact a registered key and its prefixes of 8+ characters
only: "...key AbC...xYz was revoked" quoting the middle or the end of a key
kept that part. Now every run of 12+ consecutive characters of a registered
key, wherever it was cut from and wherever it stands in the text, is redacted
too; a text holding no such run (and no prefix of 8+) is left as it was.
"""

from __future__ import annotations

import string
from collections.abc import Iterator

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from providers.secrets import (
    MIN_SECRET,
    REDACTED,
    _forget_secrets,
    register_secret,
    register_secrets,
    scrub,
)
from tests.freeze import wall_clock

MIN_FRAGMENT = 12  # the shortest piece of a key, cut from anywhere in it, that goes

KEY_CHARS = string.ascii_letters + string.digits + "-_"
FILLER = " \n\t.,;:!?()<>{}\"'/@#%&*+=|~"  # shares no character with a key
ANT = "sk-ant-api03-Zq7Lm2Xw9Pv4Rt8Ks1Nb6Hc3Jd5Fg0Hq4Tz8Lp2Wn6Vb1Xc9Mk3Rd7Fs5Gj0YaUe4Wr6Ty8Ui0Op2As4Df6Gh8-AbCdEfAA"


@pytest.fixture(autouse=True)
def no_secrets() -> Iterator[None]:
    _forget_secrets()
    yield
    _forget_secrets()


def fragments(text: str, key: str) -> list[str]:
    """The 12-character pieces of ``key`` found in ``text``."""
    n = MIN_FRAGMENT
    return [key[i : i + n] for i in range(len(key) - n + 1) if key[i : i + n] in text]


def reference_scrub(text: str, secrets: list[str]) -> str:
    """By brute force: every occurrence of a prefix of 8+ characters or of any
    piece of 12+ characters of a secret, overlapping ones merged into one."""
    pieces = {s[:n] for s in secrets for n in range(MIN_SECRET, len(s) + 1)}
    pieces |= {
        s[i:j] for s in secrets for i in range(len(s)) for j in range(i + MIN_FRAGMENT, len(s) + 1)
    }
    spans = sorted(
        (i, i + len(p)) for p in pieces for i in range(len(text)) if text.startswith(p, i)
    )
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


# ------------------------------------------------------------ the defect


def test_a_piece_from_the_middle_or_the_end_of_a_key_goes() -> None:
    register_secret(ANT)
    middle, end = ANT[40:60], ANT[-15:]
    assert scrub(f"the key ...{middle}... was revoked") == f"the key ...{REDACTED}... was revoked"
    assert scrub(f"key ending in {end}") == f"key ending in {REDACTED}"
    assert scrub(f"({ANT[1:]})") == f"({REDACTED})"  # the key less its first character
    assert scrub(f"'{ANT[30:42]}'") == f"'{REDACTED}'"  # exactly 12
    assert scrub(f"'{ANT[30:41]}'") == f"'{ANT[30:41]}'"  # 11 is too short to tell from a word
    # given only to scrub, as HttpProvider gives its own key: the same
    _forget_secrets()
    assert scrub(f"x {middle} y", ANT) == f"x {REDACTED} y"


def test_pieces_glued_to_other_text_and_to_each_other() -> None:
    other = "proxy-" + ANT[6:10] + "token-Ue4Wr6Ty8Ui0Op2As4Df6Gh8Jk0"
    register_secrets([ANT, other])
    # a piece running into other characters of the key alphabet is cut where
    # the key stops matching; pieces back to back are a redaction each
    assert scrub(f"zzzz{ANT[50:70]}zzzz") == f"zzzz{REDACTED}zzzz"
    assert scrub(f"{ANT[50:70]}{other[12:30]}") == f"{REDACTED}{REDACTED}"
    assert scrub(f"<{ANT[10:40]}{ANT[28:60]}>") == f"<{REDACTED}{REDACTED}>"
    # a prefix of one key (0-10) overlapping a piece of 12 of the other (6-18): one
    assert scrub(f"<{ANT[:10]}token-Ue>") == f"<{REDACTED}>"
    assert scrub(f"<{ANT[:10]}token-U>") == f"<{REDACTED}token-U>"  # 11: only the prefix goes


def test_keys_with_characters_beyond_latin_1_in_long_texts() -> None:
    # a long text is searched for runs of the keys' characters in Latin-1 bytes:
    # a character beyond them must still count as one of a key's
    key = "pässwörd-€uro-Ünïcödé-✓-1234567-日本語のパスワード"
    register_secret(key)
    filler = "Ordinary words, then a quote? " * 6  # long texts are searched another way
    for piece in (key[5:20], key[14:30], key[-12:], key[20:]):
        assert scrub(f"{filler}«{piece}»{filler}") == f"{filler}«{REDACTED}»{filler}", piece
    near = key[14:25]  # 11
    assert scrub(f"{filler}{near}?{near}{filler}") == f"{filler}{near}?{near}{filler}"


# ------------------------------------------------------------ properties

long_keys = st.text(KEY_CHARS, min_size=20, max_size=200)
texts = st.text(KEY_CHARS + FILLER + "é€\U0001f600", max_size=80)
# short texts and long ones are searched in two ways: a long filler makes either
pads = st.sampled_from(["", FILLER * 10])


@settings(max_examples=300, deadline=None)
@given(key=long_keys, before=texts, after=texts, data=st.data())
def test_any_piece_of_twelve_or_more_goes_wherever_it_was_cut(
    key: str, before: str, after: str, data: st.DataObject
) -> None:
    _forget_secrets()  # the fixture runs once per test, not per example
    register_secret(key)
    i = data.draw(st.integers(0, len(key) - MIN_FRAGMENT), label="i")
    j = data.draw(st.integers(i + MIN_FRAGMENT, len(key)), label="j")
    out = scrub(data.draw(pads) + before + key[i:j] + after)
    assert key[i:j] not in out
    assert not fragments(out, key), fragments(out, key)


@settings(max_examples=300, deadline=None)
@given(key=long_keys, data=st.data())
def test_text_without_a_piece_of_twelve_is_unchanged(key: str, data: st.DataObject) -> None:
    _forget_secrets()
    register_secret(key)
    # near misses: pieces of 11 characters from anywhere in the key, glued to
    # random text (which may join two into a piece of 12: those are skipped)
    near = st.integers(1, len(key) - 11).map(lambda i: key[i : i + 11])
    text = data.draw(pads) + "".join(data.draw(st.lists(st.one_of(near, texts), max_size=8)))
    assume(not fragments(text, key) and key[:MIN_SECRET] not in text)
    assert scrub(text) == text


@settings(max_examples=400, deadline=None)
@given(
    secrets=st.lists(st.text("ab", min_size=8, max_size=24), min_size=1, max_size=3), data=st.data()
)
def test_scrub_agrees_with_brute_force_on_keys_that_overlap_themselves(
    secrets: list[str], data: st.DataObject
) -> None:
    # a two-letter alphabet makes keys that overlap themselves and each other,
    # and pieces that start inside prefixes and other pieces
    _forget_secrets()
    register_secrets(secrets)
    cut = st.sampled_from(secrets).flatmap(
        lambda s: st.tuples(st.integers(0, len(s)), st.integers(0, len(s))).map(
            lambda ij: s[min(ij) : max(ij)]
        )
    )
    text = "".join(data.draw(st.lists(st.one_of(cut, st.text("abc", max_size=12)), max_size=8)))
    expected = reference_scrub(text, secrets)
    assert scrub(text) == expected
    # a long text is searched another way (only its runs of the keys' letters)
    assert scrub("c" * 300 + text) == "c" * 300 + expected


# ------------------------------------------------------------ linear time

KiB = 1024
MiB = 1024 * KiB


@pytest.mark.parametrize(
    "unit",
    [
        ANT[40:52],  # a piece of 12, over and over: every position matches
        ANT[40:51] + " ",  # near misses: pieces of 11 between spaces
        ANT[40:51],  # pieces of 11 glued: one long run of key characters, samples of it match
        "x" * 64,  # a key of one repeated character
        ANT[40:52] + " ",  # a piece in each of 80,000 runs: a Python round per run
        "x" * 13 + ".",
        "a",
        "ab-",
    ],
)
def test_pieces_are_found_in_linear_time_on_hostile_text(unit: str) -> None:
    # A freeze detector, not a benchmark: the bound is generous, a quadratic
    # search (every substring of the text against the keys) misses it by far.
    register_secrets([ANT, "x" * 100, "ab-" * 20 + "Q"])
    text = unit * (MiB // len(unit))
    with wall_clock(5):
        out = scrub(text)
    assert not fragments(out, ANT) and "x" * MIN_FRAGMENT not in out and "ab-ab-ab-ab-" not in out


# ------------------------------------------------------------ with the key shapes


def test_a_key_shape_holding_a_piece_of_a_secret_goes_whole() -> None:
    # the redactor replaces its patterns' spans and the secrets' at once: a
    # piece replaced first must not cut a key shape into two visible halves
    from providers.redact import redact

    register_secret("sk-ant-test-SECRET-0123456789abcdef")
    other = "xai-0123456789abcdefghijKLMN"  # a piece of 16 of the secret inside
    assert redact(f"provider said: invalid key {other}") == f"provider said: invalid key {REDACTED}"
    assert redact(f"Bearer {other}!") == f"Bearer {REDACTED}!"
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.0123456789abcdefghij"
    assert redact(f"token {jwt} end") == f"token {REDACTED} end"
