"""Hypothesis over schedule.add's parameters against one real daemon (a real
process on a real Unix socket, real SQLite, and real PostgreSQL when
IKIGAI_TEST_PG_URL is set; the fake provider on loopback).

Each case is a valid set of parameters (cron strings with ranges, steps,
names and odd spacing, zones, durations in every unit, date-times in every
accepted form) or that set with ONE parameter made bad: a cron expression
with the wrong number of fields or a value out of range, an unknown or
path-like zone, a duration without a unit or over a year, a time in the past
or past the year 9999, a wrong type, an empty, huge or NUL-bearing string, an
unknown or dead agent, two rules or none. A valid set is accepted, shown back
as given, and removed; a bad one is refused with -32602 whose message names
the bad parameter (the agent errors: -32001 and -32003), and nothing is stored
(``schedule.list all=true`` unchanged). After every case the daemon answers,
and no answer is an internal error.
"""

from __future__ import annotations

import json
import shutil
import socket
import string
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.schedules.rules import MAX_DURATION, MIN_EVERY
from tests.daemon.conftest import DaemonProcess, write_home
from tests.fakes.script import Reply
from tests.fakes.server import ThreadedFakeProvider

MAX_EXAMPLES = 200
INVALID_PARAMS, AGENT_NOT_FOUND, REFUSED, INTERNAL = -32602, -32001, -32003, -32603
PREFIX = "invalid params for schedule.add: "  # the decoder's words for a wrong type or range
RULES = ("cron", "every", "at", "in")
ZONES = sorted(available_timezones())


class Conn:
    """Blocking JSON-RPC on the daemon's socket (hypothesis runs outside trio)."""

    def __init__(self, path: Path) -> None:
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(30)
        self.s.connect(str(path))
        self.buf = b""
        self.rid = 0

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.rid += 1
        line = {"jsonrpc": "2.0", "id": self.rid, "method": method, "params": params or {}}
        self.s.sendall(json.dumps(line).encode() + b"\n")
        while True:
            while b"\n" in self.buf:
                raw, self.buf = self.buf.split(b"\n", 1)
                msg = json.loads(raw)
                if msg.get("id") == self.rid:
                    return msg
            data = self.s.recv(1 << 16)
            assert data, f"the daemon closed the connection before answering {method}"
            self.buf += data


@dataclass
class Served:
    daemon: DaemonProcess
    conn: Conn
    stored: list[int] = field(default_factory=list)  # every schedule ever accepted (all removed)
    figures: dict[str, int] = field(default_factory=dict)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    home = Path(tempfile.mkdtemp(prefix="iksf-", dir="/tmp"))  # short: a socket path's limit
    config: dict[str, Any] = {}
    dropped: Any = None
    if request.param == "postgres":
        from tests.store.conftest import _pg_admin_url, create_pg_database, drop_pg_database

        admin = _pg_admin_url()
        name = f"ikigai_schedfuzz_{home.name[5:].lower()}"
        config["database_url"] = create_pg_database(admin, name)
        dropped = lambda: drop_pg_database(admin, name)  # noqa: E731
    try:
        with ThreadedFakeProvider(default=Reply(text="ok")) as fake:
            write_home(home, fake, **config)
            daemon = DaemonProcess(home)
            daemon.start_blocking()
            try:
                conn = Conn(daemon.socket)
                for name in ("w", "gone"):
                    assert "result" in conn.call("agent.create", {"name": name})
                assert "result" in conn.call("agent.kill", {"agent": "gone"})
                s = Served(daemon, conn)
                yield s
                print(f"\nschedule.add fuzz ({request.param}): {s.figures}")
            finally:
                daemon.stop()
    finally:
        if dropped is not None:
            dropped()
        shutil.rmtree(home, ignore_errors=True)


# ------------------------------------------------------------------ valid values


def _pick(low: int, high: int) -> st.SearchStrategy[str]:
    one = st.integers(low, high).map(str)
    span = st.tuples(st.integers(low, high), st.integers(low, high)).map(lambda t: f"{min(t)}-{max(t)}")
    step = st.tuples(st.sampled_from(["*", f"{low}-{high}"]), st.integers(1, high - low + 1)).map(lambda t: f"{t[0]}/{t[1]}")
    items = st.lists(st.one_of(one, span), min_size=1, max_size=3).map(",".join)
    return st.one_of(st.just("*"), step, items)


