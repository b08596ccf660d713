"""Tool-call approvals: ``agent.approve`` and ``approvals.list``. See
docs/protocol.md, "Permissions"."""

from __future__ import annotations

import socket
import struct
from typing import TYPE_CHECKING

import protocol as p
from daemon.methods.refusals import refusals
from daemon.methods.shapes import Family, stamp
from protocol import params as P
from protocol import results as R
from store import NoSuchApproval

if TYPE_CHECKING:
    from daemon.server import Connection, Handler


class ApprovalsApi(Family):
    """Pending tool calls a policy asked about, and their answers."""

    def handlers(self) -> dict[str, Handler]:
        return {
            p.AGENT_APPROVE: self.approve,
            p.APPROVALS_LIST: self.approvals,
        }

    async def approve(self, conn: Connection, params: P.Approve) -> R.Approved:
        with refusals():
            try:
                record = await self.sup.approve(
                    params.approval,
                    params.decision,
                    remember=params.remember,
                    reason=params.reason,
                    by=_client(conn),
                )
            except NoSuchApproval:
                raise p.RpcError(
                    p.INVALID_PARAMS, f"approval: no approval has the id {params.approval!r}"
                ) from None
        return {"approval": record.id, "agent": record.agent_uuid, "decision": params.decision}

    async def approvals(
        self, conn: Connection, params: P.ApprovalsList
    ) -> list[R.Approval]:
        uuid = None if params.agent is None else (await self.host._record(params.agent)).uuid
        return [
            {
                "approval": a.id,
                "agent": a.agent_uuid,
                "agent_name": a.agent_name,
                "turn": a.turn,
                "tool": a.tool,
                "arguments": a.arguments,
                "rule": a.rule,
                "policy": a.policy,
                "created_at": stamp(a.created_at),
            }
            for a in await self.sup.pending_approvals(uuid)
        ]


def _client(conn: Connection) -> str:
    """Who answered, for history: the client's process id when the socket tells it."""
    try:
        raw = conn.stream.socket.getsockopt(  # type: ignore[attr-defined]
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
        )
        return f"client pid {struct.unpack('3i', raw)[0]}"
    except (AttributeError, OSError):
        return f"connection {conn.id}"
