"""Mail between agents: ``mail.send`` and ``mail.inbox``. See docs/protocol.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p
from daemon.methods.refusals import refusals
from daemon.methods.shapes import Family, stamp
from protocol import params as P
from protocol import results as R

if TYPE_CHECKING:
    from daemon.server import Connection, Handler


class MailApi(Family):
    """Mail: sent to a live agent's mailbox (taken as its next prompt), read back."""

    def handlers(self) -> dict[str, Handler]:
        return {
            p.MAIL_SEND: self.mail_send,
            p.MAIL_INBOX: self.inbox,
        }

    async def mail_send(self, conn: Connection, params: P.MailSend) -> R.MailId:
        sender = None
        if params.from_ is not None:
            sender = (await self.host._record(params.from_)).uuid
        target = await self.host._actor(params.to)
        with refusals():
            mail_id = await self.sup.send_mail(sender, target.uuid, params.text)
        return {"id": mail_id}

    async def inbox(self, conn: Connection, params: P.Inbox) -> list[R.Mail]:
        record = await self.host._record(params.agent)
        mail = await self.db.inbox(record.uuid, unread=params.unread)
        return [
            {
                "id": m.id,
                "from": m.from_uuid,
                "to": m.to_uuid,
                "body": m.body,
                "created_at": stamp(m.created_at),
                "read_at": None if m.read_at is None else stamp(m.read_at),
            }
            for m in mail
        ]
