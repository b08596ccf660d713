"""When a schedule is due: a cron expression in a time zone, an interval, or
once. Pure: text and datetimes in, aware UTC datetimes out; no I/O, no clock.

Cron expressions are parsed and walked by ``cronsim`` (five fields, the
syntax of Debian's cron), in the schedule's zone from ``zoneinfo``. Across a
daylight-saving change it does what Debian's cron does (cronsim's README):
a time that does not exist (the hour skipped in spring) fires at the first
moment after the gap; a time that exists twice (the hour repeated in autumn)
fires once, at its first occurrence, for an expression naming that hour;
``*``-hour expressions fire in both occurrences, since each is a time the
expression matches. Intervals (``every``) count from the schedule's creation
in UTC, so they ignore daylight-saving changes: every 1h is every 3,600 s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

__all__ = [
    "MAX_CATCH_UP",
    "Rule",
    "RuleError",
    "due_times",
    "local_zone",
    "parse_at",
    "parse_duration",
    "parse_zone",
]

Kind = Literal["cron", "every", "at"]
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MIN_EVERY = 60  # seconds; less needs allow_fast
MAX_DURATION = 366 * 86400  # a year and a day: longer is a typo more often than a plan
# missed: "all" fires at most this many missed due times; older ones are skipped
MAX_CATCH_UP = 10
_PART = re.compile(r"(\d{1,9})([smhd])")


class RuleError(ValueError):
    """A bad schedule parameter: ``field`` names it, the message says what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def parse_duration(field: str, text: str) -> int:
    """Seconds of ``90s``, ``10m``, ``1h30m``, ``2d``..."""
    t = text.strip().lower().replace(" ", "")
    total, pos = 0, 0
    for m in _PART.finditer(t):
        if m.start() != pos:
            break
        total += int(m.group(1)) * UNITS[m.group(2)]
        pos = m.end()
    if not t or pos != len(t):
        hint = " (a unit is needed)" if t.isdigit() else ""
        raise RuleError(
            field,
            f"{text!r} is not a duration{hint}: give numbers with units s, m, h or d, "
            "such as 90s, 10m, 1h30m or 2d",
        )
    if total <= 0:
        raise RuleError(field, f"{text!r} is zero: give a duration of at least 1s")
    if total > MAX_DURATION:
        raise RuleError(field, f"{text!r} is over a year: give at most 366d")
    return total


def local_zone() -> str:
    """The IANA name of this machine's zone ($TZ, else /etc/localtime), else UTC."""
    import os

    name = os.environ.get("TZ", "").lstrip(":")
    if not name:
        try:
            target = os.path.realpath("/etc/localtime")
            name = target.split("/zoneinfo/", 1)[1] if "/zoneinfo/" in target else ""
        except OSError:
            name = ""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC"
    return name


def parse_zone(text: str) -> ZoneInfo:
    name = text.strip()
    try:
        if not name or name.startswith("/") or ".." in name:
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        near = sorted(z for z in available_timezones() if z.lower().endswith(name.lower()[-6:]))
        hint = f" (did you mean {', '.join(near[:3])}?)" if near and name else ""
        raise RuleError(
            "tz", f"unknown time zone {text!r}{hint}: give an IANA name such as Europe/Paris"
        ) from None


def parse_at(text: str, zone: ZoneInfo) -> datetime:
    """An ISO 8601 date-time; without an offset it is a wall time in ``zone``."""
    t = text.strip()
    try:
        if "\x00" in t:  # fromisoformat takes "2026-12-01T09:00\x00" (CPython 3.11)
            raise ValueError(t)
        when = datetime.fromisoformat(t[:-1] + "+00:00" if t.endswith(("Z", "z")) else t)
    except ValueError:
        raise RuleError(
            "at", f"{text!r} is not a date and time: give one such as 2026-12-01T09:00"
        ) from None
    try:
        if when.tzinfo is None:
            when = when.replace(tzinfo=zone)
        utc = when.astimezone(UTC)
        utc.astimezone(zone)  # describe() shows it in the zone: it must exist there too
    except OverflowError:  # the year 1 or 9999 shifted by an offset
        raise RuleError("at", f"{text!r} is out of the range of dates") from None
    return utc


def check_cron(expr: str, zone: ZoneInfo) -> str:
    from cronsim import CronSim, CronSimError

    text = " ".join(expr.split())
    fields = len(text.split())
    if fields != 5:  # cronsim also takes a sixth, seconds, field: "* * * * * *" is every second
        raise RuleError(
            "cron",
            f"{expr!r} is not a cron expression ({fields} fields): give five fields, minute "
            "hour day-of-month month day-of-week, such as '0 9 * * 1-5'",
        )
    try:
        CronSim(text, datetime.now(zone))
    except (CronSimError, ValueError, KeyError, IndexError) as e:
        raise RuleError(
            "cron",
            f"{expr!r} is not a cron expression ({e}): give five fields, minute hour "
            "day-of-month month day-of-week, such as '0 9 * * 1-5'",
        ) from None
    return text


