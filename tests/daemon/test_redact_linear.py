"""redact() takes time linear in its input: no text can freeze the daemon.

A freeze detector, not a benchmark. The old patterns backtracked
quadratically on long runs of name characters (``aaaa...``, ``a.a.a...``,
``sk-sk-...``, ``eyJ-eyJ-...``): 16 KB took over 10 s, so the 256 KiB to
1 MiB inputs below would have taken hours; the linear ones take well under a
second. The bound is generous (5 s) so a slow machine never fails it.

Matching a regular expression is CPU work that trio cannot cancel, so the
bound is a SIGALRM timer: sre polls for signals while it matches, and the
handler's exception ends the runaway call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from daemon.process.logs import REDACTED, _forget_secrets, redact, register_secret
from tests.freeze import wall_clock

LIMIT = 5.0  # seconds; the linear code needs well under one on 1 MiB
KiB = 1024
MiB = 1024 * KiB
REGISTERED = "sk-ant-api03-Zq7Lm2Xw9Pv4Rt8Ks1Nb6Hc3Jd5Fg0"
VALUE = "Vq8Tz2Lw5Rk9Mx3Pn7Hb4Jc6"  # a token after a sensitive name, appended to every input

# Pieces whose repetition made some old pattern backtrack, or that start a
# match of some pattern (a name, a key prefix, a URL, an auth scheme).
UNITS = [
    "a",
    "a.",
    "a-",
    "a_",
    "0",
    "a-a.",
    "key",
    "key=",
    "token:",
    "api_key=",
    "password:",
    "pwd=",
    "passwd",
    "sk-",
    "sk-ant-",
    "sk-ant-a",
    "AIza",
    "eyJ",
    "eyJ-",
    "eyJa.",
    "://user:",
    "a://",
    "a://b:",
    "x+y.z-",
    "bearer ",
    "basic  ",
    "key: ",
    "=",
    " ",
]


def bounded(fn: Callable[[Any], Any], arg: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    with wall_clock(LIMIT):
        out = fn(arg)
    return out, time.perf_counter() - start


@pytest.fixture(autouse=True)
def registered_key() -> Iterator[None]:
    register_secret(REGISTERED)
    yield
    _forget_secrets()


def repeat(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


@st.composite
def hostile(draw: st.DrawFn) -> str:
    """One to three long runs of one unit each (at least 256 KiB in all, at most 1 MiB)."""
    segments = draw(
        st.lists(st.tuples(st.sampled_from(UNITS), st.integers(256 * KiB, MiB)), min_size=1, max_size=3)
    )
    budget = MiB
    parts = []
    for unit, size in segments:
        size = min(size, budget)
        if size < len(unit):
            break
        parts.append(repeat(unit, size))
        budget -= size
    glue = draw(st.sampled_from(["", " ", ".", "=", ":", "/", "@", "\n"]))
    return glue.join(parts)


# No shrinking: each failing example costs the whole bound, and the unit
# that froze is already in the falsifying example.
@settings(
    max_examples=30,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=hostile())
def test_hostile_text_is_redacted_in_linear_time(text: str) -> None:
    tail = f" api_key={VALUE} and {REGISTERED}"
    out, _ = bounded(redact, text + tail)
    # the patterns still work after a megabyte of hostile text
    assert VALUE not in out and REGISTERED[:8] not in out
    assert out.endswith(f"and {REDACTED}")


@pytest.mark.parametrize("unit", UNITS)
def test_one_mebibyte_of_each_unit(unit: str) -> None:
    text = repeat(unit, MiB)
    _, took = bounded(redact, text)
    assert took < LIMIT
    # as a mapping key too: the sensitive-name check reads keys of any length
    out, _ = bounded(redact, {text: "plain", f"x_{text}_token": VALUE})
    assert isinstance(out, dict) and VALUE not in out.values()


def test_the_agent_reference_that_froze_the_daemon() -> None:
    # agent.show with an unknown 16 KB reference: the error message quotes it
    for size in (16 * KiB, MiB):
        ref = repeat("a", size)
        out, took = bounded(redact, f"no agent named or numbered {ref!r}")
        assert out == f"no agent named or numbered {ref!r}"
        assert took < LIMIT
