"""Messages: appending history rows, and reading them back (raw history, or
folded into the Messages a provider request needs; see _replay.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import sqlalchemy as sa

from providers.types import Message, Usage

from . import _replay
from ._base import AgentLookup, StoreBase
from ._blobs import restore_texts
from ._errors import InvalidEntry, NoSuchMark, StoreError
from ._rows import Prepared, message_record, message_rows, plain, usage_dict
from ._schema import messages
from ._turns import turn_closed
from ._types import APPENDABLE, KINDS, MESSAGE_ROLES, Entry, MessageRecord, Replayed

_ENCODE = msgspec.json.encode


class MessagesMixin(StoreBase):
    """Store methods for history rows (see the module doc)."""

    # ------------------------------------------------------------ writing

    def append(
        self,
        agent_uuid: str,
        kind: str,
        content: str | None = None,
        data: dict[str, Any] | None = None,
        *,
        message: Message | None = None,
    ) -> MessageRecord:
        """Append one row, committed when this returns. user, assistant and
        tool_result take a ``message``; an assistant message also writes one
        tool_call row per tool call (returned by append_many, not here)."""
        return self.append_many(
            agent_uuid, [Entry(kind=kind, content=content, data=data, message=message)]
        )[0]

    def append_many(
        self, agent_uuid: str, entries: Sequence[Entry], *, end_turn: bool = False
    ) -> list[MessageRecord]:
        """Append rows that land together or not at all (one transaction), e.g.
        a whole batch of tool results. Returns every row written, in order.
        ``end_turn``: these are the running turn's last rows (see _turns.py)."""
        if not entries:
            return []
        with self._write() as conn:
            # the agent's row only when a row needs one of its columns (an
            # assistant message without its model, a usage row): the INSERT's
            # foreign key already refuses an unknown agent
            agent = AgentLookup(self, conn, agent_uuid)
            prepared: list[Prepared] = []
            try:
                for e in entries:
                    prepared.extend(self._prepare(conn, agent_uuid, agent, e))
            except StoreError:
                if any(e.kind in ("assistant", "usage") for e in entries):
                    agent.row()  # an unknown agent is named before a bad entry, as ever
                raise
            written = self._insert(conn, agent_uuid, prepared)
            if end_turn:
                turn_closed(conn, agent_uuid)
            return written

    def append_user(self, agent_uuid: str, message: Message) -> MessageRecord:
        """One user row."""
        return self.append(agent_uuid, "user", message=message)

    def append_assistant(
        self,
        agent_uuid: str,
        message: Message,
        *,
        usage: Usage | None = None,
        finish_reason: str | None = None,
        data: dict[str, Any] | None = None,
        end_turn: bool = False,
    ) -> list[MessageRecord]:
        """The assistant row (provider, model, thinking level and text,
        finish_reason, usage in data) and one tool_call row per tool call."""
        extra = dict(data or {})
        if usage is not None:
            extra["usage"] = usage
        if finish_reason is not None:
            extra["finish_reason"] = finish_reason
        entry = Entry(kind="assistant", data=extra, message=message)
        return self.append_many(agent_uuid, [entry], end_turn=end_turn)

    def append_tool_results(
        self, agent_uuid: str, message: Message, *, end_turn: bool = False
    ) -> MessageRecord:
        """One tool_result row holding the tool-role Message with every result."""
        entry = Entry(kind="tool_result", message=message)
        return self.append_many(agent_uuid, [entry], end_turn=end_turn)[0]

    def record_usage(
        self,
        agent_uuid: str,
        usage: Usage,
        *,
        provider: str | None = None,
        model: str | None = None,
        note: str = "",
    ) -> MessageRecord:
        """Tokens spent without an assistant message (a cancelled stream...)."""
        data: dict[str, Any] = {"usage": usage}
        if provider is not None:
            data["provider"] = provider
        if model is not None:
            data["model"] = model
        return self.append(agent_uuid, "usage", note, data)

    def clear(self, agent_uuid: str) -> MessageRecord:
        """The context starts empty after this row (history keeps everything)."""
        return self.append(agent_uuid, "clear", "")

    def mark(self, agent_uuid: str, label: str | None = None) -> MessageRecord:
        """A checkpoint rewind() can return to."""
        return self.append(agent_uuid, "mark", label or "", {"label": label})

    def rewind(self, agent_uuid: str, label: str | None = None) -> MessageRecord:
        """Return the context to the newest mark with this label (the newest
        mark when None). NoSuchMark if the current context has none."""
        with self._write() as conn:
            folded = self._fold(conn, agent_uuid)
            mk = _replay.find_mark(folded.marks, label)
            if mk is None:
                what = "no mark" if label is None else f"no mark labelled {label!r}"
                raise NoSuchMark(f"agent {agent_uuid} has {what} in its current context")
            return self._insert(
                conn,
                agent_uuid,
                [Prepared("rewind", label or "", {"mark_id": mk.id, "label": label})],
            )[0]

    def compact(
        self,
        agent_uuid: str,
        *,
        upto: int,
        summary: str,
        data: dict[str, Any] | None = None,
        usage: Usage | None = None,
        provider: str | None = None,
        model: str | None = None,
    ) -> MessageRecord:
        """Replace, in replay, the context up to row ``upto`` with ``summary``
        (history keeps every row). One transaction writes the compaction row
        (data: upto and the caller's ``data``) and, with ``usage``, a usage row
        for the call that wrote the summary (``provider``/``model``: the agent's
        when None). ``upto`` must be a message of the current context, not
        before the upto of the compaction in force. Returns the compaction row."""
        if type(upto) is not int:
            raise InvalidEntry(
                f"compaction of agent {agent_uuid}: upto must be a row id, not {upto!r}"
            )
        if not isinstance(summary, str) or not summary.strip():
            raise InvalidEntry(f"compaction of agent {agent_uuid}: the summary is empty")
        extra = plain(data) or {}
        if "upto" in extra:
            raise InvalidEntry(f"compaction of agent {agent_uuid}: give upto as the argument")
        message = _replay.summary_message(summary)
        try:
            message_json = _ENCODE(message).decode()
        except UnicodeEncodeError:  # lone surrogates: not UTF-8, no database takes it
            raise InvalidEntry(
                f"compaction of agent {agent_uuid}: the summary is not valid unicode"
            ) from None
        with self._write() as conn:
            agent = self._agent_row(conn, agent_uuid)
            folded = self._fold(conn, agent_uuid)
            if upto not in folded.ids:
                raise InvalidEntry(
                    f"compaction of agent {agent_uuid}: row {upto} is not a message "
                    "of its current context"
                )
            in_force = folded.applied()
            if in_force is not None and upto < in_force.upto:
                raise InvalidEntry(
                    f"compaction of agent {agent_uuid}: row {upto} is before row "
                    f"{in_force.upto}, which compaction {in_force.id} already covers"
                )
            rows = [Prepared("compaction", summary, {"upto": upto, **extra}, message_json, message)]
            if usage is not None:
                spent: dict[str, Any] = {
                    "usage": usage_dict(usage, "compaction"),
                    "provider": provider or agent.provider,
                    "model": model or agent.model,
                }
                rows.append(Prepared("usage", "context compaction", spent))
            return self._insert(conn, agent_uuid, rows)[0]

    def mark_interrupted(
        self, agent_uuid: str, turn_start: int, *, reason: str | None = None
    ) -> MessageRecord:
        """The turn whose first row is ``turn_start`` was cancelled: its rows
        (from turn_start up to this one) stay in history and leave the context."""
        data = {"turn_start": turn_start, "reason": reason}
        entry = Entry(kind="interrupted", content=reason or "", data=data)
        return self.append_many(agent_uuid, [entry], end_turn=True)[0]

    # ------------------------------------------------------------ reading

    def history(
        self,
        agent_uuid: str,
        *,
        limit: int | None = None,
        before: int | None = None,
        after: int | None = None,
        files: bool = True,
    ) -> list[MessageRecord]:
        """Raw rows the agent sees (its own and its ancestors' up to each fork
        point, clears and interrupted turns included), oldest first. With
        ``limit``: the newest ``limit`` rows below ``before``, or the oldest
        ``limit`` rows above ``after``. ``files=False``: the attached files'
        blocks without their bytes (not read: ``data.files`` describes them)."""
        m = messages.c
        with self._read() as conn:
            ranges = self._lineage(conn, agent_uuid)  # AgentNotFound for an unknown id
            newest_first = limit is not None and after is None
            rows: list[Any] = []
            for part in _replay.chunks(ranges):
                q = sa.select(messages).where(_replay.range_cond(part))
                if before is not None:
                    q = q.where(m.id < before)
                if after is not None:
                    q = q.where(m.id > after)
                q = q.order_by(m.id.desc() if newest_first else m.id)
                if limit is not None:
                    q = q.limit(limit)
                rows.extend(conn.execute(q).all())
            rows.sort(key=lambda r: r.id, reverse=newest_first)
            if limit is not None:
                rows = rows[:limit]
            if newest_first:
                rows.reverse()
            # the files' bytes back in the messages that refer to them
            texts = [r.message_json or "" for r in rows]
            texts = restore_texts(conn, texts) if files else texts
        return [message_record(r, t) for r, t in zip(rows, texts, strict=True)]

    def replay(self, agent_uuid: str) -> list[Message]:
        """The Messages a provider request needs, oldest first, exactly as
        appended (signatures and provider data byte for byte): the lineage from
        the newest clear on, interrupted turns left out, rewinds applied."""
        with self._read() as conn:
            folded = self._fold(conn, agent_uuid)
            texts = restore_texts(conn, _replay.context(folded).texts)
        return _replay.decode_messages(texts)

    def replay_ids(self, agent_uuid: str) -> list[int]:
        """The row id of each message replay() returns (same order; a
        compaction summary's is its compaction row's)."""
        with self._read() as conn:
            return _replay.context(self._fold(conn, agent_uuid)).ids

    def replay_entries(self, agent_uuid: str) -> list[Replayed]:
        """replay() with each message's row id and whether it is a compaction summary."""
        with self._read() as conn:
            ctx = _replay.context(self._fold(conn, agent_uuid))
            texts = restore_texts(conn, ctx.texts)
        messages_ = _replay.decode_messages(texts)
        return [
            Replayed(rid, msg, ctx.summary and i == 0)
            for i, (rid, msg) in enumerate(zip(ctx.ids, messages_, strict=True))
        ]

    # ------------------------------------------------------------ internals

    def _prepare(
        self, conn: sa.Connection, agent_uuid: str, agent: Any, e: Entry
    ) -> list[Prepared]:
        """The rows one entry writes, after the checks that need the database."""
        kind = e.kind
        if kind not in KINDS:
            raise InvalidEntry(
                f"unknown message kind {kind!r}; kinds are {', '.join(sorted(KINDS))}"
            )
        if kind not in APPENDABLE:
            how = "with its assistant message" if kind == "tool_call" else "by its own Store method"
            raise InvalidEntry(f"{kind} rows are written {how}, not by append")
        data = plain(e.data)
        if kind in MESSAGE_ROLES:
            return message_rows(agent, e, kind, data)
        if e.message is not None:
            raise InvalidEntry(f"a {kind} row takes no message")
        content = e.content if e.content is not None else ""
        if kind == "rewind":
            mark_id = (data or {}).get("mark_id")
            marks = self._fold(conn, agent_uuid).marks
            if not isinstance(mark_id, int) or all(mk.id != mark_id for mk in marks):
                raise NoSuchMark(
                    f"rewind of agent {agent_uuid}: mark {mark_id!r} is not in its current context"
                )
        elif kind == "interrupted":
            start = (data or {}).get("turn_start")
            owner = (
                conn.execute(
                    sa.select(messages.c.agent_uuid).where(messages.c.id == start)
                ).scalar()
                if isinstance(start, int)
                else None
            )
            if owner != agent_uuid:
                raise InvalidEntry(
                    f"interrupted row of agent {agent_uuid}: turn_start {start!r} "
                    "is not one of its messages"
                )
        elif kind == "usage":
            data = dict(data or {})
            data["usage"] = usage_dict(data.get("usage"), kind)
            if "provider" not in data:
                data["provider"] = agent.provider
            if "model" not in data:
                data["model"] = agent.model
        return [Prepared(kind, content, data)]
