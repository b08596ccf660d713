"""What a supervisor does when other daemons share its database
(daemon/cluster): which agents they run, what it tells them through
PostgreSQL's NOTIFY (a turn ended, an agent died: waits there look again),
and what it hears from them (mail for its agents, agents handed to it).
A mixin of Supervisor, whose attributes it uses."""

from __future__ import annotations

from typing import Any

import structlog
import trio
import trio.lowlevel

from store import StoreError

log = structlog.get_logger("ikigai.agents")


class SharedDatabase:
    """Supervisor's methods for a database shared with other daemons."""

    shared: bool
    db: Any
    actors: dict[str, Any]
    _nursery: trio.Nursery | None
    _to_adopt: set[str]

    def _pulse(self) -> None: ...  # Supervisor's: wakes the waits

    async def adopt(self, uuids: Any) -> int: ...  # Supervisor's

    def elsewhere(self, record: Any) -> bool:
        """Does another daemon of a shared database run this live agent?"""
        me = self.db.store.daemon_id
        return self.shared and record.daemon is not None and record.daemon != me

    def tell_others(self, payload: str) -> None:
        """NOTIFY the other daemons (a wait there may be on this agent)."""
        if self.shared and self._nursery is not None:
            self._nursery.start_soon(self._tell, payload)

    async def _tell(self, payload: str) -> None:
        try:
            await self.db.call(self.db.store.notify, payload)
        except StoreError as e:
            log.warning("could not notify the other daemons", reason=str(e))

    def heard(self, payload: str) -> None:
        """What another daemon told (daemon/cluster/listen.py): mail for one
        of ours is delivered; anything else wakes the waits to look again."""
        kind, _, uuid = payload.partition(":")
        if kind == "mail" and uuid in self.actors:
            self.actors[uuid].notify_mail()
        elif kind == "adopt":  # "adopt:<daemon>:<agent>": handed to a daemon (a drain)
            daemon, _, uuid = uuid.partition(":")
            if daemon == self.db.store.daemon_id and uuid not in self.actors:
                self.adopt_soon(uuid)
        self._pulse()

    def adopt_soon(self, uuid: str) -> None:
        """Adopt ``uuid`` with the others told in the same breath: one restore
        for a whole drain's worth, not one each."""
        first = not self._to_adopt
        self._to_adopt.add(uuid)
        if first and self._nursery is not None:
            self._nursery.start_soon(self._adopt_told)

    async def _adopt_told(self) -> None:
        await trio.lowlevel.checkpoint()  # the rest of the burst arrives first
        uuids, self._to_adopt = self._to_adopt, set()
        try:
            await self.adopt(uuids)
        except StoreError as e:  # the heartbeat looks for them again
            log.warning("could not adopt agents handed over", reason=str(e), agents=len(uuids))

    def _pulse(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

