"""``--format TEMPLATE`` of ``ls`` and ``show``: one line of text per agent
from its ``--json`` keys, for scripts that would otherwise need jq.

The template is user input, so it is parsed here by a grammar of its own,
never handed to ``str.format`` (whose ``{0.__class__}`` and ``{x[0]}`` reach
into objects): ``{name}`` or a dotted path ``{usage.cost_usd}`` into nested
keys, ``{{`` and ``}}`` for braces, ``\\t``, ``\\n`` and ``\\\\`` escapes.
"""

from __future__ import annotations

import json
import re

from ikictl._errors import UsageError
from ikictl.render import safe_line

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_ESCAPES = {"t": "\t", "n": "\n", "\\": "\\"}
_HINT = "(a field is a key or a dotted path such as {usage.cost_usd}; {{ and }} print braces)"


class Template:
    """A parsed template: literal text and field paths, in order."""

    def __init__(self, text: str) -> None:
        self.parts: list[str | tuple[str, ...]] = _parse(text)

    @property
    def fields(self) -> list[str]:
        return [".".join(p) for p in self.parts if isinstance(p, tuple)]

    def render(self, row: Mapping[str, Any]) -> str:
        out = []
        for part in self.parts:
            out.append(part if isinstance(part, str) else safe_line(value_text(_get(row, part))))
        return "".join(out)

    def render_all(self, rows: list[Any], kind: str) -> str:
        """One line per row; a field no row and no ``kind`` (the result type
        in protocol.results) has is refused, listing the ones there are."""
        known = known_fields(kind)
        for row in rows:
            known |= set(_paths(row))
        unknown = [f for f in self.fields if f not in known]
        if unknown:
            leaves = sorted(f for f in known if not any(k.startswith(f + ".") for k in known))
            raise UsageError(
                f"--format: unknown field {{{unknown[0]}}}; the fields are: {', '.join(leaves)}"
            )
        return "".join(self.render(r) + "\n" for r in rows)


def _parse(text: str) -> list[str | tuple[str, ...]]:
    parts: list[str | tuple[str, ...]] = []
    lit: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in _ESCAPES:
            lit.append(_ESCAPES[text[i + 1]])
            i += 2
        elif c in "{}" and text.startswith(c * 2, i):
            lit.append(c)
            i += 2
        elif c == "}":
            raise UsageError(f"--format: a single }} at offset {i}; write }}}} for a brace {_HINT}")
        elif c == "{":
            end = text.find("}", i + 1)
            if end < 0:
                raise UsageError(f"--format: the {{ at offset {i} is not closed {_HINT}")
            name = text[i + 1 : end]
            if not _PATH.fullmatch(name):
                shown = safe_line(name[:40])
                raise UsageError(f"--format: {{{shown}}} is not a field {_HINT}")
            if lit:
                parts.append("".join(lit))
                lit = []
            parts.append(tuple(name.split(".")))
            i = end + 1
        else:
            lit.append(c)
            i += 1
    if lit:
        parts.append("".join(lit))
    return parts


def _get(row: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path``; None when a key on the way is missing or null."""
    at = row
    for key in path:
        if not isinstance(at, dict):
            return None
        at = at.get(key)
    return at


def value_text(v: Any) -> str:
    """A value as a script wants it: null is empty, numbers plain (no
    exponent, no trailing .0), lists comma-joined, objects as JSON."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return plain_float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return ",".join(value_text(x) for x in v)
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def plain_float(x: float) -> str:
    """``0.00012`` not ``1.2e-04``, ``3`` not ``3.0``: the shortest digits
    that read back as ``x`` (repr's), written out in full."""
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    from decimal import Decimal

    text = format(Decimal(repr(x)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _paths(row: Any, prefix: str = "") -> Iterable[str]:
    if not isinstance(row, dict):
        return
    for k, v in row.items():
        path = f"{prefix}{k}"
        yield path
        yield from _paths(v, path + ".")


def known_fields(kind: str) -> set[str]:
    """Every path of the result type ``kind`` (a TypedDict of protocol.results),
    so a field an agent lacks now (``last_turn`` of a new one) is not refused."""
    import typing

    from protocol import results

    def walk(t: Any, prefix: str) -> Iterable[str]:
        for k, sub in typing.get_type_hints(t).items():
            yield prefix + k
            for arg in (sub, *typing.get_args(sub)):
                if typing.is_typeddict(arg):
                    yield from walk(arg, f"{prefix}{k}.")

    root = getattr(results, kind, None)
    return set(walk(root, "")) if root is not None and typing.is_typeddict(root) else set()