_MONTHS = st.one_of(_pick(1, 12), st.sampled_from(["jan", "JUN-AUG", "*/3", "DEC"]))
_WEEKDAYS = st.one_of(_pick(0, 7), st.sampled_from(["MON-FRI", "sun", "5L", "1#2", "sat,sun"]))
# day-of-month up to 28: a 30 or 31 that no month chosen has is refused, rightly
_DAYS = st.one_of(_pick(1, 28), st.sampled_from(["L", "1,15", "LW"]))
_SPACES = st.sampled_from([" ", "  ", "\t", " \t "])


@st.composite
def _valid_cron(draw: st.DrawFn) -> str:
    fields = [draw(_pick(0, 59)), draw(_pick(0, 23)), draw(_DAYS), draw(_MONTHS), draw(_WEEKDAYS)]
    text = fields[0]
    for f in fields[1:]:
        text += draw(_SPACES) + f
    return draw(st.sampled_from(["", " "])) + text + draw(st.sampled_from(["", " "]))


@st.composite
def _duration(draw: st.DrawFn, low: int, high: int) -> tuple[str, int]:
    """A duration text of ``low`` to ``high`` seconds, in random units and cases."""
    total = draw(st.integers(low, high))
    parts, rest = [], total
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n = rest // size if unit == "s" else draw(st.integers(0, rest // size))
        rest -= n * size
        if n or (unit == "s" and not parts):
            parts.append(f"{n}{draw(st.sampled_from([unit, unit.upper()]))}")
    return draw(_SPACES.map(lambda s: s if s == " " else "")).join(parts), total


def _stamp(when: datetime, draw: st.DrawFn) -> str:
    sep = draw(st.sampled_from(["T", " "]))
    text = when.strftime(f"%Y-%m-%d{sep}%H:%M") + (when.strftime(":%S") if draw(st.booleans()) else "")
    return text


@st.composite
def _future_at(draw: st.DrawFn) -> str:
    # two days ahead at least: in the future whatever the zone or the offset
    when = datetime.now(UTC) + timedelta(days=draw(st.integers(2, 36_500)), minutes=draw(st.integers(0, 1439)))
    suffix = draw(st.sampled_from(["", "Z", "+00:00", "+05:30", "-08:00", "+14:00", "-12:00"]))
    return _stamp(when, draw) + suffix


_NAMES = st.from_regex(r"[a-z][a-z0-9_.-]{0,30}", fullmatch=True)
_PROMPTS = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), min_size=1, max_size=80).filter(str.strip),
    st.integers(1, 300_000).map(lambda n: "p" * n),  # long: within the line limit
)


@st.composite
def _valid(draw: st.DrawFn) -> dict[str, Any]:
    params: dict[str, Any] = {"agent": "w", "prompt": draw(_PROMPTS)}
    rule = draw(st.sampled_from(RULES))
    if rule == "cron":
        params["cron"] = draw(_valid_cron())
    elif rule == "every":
        fast = draw(st.booleans())
        params["every"], _ = draw(_duration(1 if fast else MIN_EVERY, MAX_DURATION))
        params["allow_fast"] = True if fast else draw(st.sampled_from([False, None]))
    elif rule == "at":
        params["at"] = draw(_future_at())
    else:
        params["in"], _ = draw(_duration(1, MAX_DURATION))
    if draw(st.booleans()):
        params["tz"] = draw(st.sampled_from(ZONES))
    if draw(st.booleans()):
        params["name"] = draw(_NAMES)
    if draw(st.booleans()):
        params["fork"] = True
        if draw(st.booleans()):
            params["keep"] = draw(st.integers(1, 10_000))
        if draw(st.booleans()):
            params["budget_usd"] = draw(st.one_of(st.floats(0.01, 1_000_000), st.integers(1, 1_000_000)))
    for key, values in (("missed", ["skip", "once", "all"]), ("overlap", ["skip", "queue"])):
        if draw(st.booleans()):
            params[key] = draw(st.sampled_from(values))
    return {k: v for k, v in params.items() if v is not None}


# ------------------------------------------------------------------ bad values

_HUGE = st.integers(201, 5000).map(lambda n: "9" * n)
_LETTERS = st.text(alphabet=string.ascii_letters, min_size=1, max_size=12)
_WRONG_TYPES = st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.lists(st.just("x"), max_size=2), st.just({"a": 1}))