@dataclass(frozen=True)
class Rule:
    """A schedule's time rule, as stored (``to_json``) in ``schedules.rule``."""

    kind: Kind
    tz: str
    anchor: datetime  # UTC: an interval counts from here
    cron: str | None = None
    every: int | None = None  # seconds
    at: datetime | None = None  # UTC

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tz": self.tz,
            "anchor": self.anchor.isoformat(),
            "cron": self.cron,
            "every": self.every,
            "at": None if self.at is None else self.at.isoformat(),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Rule:
        return cls(
            kind=d["kind"],
            tz=d["tz"],
            anchor=datetime.fromisoformat(d["anchor"]),
            cron=d.get("cron"),
            every=d.get("every"),
            at=None if d.get("at") is None else datetime.fromisoformat(d["at"]),
        )

    def describe(self) -> str:
        if self.kind == "cron":
            return f"cron {self.cron} ({self.tz})"
        if self.kind == "every":
            return f"every {format_duration(self.every or 0)}"
        assert self.at is not None
        local = self.at.astimezone(ZoneInfo(self.tz)).replace(tzinfo=None)
        return f"once at {local.isoformat(timespec='minutes')} ({self.tz})"

    def next_after(self, after: datetime) -> datetime | None:
        """The first due time strictly after ``after`` (aware); None: no more."""
        if self.kind == "at":
            assert self.at is not None
            return self.at if self.at > after else None
        if self.kind == "every":
            assert self.every is not None
            step = timedelta(seconds=self.every)
            if after < self.anchor:
                return self.anchor + step
            k = (after - self.anchor) // step + 1  # exact: timedelta // timedelta is an int
            return self.anchor + k * step
        from cronsim import CronSim

        assert self.cron is not None
        times = CronSim(self.cron, after.astimezone(ZoneInfo(self.tz)))
        # cronsim walks a fixed-time expression in wall time, dropping the
        # fold: from the second pass of a repeated hour (02:10+01:00) it
        # gives the first pass's 02:30+02:00, before ``after``, which fired
        # (or was not yet owed) an hour ago; the next one after that is right
        while (when := next(times, None)) is not None and when.astimezone(UTC) <= after:
            pass
        return None if when is None else when.astimezone(UTC)


def format_duration(seconds: int) -> str:
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts) or "0s"


def due_times(rule: Rule, first: datetime, now: datetime, limit: int) -> tuple[list[datetime], int]:
    """The due times from ``first`` (itself due) up to ``now``, at most
    ``limit`` of the newest, and how many older ones there were beyond them."""
    found: list[datetime] = []
    extra = 0
    when: datetime | None = first
    while when is not None and when <= now:
        found.append(when)
        if len(found) > limit:
            found.pop(0)
            extra += 1
        when = rule.next_after(when)
    return found, extra


def make_rule(
    *,
    cron: str | None,
    every: str | None,
    at: str | None,
    in_: str | None,
    tz: str | None,
    now: datetime,
    allow_fast: bool,
) -> Rule:
    """The rule of schedule.add's params; RuleError naming the bad one."""
    # an empty text is given too: refused as what it is, not as a missing rule
    given = [
        n for n, v in (("cron", cron), ("every", every), ("at", at), ("in", in_)) if v is not None
    ]
    if len(given) != 1:
        raise RuleError(
            "cron" if not given else given[1],
            "give exactly one of cron, every, at or in"
            + ("" if not given else f" (not {' and '.join(given)})"),
        )
    zone_name = local_zone() if tz is None else tz.strip()
    zone = parse_zone(zone_name)
    zone_name = str(zone.key)
    if cron is not None:
        return Rule("cron", zone_name, now, cron=check_cron(cron, zone))
    if every is not None:
        seconds = parse_duration("every", every)
        if seconds < MIN_EVERY and not allow_fast:
            raise RuleError(
                "every",
                f"{every} is under 1 minute: give allow_fast (ikictl: --allow-fast) to allow it",
            )
        return Rule("every", zone_name, now, every=seconds)
    if at is not None:
        when = parse_at(at, zone)
        if when <= now:
            raise RuleError(
                "at", f"{at} is in the past (now is {now.isoformat(timespec='seconds')})"
            )
        return Rule("at", zone_name, now, at=when)
    assert in_ is not None
    return Rule("at", zone_name, now, at=now + timedelta(seconds=parse_duration("in", in_)))
