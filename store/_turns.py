"""The durable prompt queue and turn boundaries.

"Acknowledged" means committed: a prompt is a ``prompt_queue`` row before the
daemon answers, and the transaction that starts its turn writes the user row,
deletes the queue row and records the turn as open (``agents.turn_start``).
Every way a turn ends clears the mark in the same transaction as its last
row; a daemon killed mid-turn leaves it set, and ``close_open_turns`` marks
that turn interrupted on the next start. So after any crash each prompt is in
exactly one place (queued or in history) and no half turn is replayed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
import sqlalchemy as sa

from providers.types import Message

from ._base import StoreBase
from ._blobs import put_blobs, restore_items, stored_items
from ._errors import AgentNotFound, InvalidEntry, StoreError
from ._rows import Prepared, now, queued_attachments, queued_record, user_row
from ._schema import agents, mail, prompt_queue
from ._types import MessageRecord, QueuedPrompt

_q = prompt_queue.c
# Built once (see _base.py). A prompt is queued only for a live agent: the
# INSERT selects the agent's row, so one statement checks and writes.
_ENQUEUE = (
    prompt_queue.insert()
    .from_select(
        ["agent_uuid", "turn", "text", "mail_ids", "meta", "created_at"],
        sa.select(
            agents.c.uuid,
            sa.bindparam("b_turn", type_=_q.turn.type),
            sa.bindparam("b_text", type_=_q.text.type),
            sa.bindparam("b_mail_ids", type_=_q.mail_ids.type),
            sa.bindparam("b_meta", type_=_q.meta.type),
            sa.bindparam("b_at", type_=_q.created_at.type),
        ).where(agents.c.uuid == sa.bindparam("b_agent"), agents.c.status != "dead"),
    )
    .returning(_q.id)
)
_UNQUEUE = (
    prompt_queue.delete()
    .where(
        _q.id == sa.bindparam("b_id"),
        _q.agent_uuid == sa.bindparam("b_agent"),
        _q.dropped_at.is_(None),
    )
    .returning(_q.meta)
)
_TURN_START = (
    agents.update()
    .where(agents.c.uuid == sa.bindparam("b_agent"))
    .values(turn_start=sa.bindparam("b_start"))
)
_TURN_CLOSED = (
    agents.update().where(agents.c.uuid == sa.bindparam("b_agent")).values(turn_start=None)
)


class TurnsMixin(StoreBase):
    """Store methods for the queue and turn boundaries (see the module doc)."""

    def enqueue_prompt(
        self,
        agent_uuid: str,
        turn: str,
        text: str,
        *,
        mail_ids: Sequence[int] = (),
        attachments: Sequence[dict[str, Any]] = (),
        tool_choice: dict[str, str] | None = None,
        schema: dict[str, Any] | None = None,
    ) -> QueuedPrompt:
        """Queue a prompt, committed when this returns. With ``mail_ids`` the
        prompt delivers that mail: it is marked read in the same transaction,
        so mail is never read without being queued, nor queued twice."""
        # the files, the tool choice and the schema wait in the queue row
        # beside the text; the turn's user message carries the files from
        # there, and start_turn leaves all three out of its data
        # (their bytes in blobs, the meta keeping references: _blobs.py)
        refs, files = stored_items(attachments)
        meta: dict[str, object] = {"attachments": refs} if refs else {}
        if tool_choice:
            meta["tool_choice"] = dict(tool_choice)
        if schema is not None:
            meta["schema"] = schema
        with self._write() as conn:
            put_blobs(conn, files)
            queued = self._enqueue_in(
                conn, agent_uuid, turn, text, mail_ids=mail_ids, meta=meta or None
            )
        return msgspec.structs.replace(queued, attachments=list(attachments)) if refs else queued

    def _enqueue_in(
        self,
        conn: sa.Connection,
        agent_uuid: str,
        turn: str,
        text: str,
        *,
        mail_ids: Sequence[int] = (),
        meta: dict[str, object] | None = None,
    ) -> QueuedPrompt:
        """enqueue_prompt's writes in the caller's transaction; ``meta``: what
        the turn's user row will carry beside its turn id."""
        ids = list(mail_ids)
        at = now()
        values = {
            "b_agent": agent_uuid,
            "b_turn": turn,
            "b_text": text,
            "b_mail_ids": ids or None,
            "b_meta": meta,
            "b_at": at,
        }
        new_id = conn.execute(_ENQUEUE, values).scalar()
        if new_id is None:  # no live agent row: say which
            row = self._agent_row(conn, agent_uuid)
            if row.status == "dead":
                raise InvalidEntry(f"agent {row.name} ({agent_uuid}) is dead: it takes no prompts")
            raise StoreError(f"agent {agent_uuid}: the prompt was not queued")
        if ids:
            changed = conn.execute(
                mail.update()
                .where(mail.c.to_uuid == agent_uuid, mail.c.id.in_(ids), mail.c.read_at.is_(None))
                .values(read_at=at)
            ).rowcount
            if changed != len(ids):
                raise InvalidEntry(f"mail {ids} to agent {agent_uuid} is not all unread")
        choice, schema = (meta or {}).get("tool_choice"), (meta or {}).get("schema")
        return QueuedPrompt(
            id=new_id,
            agent_uuid=agent_uuid,
            turn=turn,
            text=text,
            mail_ids=ids,
            created_at=at,
            attachments=queued_attachments(meta or {}),
            tool_choice=choice if isinstance(choice, dict) else None,
            schema=schema if isinstance(schema, dict) else None,
        )

    def queued_prompts(self, agent_uuid: str | None = None) -> list[QueuedPrompt]:
        """Prompts acknowledged and not started (nor dropped), oldest first;
        every live agent's when ``agent_uuid`` is None (one query, for restore)."""
        q = prompt_queue.c
        stmt = sa.select(prompt_queue).where(q.dropped_at.is_(None)).order_by(q.id)
        if agent_uuid is not None:
            stmt = stmt.where(q.agent_uuid == agent_uuid)
        with self._read() as conn:
            out = [queued_record(r) for r in conn.execute(stmt)]
            return [
                msgspec.structs.replace(q, attachments=restore_items(conn, q.attachments))
                if q.attachments
                else q
                for q in out
            ]

    def start_turn(
        self, agent_uuid: str, message: Message, *, queue_id: int | None, turn: str
    ) -> MessageRecord:
        """The turn's user row, the queue row gone and the turn marked open: one transaction."""
        with self._write() as conn:
            # no SELECT of the agent: the DELETE's rowcount and the INSERT's
            # foreign key tell the same; the agent is looked up only to word
            # a refusal (an unknown agent is named before anything else)
            meta: dict[str, object] = {}
            if queue_id is not None:
                gone = conn.execute(_UNQUEUE, {"b_id": queue_id, "b_agent": agent_uuid}).all()
                if len(gone) != 1:
                    self._agent_row(conn, agent_uuid)
                    raise InvalidEntry(
                        f"queued prompt {queue_id} of agent {agent_uuid} is not pending"
                    )
                meta = dict(gone[0][0] or {})  # a scheduled run's ids
                meta.pop("images", None)  # in the message itself
                meta.pop("attachments", None)
                meta.pop("tool_choice", None)  # the turn's, not the message's
                meta.pop("schema", None)
            try:
                row = user_row(message, {**meta, "turn": turn})
            except InvalidEntry:
                self._agent_row(conn, agent_uuid)
                raise
            return open_turn(self, conn, agent_uuid, row)

    def end_turn(self, agent_uuid: str) -> None:
        """The running turn ended with no row of its own to write (an error)."""
        with self._write() as conn:
            conn.execute(_TURN_CLOSED, {"b_agent": agent_uuid})

    def open_turns(self) -> list[tuple[str, int]]:
        """(agent, first row) of every turn a killed daemon left running."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(agents.c.uuid, agents.c.turn_start).where(
                    agents.c.turn_start.is_not(None)
                )
            ).all()
        return [(r.uuid, r.turn_start) for r in rows]

    def close_open_turns(self, reason: str) -> list[tuple[str, int]]:
        """Mark every turn a killed daemon left running interrupted (its rows
        stay in history and leave the context, as after a cancel). Returns
        (agent, first row) of each."""
        closed = []
        for agent_uuid, start in self.open_turns():
            with self._write() as conn:
                data = {"turn_start": start, "reason": reason}
                self._insert(conn, agent_uuid, [Prepared("interrupted", reason, data)])
                conn.execute(
                    agents.update()
                    .where(agents.c.uuid == agent_uuid, agents.c.turn_start == start)
                    .values(turn_start=None)
                )
            closed.append((agent_uuid, start))
        return closed

    def drop_queued(self, agent_uuid: str) -> int:
        """Set aside the agent's pending prompts (it was killed): kept, never run."""
        with self._write() as conn:
            return drop_pending(conn, agent_uuid, now())


def open_turn(
    store: StoreBase, conn: sa.Connection, agent_uuid: str, row: Prepared
) -> MessageRecord:
    """Write a turn's user row and mark the turn open, inside the caller's transaction."""
    record = store._insert(conn, agent_uuid, [row])[0]
    conn.execute(_TURN_START, {"b_agent": agent_uuid, "b_start": record.id})
    return record


def turn_closed(conn: sa.Connection, agent_uuid: str) -> None:
    """Clear the open-turn mark, inside the transaction writing the turn's last row."""
    result = conn.execute(_TURN_CLOSED, {"b_agent": agent_uuid})
    if result.rowcount != 1:
        raise AgentNotFound(f"no agent has the id {agent_uuid!r}")


def drop_pending(conn: sa.Connection, agent_uuid: str, at: datetime) -> int:
    """Set the agent's pending prompts aside (kept, never run); how many there were."""
    return conn.execute(
        prompt_queue.update()
        .where(prompt_queue.c.agent_uuid == agent_uuid, prompt_queue.c.dropped_at.is_(None))
        .values(dropped_at=at)
    ).rowcount