def _with_nul(good: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(good, st.integers(0, 50)).map(lambda t: t[0][: t[1]] + "\x00" + t[0][t[1] :])


@st.composite
def _bad_cron(draw: st.DrawFn) -> Any:
    fields = draw(_valid_cron()).split()
    kind = draw(st.integers(0, 7))
    if kind == 0:  # too few or too many fields
        count = draw(st.sampled_from([1, 2, 3, 4, 6, 7]))
        fields = (fields * 2)[:count]
    elif kind == 7:  # a seconds field first (Quartz's, and cronsim's with six): every few seconds
        fields = [draw(_pick(0, 59)), *fields]
    elif kind == 1:  # a value out of its range
        at, value = draw(st.sampled_from([(0, st.integers(60, 10**6)), (1, st.integers(24, 999)), (2, st.sampled_from([0, 32, 99])), (3, st.sampled_from([0, 13, 99])), (4, st.integers(8, 99))]))
        fields[at] = str(draw(value))
    elif kind == 2:  # a word that is no field's name
        fields[draw(st.integers(0, 4))] = "x" + draw(_LETTERS)
    elif kind == 3:
        return draw(st.sampled_from(["", " ", "\t", "@daily", "* * * * * *", "0 9 30 2 *", "*/0 * * * *", "5-1 * * * *"]))
    elif kind == 4:
        return draw(_with_nul(st.just(" ".join(fields))))
    elif kind == 5:
        return draw(_HUGE)
    else:
        return draw(_WRONG_TYPES)
    return " ".join(fields)


_BAD_ZONE = st.one_of(
    _LETTERS.map(lambda s: f"Mars/{s}"),
    st.sampled_from(["", "  ", "../../etc/passwd", "/etc/localtime", "Europe", "America/", "Europe//Paris", "EUROPE/PARIS", "zone.tab", "Etc/GMT+15"]),
    _with_nul(st.sampled_from(ZONES)),
    _HUGE,
    _WRONG_TYPES,
)


def _bad_duration(under_a_minute: bool) -> st.SearchStrategy[Any]:
    cases = [
        st.integers(0, 10**6).map(str),  # no unit
        st.sampled_from(["", " ", "0s", "0m", "0h0m", "-5m", "1.5h", "1w", "1y", "5ms", "10 minutes", "1h30", "h", "1d1", "367d", "9999999999s"]),
        st.integers(MAX_DURATION + 1, MAX_DURATION * 100).map(lambda n: f"{n}s"),
        _LETTERS.filter(lambda s: s.lower() not in ("s", "m", "h", "d")),
        _with_nul(st.sampled_from(["10m", "1h", "2d"])),
        _HUGE,
        _WRONG_TYPES,
    ]
    if under_a_minute:
        cases.append(st.integers(1, MIN_EVERY - 1).map(lambda n: f"{n}s"))
    return st.one_of(*cases)


@st.composite
def _bad_at(draw: st.DrawFn) -> tuple[Any, str | None]:
    """A bad ``at`` and the zone to give with it (None: none)."""
    kind = draw(st.integers(0, 4))
    if kind == 0:  # in the past
        when = datetime.now(UTC) - timedelta(days=draw(st.integers(2, 365 * 200)))
        return _stamp(when, draw) + draw(st.sampled_from(["", "Z", "+02:00"])), None
    if kind == 1:  # past the ends of the calendar once in UTC or in the zone
        return draw(
            st.sampled_from(
                [
                    ("9999-12-31T23:59-05:00", None),
                    ("9999-12-31T23:59", "America/New_York"),
                    ("9999-12-31T23:00Z", "Pacific/Kiritimati"),
                    ("0001-01-01T00:00+05:00", None),
                    ("2026-13-01T09:00", None),
                    ("2027-02-30T09:00", None),
                    ("2027-01-01T25:00", None),
                ]
            )
        )
    if kind == 2:
        return draw(st.one_of(_LETTERS, st.sampled_from(["", " ", "tomorrow", "now", "in 2h"]))), None
    if kind == 3:
        return draw(st.one_of(_with_nul(st.just("2099-01-01T09:00")), _HUGE)), None
    return draw(_WRONG_TYPES), None


_BAD_NAMES = st.one_of(
    st.sampled_from(["", " ", "a b", "tab\there", "ctl\x01x", "\u200bzw"]),
    st.integers(0, 10**9).map(str),  # only digits: an id
    st.integers(201, 256).map(lambda n: "n" * n),  # over the store's limit, within the protocol's
    st.integers(257, 2000).map(lambda n: "n" * n),
    _with_nul(st.just("nightly")),
    _WRONG_TYPES.filter(lambda v: not isinstance(v, str)),
)


@dataclass(frozen=True)
class Expect:
    code: int  # 0: accepted
    fields: tuple[str, ...] = ()  # one of them opens the message
    words: str = ""  # in the message


OK = Expect(0)


def _set_rule(params: dict[str, Any], name: str, value: Any) -> None:
    for other in RULES:
        params.pop(other, None)
    params[name] = value


# what a case makes bad; "valid" last: hypothesis draws the first choices most
KINDS = ["cron", "tz", "every", "in", "at", "prompt", "name", "keep", "budget_usd", "missed", "overlap", "flags", "agent", "rules", "unknown", "valid", "valid"]


@st.composite
def _cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], Expect]:
    what = draw(st.sampled_from(KINDS))
    return (what, *_case(draw, what))


