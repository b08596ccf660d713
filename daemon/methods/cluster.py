"""The daemons sharing this database: ``daemons.list``, and the ``cluster``
object of ``daemon.status``. See docs/cluster.md."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import structlog

import protocol as p
from daemon.cluster import Membership
from daemon.methods.refusals import refusals
from daemon.methods.shapes import Family, stamp
from protocol import params as P
from protocol import results as R
from store import DaemonRecord

if TYPE_CHECKING:
    from daemon.server import Connection, Handler

log = structlog.get_logger("ikigai.cluster")


def cluster_state(m: Membership | None) -> R.ClusterState:
    if m is None:  # a daemon made without one (tests of the methods alone)
        return {
            "id": socket.gethostname(),
            "generation": 0,
            "shared": False,
            "lease": 0.0,
            "heartbeat": 0.0,
            "lease_held": True,
            "labels": [],
        }
    return {
        "id": m.id,
        "generation": m.generation,
        "shared": m.store.shared,
        "lease": m.config.lease,
        "heartbeat": m.config.heartbeat_s,
        "lease_held": m.lease_held(),
        "labels": list(m.config.labels),
    }


def daemon_row(d: DaemonRecord, me: str) -> R.DaemonRow:
    return {
        "id": d.id,
        "host": d.host,
        "pid": d.pid,
        "state": d.state,
        "agents": d.agents,
        "heartbeat_age": round(d.heartbeat_age, 3),
        "expired": d.expired,
        "version": d.version,
        "schema": d.schema,
        "labels": d.labels,
        "lease": d.lease,
        "generation": d.generation,
        "started_at": stamp(d.started_at),
        "socket": d.socket,
        "address": d.address,
        "self": d.id == me,
    }


def _named(d: DaemonRecord) -> str:
    return f"{d.id} (host {d.host}{', labels ' + ','.join(d.labels) if d.labels else ''})"


async def placement(
    host: Family, on: str | None, *, exclude: str | None = None, field: str = "on"
) -> str | None:
    """The daemon ``agent.create {on}`` names: None for this one. ``on``: a
    daemon id, a host name or a label (the daemon among them with the fewest
    running agents), or "any": the live daemon with the fewest."""
    if on is None:
        return None
    store = host.db.store
    me = store.daemon_id
    rows = [
        d for d in await host.db.call(store.daemons) if d.state == "up" and not d.expired
    ]
    running = await host.db.call(store.agents_per_daemon)  # now, not a heartbeat ago
    rows = [d for d in rows if d.id != exclude]  # a move's: not where it runs
    match = rows if on == "any" else [d for d in rows if on in (d.id, d.host, *d.labels)]
    if not match:
        live = "; ".join(_named(d) for d in rows) or "none"
        raise p.RpcError(
            p.INVALID_PARAMS,
            f"{field}: no live daemon is {on!r} (an id, a host, a label or \"any\"); "
            f"live daemons: {live}",
            {"daemons": [d.id for d in rows]},
        )
    # fewest agents first; this daemon wins a tie (no hop)
    best = min(match, key=lambda d: (running.get(d.id, 0), d.id != me, d.id))
    return None if best.id == me else best.id


class ClusterApi(Family):
    """``daemons.list``, ``agent.move``."""

    def handlers(self) -> dict[str, Handler]:
        return {p.DAEMONS_LIST: self.daemons, p.AGENT_MOVE: self.move}

    async def move(self, conn: Connection, params: P.Move) -> R.Moved:
        """Asked of any daemon, carried out by the agent's (forwarded there):
        it lets the idle agent go, writes the new owner and the seq its events
        go on from, and asks the new owner to take it (the same method, which
        there finds the agent its own and not yet running)."""
        record = await self.host._record(params.agent)  # its daemon's, else forwarded
        me = self.db.store.daemon_id or ""
        label = f"agent {record.name} ({record.uuid})"
        if not record.alive:
            raise p.RpcError(p.REFUSED, f"{label} is dead: only a live agent moves")
        actor = self.sup.actor_of(record.uuid)
        if actor is None:  # handed to this daemon: take it
            await self.sup.adopt([record.uuid])
            taken = self.sup.actor_of(record.uuid)
            if taken is None:
                raise p.RpcError(p.AGENT_UNAVAILABLE, f"{label} could not be taken up here")
            return {
                "agent": record.uuid,
                "moved_from": "",
                "to": me,
                "next_seq": taken.log.next_seq,
            }
        membership = self.host.info.membership  # type: ignore[attr-defined]
        if membership is None or not membership.store.shared:
            raise p.RpcError(p.REFUSED, "this daemon is alone on its database: nowhere to move to")
        to = await placement(self, params.to, exclude=me, field="to")
        if to is None:
            raise p.RpcError(p.REFUSED, f"{label} already runs on daemon {me}")
        if actor.busy:
            raise p.RpcError(
                p.REFUSED,
                f"{label} is busy (a turn runs or waits): wait for it (agent.wait) "
                "or cancel it, then move it",
            )
        membership.moving.add(record.uuid)
        self.sup.let_go([record.uuid], f"moved to daemon {to}")
        next_seq = actor.log.next_seq
        try:
            with refusals():
                done = await self.db.call(
                    self.db.store.hand_over, {record.uuid: next_seq}, to, notify=True
                )
        except BaseException:
            await self.sup.adopt([record.uuid])  # it stays here
            raise
        finally:
            membership.moving.discard(record.uuid)
        if not done:
            raise p.RpcError(p.REFUSED, f"{label} is no longer this daemon's")
        # the new owner takes it now (else on its NOTIFY, or its next heartbeat)
        try:
            await membership.peers.call(to, p.AGENT_MOVE, {"agent": record.uuid, "to": to})
        except p.RpcError as e:
            log.warning("the new owner did not answer the hand-over", daemon=to, reason=e.message)
        return {"agent": record.uuid, "moved_from": me, "to": to, "next_seq": next_seq}

    async def daemons(self, conn: Connection, params: P.DaemonsList) -> R.DaemonsListed:
        me = self.db.store.daemon_id or ""
        rows = await self.db.call(self.db.store.daemons, include_gone=params.include_gone)
        return {"daemons": [daemon_row(d, me) for d in rows], "self": me}
