"""Several daemons on one database: membership, ownership and the fence
(the ``daemons`` table and ``agents.daemon`` in _schema.py).

A daemon joins with a row of its own and a generation one higher than the
row had. It renews ``heartbeat_at`` every heartbeat; a row whose heartbeat is
older than its lease (by the database's clock, so hosts' clocks never
matter) belongs to a lost daemon. The first daemon to see that marks the row
``lost`` and bumps its generation, under the row's lock; then the lost
daemon's live agents are orphans, and the others claim them in shares
(``SELECT ... FOR UPDATE SKIP LOCKED``), each claim one transaction.

The fence: every write of a joined daemon first takes its own row ``FOR
SHARE`` where the generation is still the one it joined with. A daemon that
was marked lost (it was paused, or cut from the database, longer than its
lease) therefore writes nothing more: its next write finds no row and raises
Fenced. Marking a row lost waits for the writes that hold its share lock, so
no write of the lost daemon commits after the others started adopting.

The lease is per daemon, not per agent: one row renewed per heartbeat,
whatever the number of agents it runs.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import msgspec
import sqlalchemy as sa

from ._base import StoreBase
from ._rows import now
from ._schema import agents, daemons, mail, messages, prompt_queue

_d = daemons.c
_a = agents.c

LIVE_STATES = ("up", "draining")

# What daemons tell each other, delivered when the transaction that sends it
# commits: "mail:<agent>" (mail for an agent another daemon runs), "turn:<agent>"
# (a turn ended or the agent died: a wait elsewhere looks again)
CHANNEL = "ikigai"
NOTIFY = sa.text(f"SELECT pg_notify('{CHANNEL}', :payload)")


class DaemonRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    generation: int
    state: str  # up | draining | stopped | lost
    host: str
    pid: int
    home: str
    socket: str
    address: str | None  # HOST:PORT for daemons of other hosts; None: none
    version: str
    schema: str
    labels: list[str]
    lease: float
    agents: int  # running agents, at its last heartbeat
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_age: float  # seconds since heartbeat_at, by the database's clock
    expired: bool  # live state, heartbeat older than its lease


class Joining(msgspec.Struct, frozen=True, kw_only=True):
    """What a daemon says of itself when it joins."""

    id: str
    host: str
    pid: int
    home: str
    socket: str
    version: str
    schema: str
    labels: list[str] = []
    lease: float = 10.0
    address: str | None = None


def _labels(text: str) -> list[str]:
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class ClusterMixin(StoreBase):
    """Store methods for daemons sharing this database (see the module doc)."""

    # ------------------------------------------------------------ time

    def _clock(self) -> Any:
        """The database's now: every host compares heartbeats against one clock."""
        return now() if self._sqlite else sa.func.now()

    def _expired(self) -> Any:
        """A live row whose heartbeat is older than its lease (PostgreSQL)."""
        return sa.and_(
            _d.state.in_(LIVE_STATES),
            _d.heartbeat_at + _d.lease * sa.text("interval '1 second'") < sa.func.now(),
        )

    @property
    def shared(self) -> bool:
        """Can several daemons share this database (PostgreSQL, not SQLite)."""
        return not self._sqlite

    # ------------------------------------------------------------ membership

    def join(self, me: Joining) -> int:
        """This daemon's row, made or taken over with the next generation;
        from now on every write is fenced by it (on PostgreSQL)."""
        values = {
            "state": "up",
            "host": me.host,
            "pid": me.pid,
            "home": me.home,
            "socket": me.socket,
            "address": me.address,
            "version": me.version,
            "schema": me.schema,
            "labels": json.dumps(me.labels),
            "lease": me.lease,
            "agents": 0,
        }
        with self._unfenced() as conn:
            stamp = self._clock()
            old = conn.execute(
                sa.select(_d.generation).where(_d.id == me.id).with_for_update()
            ).scalar()
            if old is None:
                generation = 1
                conn.execute(
                    daemons.insert().values(
                        id=me.id,
                        generation=generation,
                        started_at=stamp,
                        heartbeat_at=stamp,
                        **values,
                    )
                )
            else:
                generation = int(old) + 1
                conn.execute(
                    daemons.update()
                    .where(_d.id == me.id)
                    .values(generation=generation, started_at=stamp, heartbeat_at=stamp, **values)
                )
        self.daemon_id = me.id
        if not self._sqlite:  # one daemon per SQLite file: its lock is the fence
            self._fence = {"f_id": me.id, "f_gen": generation}
        return generation

    def heartbeat(self, running: int, *, state: str | None = None) -> bool:
        """Renew this daemon's lease (and say how many agents it runs). False:
        it was marked lost meanwhile; it must rejoin before it writes."""
        assert self.daemon_id is not None, "join first"
        values: dict[str, Any] = {"heartbeat_at": self._clock(), "agents": running}
        if state is not None:
            values["state"] = state
        with self._unfenced() as conn:
            done = conn.execute(self._mine().values(**values))
            return bool(done.rowcount)

    def leave(self) -> None:
        """This daemon stopped: its row says so (its agents wait for it)."""
        if self.daemon_id is None:
            return
        with self._unfenced() as conn:
            conn.execute(self._mine().values(state="stopped", agents=0))
        self._fence = None

    def _mine(self) -> Any:
        stmt = daemons.update().where(_d.id == self.daemon_id, _d.state.in_(LIVE_STATES))
        if self._fence is not None:
            stmt = stmt.where(_d.generation == self._fence["f_gen"])
        return stmt

    def daemons(self, *, include_gone: bool = False) -> list[DaemonRecord]:
        """Every daemon that joined (only live ones unless ``include_gone``), oldest first."""
        with self._read() as conn:
            clock = now() if self._sqlite else conn.execute(sa.select(sa.func.now())).scalar()
            q = sa.select(daemons).order_by(_d.started_at, _d.id)
            if not include_gone:
                q = q.where(_d.state.in_(LIVE_STATES))
            rows = conn.execute(q).all()
        out = []
        for r in rows:
            age = max(0.0, (clock - r.heartbeat_at).total_seconds())
            out.append(
                DaemonRecord(
                    id=r.id,
                    generation=r.generation,
                    state=r.state,
                    host=r.host,
                    pid=r.pid,
                    home=r.home,
                    socket=r.socket,
                    address=r.address,
                    version=r.version,
                    schema=r.schema,
                    labels=_labels(r.labels),
                    lease=r.lease,
                    agents=r.agents,
                    started_at=r.started_at,
                    heartbeat_at=r.heartbeat_at,
                    heartbeat_age=age,
                    expired=r.state in LIVE_STATES and age > r.lease,
                )
            )
        return out

    def other_schemas(self, mine: str, me: str) -> list[tuple[str, str]]:
        """(id, schema revision) of live daemons other than ``me`` whose code
        wants another schema than ``mine``."""
        return [
            (d.id, d.schema)
            for d in self.daemons()
            if not d.expired and d.schema != mine and d.id != me
        ]

    # ------------------------------------------------------------ failover

    def mark_lost(self) -> list[str]:
        """Every live daemon whose lease ran out, marked lost (its generation
        bumped): from now on it writes nothing. Waits for the writes it has
        in flight (they hold its row's share lock). PostgreSQL only."""
        if self._sqlite:
            return []
        with self._unfenced() as conn:
            rows = conn.execute(
                daemons.update()
                .where(self._expired(), _d.id != self.daemon_id)
                .values(state="lost", generation=_d.generation + 1, agents=0)
                .returning(_d.id)
            ).all()
        return [r[0] for r in rows]

    def orphans(self) -> int:
        """Live agents nobody runs: no owner, or a lost one."""
        with self._read() as conn:
            return int(conn.execute(sa.select(sa.func.count()).where(self._orphaned())).scalar())

    def _orphaned(self) -> Any:
        lost = sa.select(_d.id).where(_d.state == "lost")
        return sa.and_(_a.status != "dead", sa.or_(_a.daemon.is_(None), _a.daemon.in_(lost)))

    def claim_orphans(self, limit: int) -> list[str]:
        """Up to ``limit`` orphans made this daemon's, oldest first; agents
        another daemon is claiming at this moment are skipped, not waited for."""
        assert self.daemon_id is not None, "join first"
        pick = sa.select(_a.uuid).where(self._orphaned()).order_by(_a.uuid).limit(limit)
        if not self._sqlite:
            pick = pick.with_for_update(skip_locked=True)
        with self._write() as conn:
            uuids = [r[0] for r in conn.execute(pick)]
            if uuids:
                conn.execute(
                    agents.update().where(_a.uuid.in_(uuids)).values(daemon=self.daemon_id)
                )
        return uuids

    def take_all(self) -> int:
        """Every live agent made this daemon's: a daemon alone on its database."""
        with self._write() as conn:
            done = conn.execute(
                agents.update()
                .where(_a.status != "dead")
                .where(sa.or_(_a.daemon.is_(None), _a.daemon != self.daemon_id))
                .values(daemon=self.daemon_id)
            )
            return done.rowcount

    def owned(self) -> set[str]:
        """This daemon's live agents, as the database has them."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(_a.uuid).where(_a.daemon == self.daemon_id, _a.status != "dead")
            )
            return {r[0] for r in rows}

    def notify(self, payload: str) -> None:
        """Tell every daemon listening (PostgreSQL; nothing on SQLite)."""
        if self._sqlite:
            return
        with self._read() as conn:
            conn.execute(NOTIFY, {"payload": payload})

    def activity(self, uuid: str) -> tuple[bool, bool, str]:
        """(alive, busy, last reply) of an agent, as the database has them:
        busy while a turn is open or a prompt waits; the reply is the text of
        its last assistant row. For a wait on an agent another daemon runs."""
        with self._read() as conn:
            row = conn.execute(
                sa.select(_a.status, _a.turn_start).where(_a.uuid == uuid)
            ).first()
            if row is None or row.status == "dead":
                return False, False, ""
            queued = conn.execute(
                sa.select(sa.func.count()).where(
                    prompt_queue.c.agent_uuid == uuid, prompt_queue.c.dropped_at.is_(None)
                )
            ).scalar()
            reply = conn.execute(
                sa.select(messages.c.content)
                .where(messages.c.agent_uuid == uuid, messages.c.kind == "assistant")
                .order_by(messages.c.id.desc())
                .limit(1)
            ).scalar()
            unread = conn.execute(
                sa.select(sa.func.count()).where(mail.c.to_uuid == uuid, mail.c.read_at.is_(None))
            ).scalar()
        # unread mail is a turn to come: it counts as busy, as the actor's own flag does
        return True, row.turn_start is not None or bool(queued) or bool(unread), reply or ""

    def agents_per_daemon(self) -> dict[str, int]:
        """Live agents each daemon owns, as the database has them now."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(_a.daemon, sa.func.count())
                .where(_a.status != "dead", _a.daemon.is_not(None))
                .group_by(_a.daemon)
            )
            return {r[0]: int(r[1]) for r in rows}

    def owner_of(self, uuid: str) -> str | None:
        with self._read() as conn:
            return conn.execute(sa.select(_a.daemon).where(_a.uuid == uuid)).scalar()

    def hand_over(self, seqs: dict[str, int], to: str, *, notify: bool = False) -> list[str]:
        """Give these agents of this daemon ({uuid: the seq of its next event})
        to daemon ``to`` (a move or a drain); the ones handed over. ``notify``:
        "adopt:<uuid>" to the listening daemons on commit."""
        done = []
        with self._write() as conn:
            for uuid, seq in seqs.items():
                changed = conn.execute(
                    agents.update()
                    .where(_a.uuid == uuid, _a.daemon == self.daemon_id, _a.status != "dead")
                    .values(daemon=to, seq=seq)
                )
                if changed.rowcount:
                    done.append(uuid)
                    if notify and not self._sqlite:
                        conn.execute(NOTIFY, {"payload": f"adopt:{to}:{uuid}"})
        return done


def live_schemas(url: str) -> list[tuple[str, str]]:
    """(id, schema revision) of the live daemons on the database at ``url``,
    read before the store opens it (and may migrate it): [] if none, or if
    the database has no ``daemons`` table yet."""
    from ._engine import make_engine  # only on the rare path of a schema to migrate

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("daemons"):
                return []
            live = sa.select(_d.id, _d.schema).where(_d.state.in_(LIVE_STATES))
            if engine.dialect.name != "sqlite":
                live = live.where(
                    _d.heartbeat_at + _d.lease * sa.text("interval '1 second'") >= sa.func.now()
                )
            return [(r[0], r[1]) for r in conn.execute(live)]
    finally:
        engine.dispose()