def _case(draw: st.DrawFn, what: str) -> tuple[dict[str, Any], Expect]:
    params = draw(_valid())
    if what == "valid":
        return params, OK
    if what == "cron":
        _set_rule(params, "cron", draw(_bad_cron()))
    elif what == "tz":
        params["tz"] = draw(_BAD_ZONE)
    elif what in ("every", "in"):
        params.pop("allow_fast", None)
        _set_rule(params, what, draw(_bad_duration(under_a_minute=what == "every")))
    elif what == "at":
        value, zone = draw(_bad_at())
        _set_rule(params, "at", value)
        params.pop("tz", None)
        if zone is not None:
            params["tz"] = zone
    elif what == "prompt":
        params["prompt"] = draw(st.one_of(st.sampled_from(["", " ", "\n\t "]), _with_nul(_PROMPTS), _WRONG_TYPES, st.none()))
    elif what == "name":
        params["name"] = draw(_BAD_NAMES)
    elif what in ("keep", "budget_usd"):
        if draw(st.booleans()):  # a good value without fork
            params.pop("fork", None)
            params.pop("keep" if what == "budget_usd" else "budget_usd", None)
            params[what] = 3
            return params, Expect(INVALID_PARAMS, (what,), "only a fork schedule")
        params["fork"] = True
        bad = [st.sampled_from([0, -1, 10_001, 10**12]), st.just("3"), st.just(1.5)] if what == "keep" else [st.sampled_from([0, -0.5, 1_000_001, 1e300]), st.just("1.0")]
        params[what] = draw(st.one_of(*bad, st.booleans(), st.just([1])))
    elif what in ("missed", "overlap"):
        params[what] = draw(st.one_of(st.sampled_from(["", "ONCE", "never", "Skip"]), _LETTERS, _WRONG_TYPES, st.none()))
    elif what == "flags":
        what = draw(st.sampled_from(["fork", "allow_fast"]))
        params[what] = draw(st.one_of(st.sampled_from(["true", "yes", 1, 0, [], {}]), st.none()))
    elif what == "agent":
        kind = draw(st.integers(0, 2))
        if kind == 0:
            params["agent"] = draw(st.sampled_from(["nobody-here", "nope"]) | _LETTERS.map(lambda s: f"zz-{s}"))
            return params, Expect(AGENT_NOT_FOUND, (), params["agent"])
        if kind == 1:
            params["agent"] = "gone"
            return params, Expect(REFUSED, (), "dead")
        params["agent"] = draw(st.one_of(_with_nul(st.just("w")), _WRONG_TYPES, st.none(), st.integers(257, 999).map(lambda n: "a" * n)))
    elif what == "rules":
        if draw(st.booleans()):  # none
            for rule in RULES:
                params.pop(rule, None)
            return params, Expect(INVALID_PARAMS, ("cron",), "give exactly one of")
        given = next(r for r in RULES if r in params)
        extra = draw(st.sampled_from([r for r in RULES if r != given]))
        params[extra] = {"cron": "0 9 * * *", "every": "10m", "at": "2099-01-01T09:00", "in": "2h"}[extra]
        return params, Expect(INVALID_PARAMS, (given, extra), "give exactly one of")
    else:
        key = draw(_LETTERS.filter(lambda k: k not in ("agent", "prompt", "cron", "tz", "every", "at", "in", "fork", "keep", "name", "missed", "overlap", "budget_usd", "allow_fast")))
        params[key] = draw(st.one_of(st.none(), _WRONG_TYPES))
        return params, Expect(INVALID_PARAMS, (), "unknown field")
    return params, Expect(INVALID_PARAMS, (what,))


# ------------------------------------------------------------------ the test


def _names_field(message: str, fields: tuple[str, ...]) -> bool:
    """The message opens with one of ``fields``: ``cron: ...``, or, for a wrong
    type or range found by the protocol's decoder, ``invalid params for
    schedule.add: cron: ...``."""
    return any(message.startswith(f"{f}:") or message.startswith(f"{PREFIX}{f}:") for f in fields)


