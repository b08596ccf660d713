"""Lineage and replay: which rows an agent sees, and the Messages they make.

An agent's *lineage* is its own rows plus, if it was forked, its parent's
lineage up to the fork point, recursively. As ranges: the agent itself (every
row), then each ancestor up to the smallest fork point met on the way down.
Ranges are disjoint and each lies wholly above the next one up the chain, so
ordering the lineage by id is ordering it in time.

Replay folds the lineage, from the newest ``clear`` on, into the Messages a
provider request needs: user/assistant/tool_result rows in order, minus the
rows of interrupted turns, with every ``rewind`` cutting the context back to
its mark. The newest ``compaction`` in force then replaces the messages up to
its ``upto`` row with its summary (see fold).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import msgspec
import sqlalchemy as sa

from providers.types import Message, TextBlock

from ._schema import agents, messages
from ._types import MESSAGE_ROLES

# (agent uuid, id of the last row of it the lineage includes; None: all of them)
Range = tuple[str, int | None]

REPLAY_KINDS = frozenset({*MESSAGE_ROLES, "clear", "mark", "rewind", "interrupted", "compaction"})
_CONTROL_KINDS = ("clear", "mark", "rewind", "interrupted", "compaction")
# SQLite's parser nests OR terms: keep each query's chain well under its depth limit
_CHUNK = 100

_MESSAGES = msgspec.json.Decoder(list[Message])
_MESSAGE = msgspec.json.Decoder(Message)

# Opens every compaction summary: the model must know the text is a summary
# standing for turns it no longer sees, not something the user just said.
SUMMARY_PREFIX = (
    "[Summary of the earlier part of this conversation, which was compacted to fit the "
    "context window. The full history is kept outside this context.]\n\n"
)


def summary_message(text: str) -> Message:
    """The message a compaction's summary stands as in the replayed context."""
    return Message(role="user", content=[TextBlock(text=SUMMARY_PREFIX + text)])


def decode_message(text: str) -> Message:
    return _MESSAGE.decode(text)


def decode_messages(texts: Sequence[str]) -> list[Message]:
    """Decode many stored messages in one pass (one JSON array)."""
    if not texts:
        return []
    return _MESSAGES.decode("[" + ",".join(texts) + "]")


def chain_query(uuid: str) -> sa.Select[Any]:
    """The agent and, while each one inherits history, its ancestors, nearest first."""
    a = agents
    base = sa.select(
        a.c.uuid, a.c.parent_uuid, a.c.fork_message_id, sa.literal(0).label("depth")
    ).where(a.c.uuid == uuid)
    chain = base.cte("chain", recursive=True)
    parent = a.alias("parent")
    chain = chain.union_all(
        sa.select(
            parent.c.uuid, parent.c.parent_uuid, parent.c.fork_message_id, chain.c.depth + 1
        ).where(parent.c.uuid == chain.c.parent_uuid, chain.c.fork_message_id.is_not(None))
    )
    return sa.select(chain.c.uuid, chain.c.fork_message_id).order_by(chain.c.depth)


def ranges_from_chain(chain: Iterable[tuple[str, int | None]]) -> tuple[Range, ...]:
    """Chain rows (uuid, fork_message_id), nearest first -> lineage ranges."""
    out: list[Range] = []
    hi: int | None = None
    for uuid, fork in chain:
        out.append((uuid, hi))
        if fork is None:
            break
        hi = fork if hi is None else min(hi, fork)
    return tuple(out)


def in_range(ranges: Sequence[Range], agent_uuid: str, row_id: int) -> bool:
    return any(u == agent_uuid and (hi is None or row_id <= hi) for u, hi in ranges)


def range_cond(ranges: Sequence[Range]) -> sa.ColumnElement[bool]:
    m = messages.c
    terms = [
        (m.agent_uuid == u) if hi is None else sa.and_(m.agent_uuid == u, m.id <= hi)
        for u, hi in ranges
    ]
    return sa.or_(*terms)


def chunks(ranges: Sequence[Range]) -> list[Sequence[Range]]:
    return [ranges[i : i + _CHUNK] for i in range(0, len(ranges), _CHUNK)]


def latest_id(conn: sa.Connection, ranges: Sequence[Range]) -> int | None:
    """The newest row id in the lineage. One index probe per range, nearest
    first (each range lies above the next), so the cost does not grow with
    history length."""
    m = messages.c
    for u, hi in ranges:
        q = sa.select(sa.func.max(m.id)).where(m.agent_uuid == u)
        if hi is not None:
            q = q.where(m.id <= hi)
        found = conn.execute(q).scalar()
        if found is not None:
            return found
    return None


_FLOOR = sa.bindparam("floor", type_=sa.BigInteger())


