"""Mail between agents: send, read the inbox, mark read."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from ._base import StoreBase
from ._cluster import NOTIFY
from ._rows import mail_record, now
from ._schema import mail
from ._types import MailRecord


class MailMixin(StoreBase):
    """Store methods for mail (see the module doc). A prompt that delivers
    mail marks it read itself: see TurnsMixin.enqueue_prompt."""

    def send_mail(
        self, to_uuid: str, body: str, *, from_uuid: str | None = None, notify: bool = False
    ) -> MailRecord:
        """Mail to ``to_uuid`` (from ``from_uuid``, or from no agent), committed
        when this returns. ``notify``: and the daemon that runs the recipient
        told, on commit (PostgreSQL's NOTIFY: store/_cluster.py)."""
        with self._write() as conn:
            if notify and not self._sqlite:
                conn.execute(NOTIFY, {"payload": f"mail:{to_uuid}"})
            self._agent_row(conn, to_uuid)
            if from_uuid is not None:
                self._agent_row(conn, from_uuid)
            at = now()
            values = {"from_uuid": from_uuid, "to_uuid": to_uuid, "body": body, "created_at": at}
            new_id = conn.execute(mail.insert(), values).inserted_primary_key[0]  # type: ignore[index]
        return MailRecord(
            id=new_id, from_uuid=from_uuid, to_uuid=to_uuid, body=body, created_at=at, read_at=None
        )

    def inbox(
        self, uuid: str, *, unread_only: bool = True, limit: int | None = None
    ) -> list[MailRecord]:
        """Mail to the agent, oldest first."""
        c = mail.c
        q = sa.select(mail).where(c.to_uuid == uuid).order_by(c.id)
        if unread_only:
            q = q.where(c.read_at.is_(None))
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            self._agent_row(conn, uuid)
            return [mail_record(r) for r in conn.execute(q)]

    def mark_read(self, uuid: str, ids: Iterable[int] | None = None) -> int:
        """Mark mail to the agent read (the given ids, or all); returns how many changed."""
        c = mail.c
        q = mail.update().where(c.to_uuid == uuid, c.read_at.is_(None)).values(read_at=now())
        if ids is not None:
            wanted = list(ids)
            if not wanted:
                return 0
            q = q.where(c.id.in_(wanted))
        with self._write() as conn:
            self._agent_row(conn, uuid)
            return conn.execute(q).rowcount

    def agents_with_unread_mail(self) -> set[str]:
        """Every agent with unread mail (one query, for restore)."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(mail.c.to_uuid).where(mail.c.read_at.is_(None)).distinct()
            )
            return {r[0] for r in rows}