def _check_accepted(params: dict[str, Any], shown: dict[str, Any]) -> None:
    assert shown["status"] == "active" and shown["agent_name"] == "w", shown
    assert shown["prompt"] == params["prompt"]
    assert shown["fork"] == bool(params.get("fork")) and shown["keep"] == params.get("keep")
    assert shown["budget_usd"] == params.get("budget_usd")
    assert shown["missed"] == params.get("missed", "once") and shown["overlap"] == params.get("overlap", "skip")
    if "tz" in params:
        assert shown["tz"] == ZoneInfo(params["tz"]).key
    if "cron" in params:
        assert shown["cron"] == " ".join(params["cron"].split())
    if "every" in params:
        assert shown["every"] == _seconds(params["every"])
    if "at" in params or "in" in params:
        assert shown["at"] is not None
    next_run = datetime.fromisoformat(shown["next_run"].replace("Z", "+00:00"))
    assert next_run > datetime.now(UTC) - timedelta(seconds=5)


def _seconds(text: str) -> int:
    import re

    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(int(n) * units[u.lower()] for n, u in re.findall(r"(\d+)([smhdSMHD])", text))


def _bad(field: str, **params: Any) -> tuple[str, dict[str, Any], Expect]:
    return field, {"agent": "w", "prompt": "hi", **params}, Expect(INVALID_PARAMS, (field,))


# always run: each was accepted, or answered -32603, or refused naming no
# field or another one, before the daemon was fixed
REGRESSIONS = [
    _bad("cron", cron="*/5 * * * * *"),  # cronsim's six fields: every 5 seconds, no allow_fast
    _bad("cron", cron="0 0 9 * * 1-5"),
    _bad("at", at="9999-12-31T23:59-05:00"),  # OverflowError: -32603
    _bad("at", at="0001-01-01T00:00+05:00"),
    # accepted, then every schedule.list answered -32603 (describe() overflowed)
    _bad("at", at="9999-12-31T23:00Z", tz="Pacific/Kiritimati"),
    _bad("at", at="2099-01-01T09:00\x00"),  # fromisoformat ignores one trailing NUL
    _bad("every", every=""),  # was "cron: give exactly one of ..."
    _bad("in", **{"in": ""}),
    _bad("prompt", prompt="a\x00b"),  # PostgreSQL: -32003 quoting the database URL
    _bad("name", every="1h", name="123"),  # was -32003 "schedule name ..."
    _bad("name", every="1h", name=""),
    _bad("name", every="1h", name="n" * 201),
    _bad("name", every="1h", name="ctl\x01x"),
    ("valid", {"agent": "w", "prompt": "hi", "cron": "0\t9  * *\u00a01-5 ", "tz": "Europe/Paris"}, OK),
]


def _with_regressions(test: Any) -> Any:
    for case in reversed(REGRESSIONS):
        test = example(case=case)(test)
    return test


@_with_regressions
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(case=_cases())
def test_schedule_add_refuses_every_bad_parameter_naming_it(served: Served, case: tuple[str, dict[str, Any], Expect]) -> None:
    kind, params, expect = case
    served.figures[kind] = served.figures.get(kind, 0) + 1
    c = served.conn
    answer = c.call("schedule.add", params)
    try:
        if expect.code == 0:
            assert "result" in answer, f"a valid schedule refused: {answer.get('error')}"
            shown = answer["result"]
            served.stored.append(shown["id"])
            _check_accepted(params, shown)
            assert c.call("schedule.remove", {"schedule": str(shown["id"])})["result"] == {"removed": shown["id"]}
        else:
            assert "error" in answer, f"accepted, but should have been refused: {answer.get('result')}"
            error = answer["error"]
            assert error["code"] == expect.code, error
            if expect.fields:
                assert _names_field(error["message"], expect.fields), f"the message names none of {expect.fields}: {error['message']!r}"
            assert expect.words in error["message"], error
    except AssertionError as e:
        shown_params = {k: (v[:60] + "..." if isinstance(v, str) and len(v) > 60 else v) for k, v in params.items()}
        raise AssertionError(f"{e}\nparams: {shown_params!r}") from None
    finally:
        # nothing stored but the accepted ones (all removed), and the daemon answers
        listed = c.call("schedule.list", {"all": True})
        assert "result" in listed, f"schedule.list fails after {params!r:.300}: {listed}"
        assert [s["id"] for s in listed["result"]] == served.stored, f"stored after {params!r:.300}"
        assert all(s["status"] == "removed" for s in listed["result"])
        assert "result" in c.call("daemon.status")
        assert served.daemon.proc is not None and served.daemon.proc.poll() is None