@functools.lru_cache(maxsize=4096)
def _replay_queries(ranges: tuple[Range, ...]) -> tuple[list[sa.Select[Any]], list[sa.Select[Any]]]:
    """(newest-clear queries, row queries) for a lineage, one per chunk of
    ranges. Built once per lineage: building a 50-term OR costs more than
    running it."""
    m = messages.c
    cols = (
        m.id,
        m.agent_uuid,
        m.kind,
        sa.case((m.kind.in_(_CONTROL_KINDS), m.data), else_=sa.null()).label("data"),
        m.message_json,
    )
    clears = []
    rows = []
    for part in chunks(ranges):
        cond = range_cond(part)
        # the kind as a literal, so SQLite can use the partial index ix_messages_clear
        clears.append(sa.select(sa.func.max(m.id)).where(sa.text("messages.kind = 'clear'"), cond))
        rows.append(
            sa.select(*cols)
            .where(cond, m.kind.in_(sorted(REPLAY_KINDS)), m.id >= _FLOOR)
            .order_by(m.id)
        )
    return clears, rows


def latest_clear(conn: sa.Connection, ranges: tuple[Range, ...]) -> int | None:
    """The newest clear in the lineage."""
    for q in _replay_queries(ranges)[0]:
        found = conn.execute(q).scalar()
        if found is not None:
            return found  # chunks go from the agent up: the first hit is the newest
    return None


def replay_rows(conn: sa.Connection, ranges: tuple[Range, ...]) -> list[Any]:
    """The rows replay needs, oldest first: from the newest clear on, only the
    kinds that matter, data only for control rows."""
    floor = latest_clear(conn, ranges) or 0
    queries = _replay_queries(ranges)[1]
    rows: list[Any] = []
    for q in queries:
        rows.extend(conn.execute(q, {"floor": floor}).all())
    if len(queries) > 1:
        rows.sort(key=lambda r: r[0])
    return rows


class Mark(NamedTuple):
    id: int
    label: str | None
    position: int  # how many messages the context held when it was set


class Compaction(NamedTuple):
    id: int  # the compaction row
    upto: int  # the last row it covers
    text: str  # message_json of its summary message


class Folded(NamedTuple):
    """The context before compaction (what rewinds and marks work on) and the
    compactions that may shorten it: see ``context`` for what replay sends."""

    texts: list[str]  # message_json of each message in the context, uncompacted
    ids: list[int]  # the row each comes from (increasing)
    marks: list[Mark]  # marks one can rewind to, oldest first; uncompacted positions
    compactions: list[Compaction]  # in force (not cleared or rewound away), oldest first

    def applied(self) -> Compaction | None:
        """The compaction replay uses: the newest in force whose upto is in the
        context (one whose upto is not is ignored: that row left the context)."""
        if not self.compactions:
            return None
        where = set(self.ids)
        return next((c for c in reversed(self.compactions) if c.upto in where), None)


class Context(NamedTuple):
    """What replay sends: the summary (if any) and the messages after it."""

    texts: list[str]
    ids: list[int]  # for the summary, the compaction row's id
    summary: bool  # the first text is a compaction summary


def context(folded: Folded) -> Context:
    c = folded.applied()
    if c is None:
        return Context(folded.texts, folded.ids, False)
    keep = folded.ids.index(c.upto) + 1
    return Context([c.text, *folded.texts[keep:]], [c.id, *folded.ids[keep:]], True)


def fold(rows: Sequence[tuple[Any, ...]]) -> Folded:
    """Rows (id, agent_uuid, kind, data, message_json), oldest first -> context."""
    # rows of interrupted turns: [turn_start, interrupted row) of that agent
    cut: dict[str, list[tuple[int, int]]] = {}
    for rid, agent, kind, data, _ in rows:
        if kind == "interrupted" and data and isinstance(data.get("turn_start"), int):
            cut.setdefault(agent, []).append((data["turn_start"], rid))

    texts: list[str] = []
    ids: list[int] = []
    marks: list[Mark] = []
    compactions: list[Compaction] = []
    for rid, agent, kind, data, text in rows:
        if kind in MESSAGE_ROLES:
            if cut:
                spans = cut.get(agent)
                if spans and any(lo <= rid < hi for lo, hi in spans):
                    continue
            texts.append(text)
            ids.append(rid)
        elif kind == "clear":
            texts.clear()
            ids.clear()
            marks.clear()
            compactions.clear()
        elif kind == "mark":
            marks.append(Mark(rid, data.get("label") if data else None, len(texts)))
        elif kind == "rewind":
            target = data.get("mark_id") if data else None
            for i, mk in enumerate(marks):
                if mk.id == target:
                    del texts[mk.position :]
                    del ids[mk.position :]
                    del marks[i + 1 :]  # marks set after it are gone; it stays
                    # back to before a compaction: the messages it covered return
                    compactions[:] = [c for c in compactions if c.id < mk.id]
                    break
        elif kind == "compaction":
            upto = data.get("upto") if data else None
            if isinstance(upto, int) and text:
                compactions.append(Compaction(rid, upto, text))
    return Folded(texts, ids, marks, compactions)


def find_mark(marks: Sequence[Mark], label: str | None) -> Mark | None:
    """The newest mark with this label (any label when None)."""
    for mk in reversed(marks):
        if label is None or mk.label == label:
            return mk
    return None
