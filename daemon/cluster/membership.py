"""This daemon as a member of the database's daemons (store/_cluster.py).

Three duties, each in the ``run`` nursery:

- the heartbeat: renew the lease every ``cluster.heartbeat`` seconds; then
  mark lost the daemons whose lease ran out and claim a share of the agents
  nobody runs (a lost daemon's, or ones with no owner yet);
- the watchdog: a daemon that has not renewed its lease for ``SAFETY`` of it
  (cut off from the database, or paused) stops its agents itself, before
  the others may take them: never two daemons running one agent. Its own
  clock starts before the renewal it counts from, and the others judge by
  the database's clock after it, so the stop always comes first;
- coming back: when a renewal succeeds again, the agents that are still
  this daemon's are restored; if it was marked lost meanwhile, it joins
  again with a new generation and says in its log which agents it lost.
"""

from __future__ import annotations

import math
import time
from typing import Any

import structlog
import trio

from agents import Supervisor
from daemon.cluster.startup import other_schemas
from daemon.config.cluster import ClusterConfig
from store import Joining, Store, StoreError, display_url

log = structlog.get_logger("ikigai.cluster")

# the share of the lease after which a daemon that could not renew it stops
# its agents: the rest is the margin for stopping them and for clocks that run
# at slightly different rates
SAFETY = 0.7

CUT_OFF = (
    "this daemon could not renew its lease on the database: its agents are stopped "
    "here (another daemon may adopt them)"
)


