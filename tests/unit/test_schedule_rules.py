"""When a schedule is due (agents/schedules/rules.py): cron in a named zone
across daylight-saving changes both ways, intervals that ignore them,
one-shots, the catch-up window, and the parsing of every parameter, each
error naming its field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.schedules.rules import (
    MAX_DURATION,
    MIN_EVERY,
    Rule,
    RuleError,
    due_times,
    format_duration,
    make_rule,
    parse_at,
    parse_duration,
    parse_zone,
)

PARIS = "Europe/Paris"
NEW_YORK = "America/New_York"
# 2026's changes: Paris 02:00 CET -> 03:00 CEST on 29 March (01:00Z), 03:00
# CEST -> 02:00 CET on 25 October (01:00Z); New York 02:00 EST -> 03:00 EDT
# on 8 March (07:00Z), 02:00 EDT -> 01:00 EST on 1 November (06:00Z)
ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def cron(expr: str, tz: str) -> Rule:
    return Rule("cron", tz, ANCHOR, cron=expr)


def walk(rule: Rule, start: datetime, n: int) -> list[datetime]:
    """The next ``n`` due times after ``start``, each checked aware UTC and later than the last."""
    out: list[datetime] = []
    when: datetime | None = start
    for _ in range(n):
        assert when is not None
        nxt = rule.next_after(when)
        assert nxt is not None and nxt.tzinfo is UTC and nxt > when
        out.append(nxt)
        when = nxt
    return out


def local(when: datetime, tz: str) -> str:
    return when.astimezone(ZoneInfo(tz)).isoformat()


# ---------------------------------------------------------------- cron and DST


def test_paris_spring_a_time_in_the_skipped_hour_fires_once_right_after_the_gap():
    got = walk(cron("30 2 * * *", PARIS), utc(2026, 3, 27, 12), 3)
    assert got == [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1), utc(2026, 3, 30, 0, 30)]
    assert local(got[1], PARIS) == "2026-03-29T03:00:00+02:00"


def test_several_times_in_the_skipped_hour_still_fire_once():
    got = walk(cron("0,15,30,45 2 * * *", PARIS), utc(2026, 3, 28, 12), 2)
    assert got == [utc(2026, 3, 29, 1), utc(2026, 3, 30, 0)]


def test_paris_autumn_a_time_in_the_repeated_hour_fires_once_at_its_first_pass():
    got = walk(cron("30 2 * * *", PARIS), utc(2026, 10, 24, 12), 2)
    assert got == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]
    assert local(got[0], PARIS) == "2026-10-25T02:30:00+02:00"


@pytest.mark.parametrize("minutes", [45, 60, 70, 90])
def test_from_inside_the_repeated_hour_a_fixed_time_is_not_given_again(minutes):
    # 02:10+01:00 (the second pass) is after 02:30+02:00 (the first): that one
    # is past, so the next is tomorrow's, never a time before ``after``
    after = utc(2026, 10, 25, 0) + timedelta(minutes=minutes)
    assert cron("30 2 * * *", PARIS).next_after(after) == utc(2026, 10, 26, 1, 30)
    after = utc(2026, 11, 1, 5) + timedelta(minutes=minutes)
    assert cron("30 1 * * *", NEW_YORK).next_after(after) == utc(2026, 11, 2, 6, 30)


def test_every_half_hour_fires_in_both_passes_of_the_repeated_hour():
    got = walk(cron("*/30 * * * *", PARIS), utc(2026, 10, 24, 23, 45), 6)
    assert got == [utc(2026, 10, 25, 0, 0) + timedelta(minutes=30 * i) for i in range(6)]
    assert [local(t, PARIS)[11:] for t in got[:4]] == [
        "02:00:00+02:00",
        "02:30:00+02:00",
        "02:00:00+01:00",
        "02:30:00+01:00",
    ]


def test_every_half_hour_steps_over_the_skipped_hour():
    got = walk(cron("*/30 * * * *", PARIS), utc(2026, 3, 29, 0, 15), 3)
    assert got == [utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1), utc(2026, 3, 29, 1, 30)]
    assert [local(t, PARIS)[11:16] for t in got] == ["01:30", "03:00", "03:30"]


def test_new_york_both_changes():
    spring = walk(cron("30 2 * * *", NEW_YORK), utc(2026, 3, 7, 12), 2)
    assert spring == [utc(2026, 3, 8, 7), utc(2026, 3, 9, 6, 30)]
    autumn = walk(cron("30 1 * * *", NEW_YORK), utc(2026, 10, 31, 12), 2)
    assert autumn == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]
    hourly = walk(cron("15 * * * *", NEW_YORK), utc(2026, 11, 1, 4, 30), 3)
    assert [local(t, NEW_YORK)[11:] for t in hourly] == [
        "01:15:00-04:00",
        "01:15:00-05:00",
        "02:15:00-05:00",
    ]


def test_a_nine_o_clock_job_keeps_local_time_across_the_change():
    got = walk(cron("0 9 * * 1-5", PARIS), utc(2026, 3, 26, 12), 3)
    assert got == [utc(2026, 3, 27, 8), utc(2026, 3, 30, 7), utc(2026, 3, 31, 7)]


# ---------------------------------------------------------------- every, at


def test_every_ignores_daylight_saving_exact_seconds_from_the_anchor():
    anchor = utc(2026, 10, 24, 22, 0, 7)
    rule = Rule("every", PARIS, anchor, every=3600)
    got = walk(rule, anchor, 6)
    assert got == [anchor + timedelta(hours=k) for k in range(1, 7)]
    assert rule.next_after(anchor - timedelta(days=3)) == anchor + timedelta(hours=1)
    assert rule.next_after(got[2]) == got[3]  # a due time is not due again
    assert rule.next_after(got[2] - timedelta(microseconds=1)) == got[2]


def test_at_fires_once():
    at = utc(2026, 12, 1, 8)
    rule = Rule("at", PARIS, ANCHOR, at=at)
    assert rule.next_after(ANCHOR) == at
    assert rule.next_after(at) is None
    assert rule.next_after(at + timedelta(days=1)) is None


# ---------------------------------------------------------------- due_times


def test_due_times_keeps_the_newest_and_counts_the_older():
    rule = Rule("every", "UTC", ANCHOR, every=60)
    first = ANCHOR + timedelta(minutes=1)
    now = ANCHOR + timedelta(minutes=25, seconds=30)
    found, older = due_times(rule, first, now, 10)
    assert found == [ANCHOR + timedelta(minutes=m) for m in range(16, 26)]
    assert older == 15
    assert due_times(rule, first, now, 1) == ([ANCHOR + timedelta(minutes=25)], 24)
    assert due_times(rule, first, first, 10) == ([first], 0)
    assert due_times(rule, first, first - timedelta(seconds=1), 10) == ([], 0)


def test_due_times_of_a_one_shot_ends():
    at = utc(2026, 5, 1)
    rule = Rule("at", "UTC", ANCHOR, at=at)
    assert due_times(rule, at, at + timedelta(days=30), 10) == ([at], 0)


def test_due_times_across_the_repeated_hour_counts_both_passes():
    rule = cron("*/30 * * * *", PARIS)
    found, older = due_times(rule, utc(2026, 10, 25, 0), utc(2026, 10, 25, 2), 3)
    assert found == [utc(2026, 10, 25, 1), utc(2026, 10, 25, 1, 30), utc(2026, 10, 25, 2)]
    assert older == 2


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("10m", 600),
        ("1h30m", 5400),
        ("2d", 172800),
        ("1h 30m", 5400),
        ("1H", 3600),
        ("366d", MAX_DURATION),
    ],
)
def test_durations(text, seconds):
    assert parse_duration("every", text) == seconds


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("10", "a unit is needed"),
        ("", "not a duration"),
        ("m", "not a duration"),
        ("1x", "not a duration"),
        ("-5m", "not a duration"),
        ("5m-", "not a duration"),
        ("1.5h", "not a duration"),
        ("0s", "zero"),
        ("0h0m", "zero"),
        ("367d", "over a year"),
    ],
)
def test_bad_durations_name_their_field(text, wanted):
    with pytest.raises(RuleError) as e:
        parse_duration("in", text)
    assert e.value.field == "in" and str(e.value).startswith("in: ") and wanted in str(e.value)


@given(st.integers(1, MAX_DURATION))
def test_durations_round_trip_through_their_format(seconds):
    assert parse_duration("every", format_duration(seconds)) == seconds


@given(st.lists(st.tuples(st.integers(0, 400), st.sampled_from("smhd")), min_size=1, max_size=5))
def test_a_duration_is_the_sum_of_its_parts(parts):
    text = "".join(f"{n}{u}" for n, u in parts)
    total = sum(n * {"s": 1, "m": 60, "h": 3600, "d": 86400}[u] for n, u in parts)
    if 0 < total <= MAX_DURATION:
        assert parse_duration("every", text) == total
    else:
        with pytest.raises(RuleError, match=r"^every: "):
            parse_duration("every", text)


@given(st.text(max_size=20))
def test_any_text_is_a_duration_in_range_or_an_error_naming_the_field(text):
    try:
        seconds = parse_duration("every", text)
    except RuleError as e:
        assert e.field == "every" and str(e).startswith("every: ")
    else:
        assert 1 <= seconds <= MAX_DURATION


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("2026-12-01T09:00", utc(2026, 12, 1, 8)),
        ("2026-12-01 09:00", utc(2026, 12, 1, 8)),
        ("2026-07-01T09:00:30", utc(2026, 7, 1, 7, 0, 30)),  # summer: +02:00
        ("2026-12-01T09:00Z", utc(2026, 12, 1, 9)),
        ("2026-12-01T09:00:00z", utc(2026, 12, 1, 9)),
        ("2026-12-01T09:00+05:30", utc(2026, 12, 1, 3, 30)),
        ("2026-12-01T09:00-04:00", utc(2026, 12, 1, 13)),
        # zoneinfo's fold=0: the repeated hour's first pass, and a time in the
        # gap read with the offset before it (so 02:30 is 03:30 CEST)
        ("2026-10-25T02:30", utc(2026, 10, 25, 0, 30)),
        ("2026-03-29T02:30", utc(2026, 3, 29, 1, 30)),
    ],
)
def test_at_times(text, wanted):
    got = parse_at(text, ZoneInfo(PARIS))
    assert got == wanted and got.tzinfo is UTC


@pytest.mark.parametrize("text", ["tomorrow", "", "2026-13-01T09:00", "09:00", "2026-12-01T25:00"])
def test_bad_at_times_name_their_field(text):
    with pytest.raises(RuleError, match=r"^at: ") as e:
        parse_at(text, ZoneInfo(PARIS))
    assert e.value.field == "at"


@pytest.mark.parametrize("name", ["Mars/Base", "", "../etc/passwd", "/etc/localtime", "Europe/"])
def test_unknown_zones_name_their_field(name):
    with pytest.raises(RuleError, match=r"^tz: unknown time zone") as e:
        parse_zone(name)
    assert e.value.field == "tz"


def test_a_zone_hint():
    with pytest.raises(RuleError, match=r"did you mean.*Europe/Paris"):
        parse_zone("Paris")


# ---------------------------------------------------------------- make_rule

NOW = utc(2026, 6, 1, 12)


def make(**kw: object) -> Rule:
    args: dict[str, object] = {"cron": None, "every": None, "at": None, "in_": None, "tz": PARIS}
    args.update(kw)
    return make_rule(now=NOW, allow_fast=bool(args.pop("allow_fast", False)), **args)  # type: ignore[arg-type]


def test_make_rule_of_each_kind():
    r = make(cron="0  9 * *   1-5")
    assert (r.kind, r.cron, r.tz, r.anchor) == ("cron", "0 9 * * 1-5", PARIS, NOW)
    assert r.describe() == "cron 0 9 * * 1-5 (Europe/Paris)"
    r = make(every="1h30m")
    assert (r.kind, r.every, r.describe()) == ("every", 5400, "every 1h30m")
    assert r.next_after(NOW) == NOW + timedelta(minutes=90)
    r = make(at="2026-12-01T09:00")
    assert (r.kind, r.at) == ("at", utc(2026, 12, 1, 8))
    assert r.describe() == "once at 2026-12-01T09:00 (Europe/Paris)"
    r = make(in_="2h")
    assert (r.kind, r.at) == ("at", NOW + timedelta(hours=2))
    assert make(every="30s", allow_fast=True).every == 30


def test_a_rule_round_trips_through_its_json():
    for r in (make(cron="*/5 * * * *"), make(every="10m"), make(at="2026-12-01T09:00Z")):
        assert Rule.from_json(r.to_json()) == r


def test_the_default_zone_is_the_local_one(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert make(cron="0 9 * * *", tz=None).tz == "Asia/Tokyo"
    monkeypatch.setenv("TZ", "Nowhere/Atall")
    assert make(cron="0 9 * * *", tz=None).tz == "UTC"


@pytest.mark.parametrize(
    ("kw", "field", "wanted"),
    [
        ({}, "cron", "exactly one of"),
        ({"cron": "0 9 * * *", "every": "10m"}, "every", "not cron and every"),
        ({"at": "2026-12-01T09:00", "in_": "2h"}, "in", "not at and in"),
        ({"cron": "0 9 * *"}, "cron", "not a cron expression"),
        ({"cron": "61 9 * * *"}, "cron", "not a cron expression"),
        ({"cron": "0 9 30 2 *"}, "cron", "not a cron expression"),
        ({"cron": "0 9 * * *", "tz": "Mars/Base"}, "tz", "unknown time zone 'Mars/Base'"),
        ({"every": "30s"}, "every", "under 1 minute"),
        ({"every": "10"}, "every", "a unit is needed"),
        ({"at": "2020-01-01T09:00"}, "at", "in the past"),
        ({"at": "2026-06-01T14:00"}, "at", "in the past"),  # 12:00Z exactly: now is not after now
        ({"at": "soon"}, "at", "not a date and time"),
        ({"in_": "0m"}, "in", "zero"),
    ],
)
def test_make_rule_errors_name_their_field(kw, field, wanted):
    with pytest.raises(RuleError) as e:
        make(**kw)
    assert e.value.field == field
    assert str(e.value).startswith(f"{field}: ") and wanted in str(e.value)


def test_the_fastest_interval_allowed_without_allow_fast():
    assert make(every=f"{MIN_EVERY}s").every == MIN_EVERY


# ---------------------------------------------------------------- properties

ZONES = [
    "UTC",
    PARIS,
    NEW_YORK,
    "Europe/London",
    "Australia/Lord_Howe",  # a half-hour change
    "Australia/Sydney",
    "America/Santiago",
    "Pacific/Chatham",
    "Asia/Kolkata",
]
# instants near the 2026 changes of those zones, and one quiet one
CHANGES = [
    utc(2026, 3, 29, 1),
    utc(2026, 10, 25, 1),
    utc(2026, 3, 8, 7),
    utc(2026, 11, 1, 6),
    utc(2026, 4, 4, 15),
    utc(2026, 10, 3, 15),
    utc(2026, 4, 5, 3),
    utc(2026, 9, 6, 4),
    utc(2026, 6, 15, 12),
]


def _field(lo: int, hi: int) -> st.SearchStrategy[str]:
    one = st.integers(lo, hi).map(str)
    span = st.tuples(st.integers(lo, hi), st.integers(lo, hi)).map(lambda t: f"{min(t)}-{max(t)}")
    step = st.integers(1, hi - lo + 1).map(lambda n: f"*/{n}")
    items = st.lists(st.one_of(one, span), min_size=1, max_size=3).map(",".join)
    return st.one_of(st.just("*"), step, items)


CRONS = st.tuples(
    _field(0, 59),
    _field(0, 23),
    st.one_of(st.just("*"), st.integers(1, 28).map(str), st.just("1,15")),
    st.one_of(st.just("*"), st.sampled_from(["3,10", "*/2", "1-6", "11"])),
    st.one_of(st.just("*"), st.sampled_from(["1-5", "0", "6,0", "*/2"])),
).map(" ".join)
INSTANTS = st.builds(
    lambda base, minutes, seconds: base + timedelta(minutes=minutes, seconds=seconds),
    st.sampled_from(CHANGES),
    st.integers(-3 * 1440, 3 * 1440),
    st.integers(0, 59),
)


@settings(max_examples=300, deadline=None)
@given(CRONS, st.sampled_from(ZONES), INSTANTS, st.floats(0, 1, exclude_max=True))
def test_cron_next_is_strictly_after_and_nothing_is_due_in_between(expr, zone, after, frac):
    rule = cron(expr, zone)
    nxt = rule.next_after(after)
    assert nxt is not None and nxt.tzinfo is UTC and nxt > after
    # any instant before that due time has that same next due time: none is
    # skipped, and the answer never goes back in time
    between = min(after + (nxt - after) * frac, nxt - timedelta(microseconds=1))  # rounded
    assert rule.next_after(between) == nxt
    # and the chain from it keeps going forward
    walk(rule, nxt, 5)


@settings(max_examples=300, deadline=None)
@given(CRONS, st.sampled_from(ZONES), INSTANTS, INSTANTS)
def test_cron_next_is_monotone(expr, zone, a, b):
    rule = cron(expr, zone)
    a, b = min(a, b), max(a, b)
    na, nb = rule.next_after(a), rule.next_after(b)
    assert na is not None and nb is not None and na <= nb


@given(
    st.integers(1, 7 * 86400),
    st.integers(-10 * 86400 * 366, 10 * 86400 * 366),
    st.integers(0, 999_999),
)
def test_every_is_the_first_multiple_of_its_step_after(step, offset, micros):
    rule = Rule("every", PARIS, ANCHOR, every=step)
    after = ANCHOR + timedelta(seconds=offset, microseconds=micros)
    nxt = rule.next_after(after)
    assert nxt is not None and nxt > after and nxt.tzinfo is UTC
    k, rest = divmod(nxt - ANCHOR, timedelta(seconds=step))
    assert rest == timedelta(0) and k >= 1
    assert nxt - timedelta(seconds=step) <= max(after, ANCHOR)