class Membership:
    """See the module doc. ``join`` runs once before the supervisor starts
    (it decides which agents the supervisor restores); ``run`` after it."""

    def __init__(self, store: Store, config: ClusterConfig, me: Joining) -> None:
        self.store = store
        self.config = config
        self.me = me
        self.id = me.id
        self.generation = 0
        self.sup: Supervisor | None = None
        self.last_ok = time.monotonic()  # when the last renewal that succeeded began
        self.cut_off = False  # its agents were stopped for want of a lease
        self.lost_agents = 0  # how many of its agents other daemons took over
        self.moving: set[str] = set()  # being handed to another daemon right now
        self.peers: Any = None  # daemon/cluster/peers.py, to ask the others (a move)

    @property
    def lease(self) -> float:
        return self.config.lease

    def join(self) -> set[str] | None:
        """Join (blocking: in a thread). Returns the agents to restore: this
        daemon's and its share of the orphans; None: every live agent (a
        SQLite file has one daemon). StartupError when live daemons run
        another schema version: they cannot share one database."""
        if self.store.shared:
            others = self.store.other_schemas(self.me.schema, self.me.id)
            if others:
                raise other_schemas(self.me.schema, others, display_url(self.store.url))
        self.generation = self.store.join(self.me)
        self.last_ok = time.monotonic()
        if not self.store.shared:
            self.store.take_all()
            return None
        self._claim_share()
        return self.store.owned()

    def _claim_share(self) -> list[str]:
        orphans = self.store.orphans()
        if not orphans:
            return []
        live = sum(1 for d in self.store.daemons() if not d.expired)
        return self.store.claim_orphans(max(1, math.ceil(orphans / max(1, live))))

    def lease_held(self) -> bool:
        """May this daemon act for its agents now (a model call about to be made)?"""
        return not self.cut_off and time.monotonic() - self.last_ok < self.lease * SAFETY

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        assert self.sup is not None, "set the supervisor first"
        if self.store.shared:  # its share of the keys' limits from the start
            live = await trio.to_thread.run_sync(self.store.daemons)
            self.sup.pool.limiters.set_daemons(sum(1 for d in live if not d.expired))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._beats)
            if self.store.shared:
                nursery.start_soon(self._watch)
            task_status.started()

    async def leave(self) -> None:
        """This daemon stops: its row says so; its agents wait for it."""
        try:
            await trio.to_thread.run_sync(self.store.leave)
        except StoreError as e:
            log.warning("could not record this daemon's stop", reason=str(e))

    # ------------------------------------------------------------ heartbeat

    async def _beats(self) -> None:
        while True:
            await trio.sleep(self.config.heartbeat_s)
            await self.beat()

    async def beat(self) -> None:
        """One heartbeat, and what follows from it."""
        assert self.sup is not None
        began = time.monotonic()
        try:
            # its own thread, not the store's workers: those may all be stuck
            # on a database that stopped answering
            renewed = await trio.to_thread.run_sync(self.store.heartbeat, len(self.sup.actors))
        except StoreError as e:
            log.warning("heartbeat failed", reason=str(e), lease=self.lease)
            return
        if not renewed:
            await self._rejoin()
            return
        self.last_ok = began
        if self.cut_off:
            await self._resume()
        if self.store.shared:
            await self._adopt()

    async def _adopt(self) -> None:
        assert self.sup is not None
        try:
            # the provider keys' limits are shared among the live daemons
            live = await trio.to_thread.run_sync(self.store.daemons)
            self.sup.pool.limiters.set_daemons(sum(1 for d in live if not d.expired))
            # handed to it while it did not hear (a drain's NOTIFY missed)
            owned = await trio.to_thread.run_sync(self.store.owned)
            missing = owned - set(self.sup.actors) - self.moving
            if missing and not self.cut_off:
                await self.sup.adopt(missing)
            lost = await trio.to_thread.run_sync(self.store.mark_lost)
            for other in lost:
                log.warning("daemon lost: its lease ran out; adopting its agents", daemon=other)
            claimed = await trio.to_thread.run_sync(self._claim_share)
        except StoreError as e:
            log.warning("could not look for agents to adopt", reason=str(e))
            return
        if claimed:
            await self.sup.adopt(claimed)
            log.info("agents adopted", agents=len(claimed), daemon=self.id)

    # ------------------------------------------------------------ losing the lease

    async def _watch(self) -> None:
        assert self.sup is not None
        step = max(0.05, self.lease * 0.05)
        while True:
            await trio.sleep(step)
            if not self.cut_off and time.monotonic() - self.last_ok > self.lease * SAFETY:
                self.cut_off = True
                stopped = self.sup.let_go(list(self.sup.actors), CUT_OFF)
                log.error(
                    "lease not renewed: this daemon's agents are stopped",
                    agents=len(stopped),
                    silent_s=round(time.monotonic() - self.last_ok, 1),
                    lease=self.lease,
                )

    async def _resume(self) -> None:
        """The database answers again and this daemon was not marked lost:
        its agents are still its own."""
        assert self.sup is not None
        owned = await trio.to_thread.run_sync(self.store.owned)
        self.cut_off = False
        back = await self.sup.adopt(owned)
        log.warning("lease renewed again: this daemon's agents run again", agents=back)

    async def _rejoin(self) -> None:
        """This daemon was marked lost (the others found its lease run out):
        whatever it ran, it stops; it joins again and runs what is still its own."""
        assert self.sup is not None
        had = set(self.sup.actors)
        self.cut_off = True
        self.sup.let_go(list(had), CUT_OFF)
        joined = time.monotonic()  # the lease counts from the join, not the stuck renewal
        try:
            self.generation = await trio.to_thread.run_sync(self.store.join, self.me)
            owned = await trio.to_thread.run_sync(self.store.owned)
        except StoreError as e:
            log.warning("could not join again", reason=str(e))
            return
        self.last_ok = joined
        self.cut_off = False
        taken = had - owned
        self.lost_agents += len(taken)
        log.error(
            "this daemon had been marked lost: its lease ran out while it could not renew it",
            taken_by_others=len(taken),
            generation=self.generation,
        )
        await self.sup.adopt(owned)

    # ------------------------------------------------------------ handing over

    async def drain(self, grace: float) -> int:
        """SIGTERM with ``cluster.drain``: every agent handed to the other live
        daemons (fewest agents first) after its running turn ends (at most
        ``grace`` seconds; a turn still running then is cut, as by a stop, and
        the next daemon marks it interrupted). Returns how many were handed."""
        assert self.sup is not None
        sup = self.sup
        try:
            await trio.to_thread.run_sync(
                lambda: self.store.heartbeat(len(sup.actors), state="draining")
            )
            others = [
                d
                for d in await trio.to_thread.run_sync(self.store.daemons)
                if d.id != self.id and d.state == "up" and not d.expired
            ]
        except StoreError as e:
            log.warning("cannot drain: the database does not answer", reason=str(e))
            return 0
        if not others:
            log.warning("nothing to drain to: no other live daemon; the agents wait for this one")
            return 0
        with trio.move_on_after(grace):
            for actor in list(sup.actors.values()):
                while actor.busy:
                    await actor.wait_turn_end()
        load = {d.id: d.agents for d in others}
        plan: dict[str, dict[str, int]] = {}
        actors = dict(sup.actors)
        self.moving.update(actors)
        sup.let_go(list(actors), "handed over: its daemon is draining")
        for uuid, actor in actors.items():
            to = min(load, key=lambda d: (load[d], d))
            load[to] += 1
            plan.setdefault(to, {})[uuid] = actor.log.next_seq
        handed = 0
        try:
            for to, seqs in plan.items():
                handed += len(
                    await trio.to_thread.run_sync(
                        lambda to=to, seqs=seqs: self.store.hand_over(seqs, to, notify=True)
                    )
                )
        except StoreError as e:
            log.error("drain broke off; what was not handed waits for this daemon", reason=str(e))
        finally:
            self.moving.clear()
        log.info("drained", agents=handed, to=sorted(plan))
        return handed
