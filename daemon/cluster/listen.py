"""What the other daemons tell this one: PostgreSQL's LISTEN on one
connection of its own, in a thread (the driver's wait for notifications
blocks). Each notification is handed to the supervisor in the trio thread:
mail for one of its agents is delivered, a turn's end elsewhere wakes the
waits. No polling: a notification arrives when the sender's transaction
commits.

If the connection breaks, it is made again; whatever was said meanwhile is
covered by looking again once (unread mail of its agents is delivered,
waits look again).
"""

from __future__ import annotations

import contextlib
import threading

import structlog
import trio

from agents import Supervisor
from store import Store
from store._cluster import CHANNEL

log = structlog.get_logger("ikigai.cluster")

_POLL_S = 1.0  # how often the thread looks whether it should stop
_RETRY_S = 1.0


class Listener:
    def __init__(self, store: Store, sup: Supervisor) -> None:
        self.store = store
        self.sup = sup
        self.heard = 0  # notifications received (tests, status)
        self._stop = threading.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        token = trio.lowlevel.current_trio_token()
        listening = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    lambda: trio.to_thread.run_sync(
                        self._listen, token, listening, abandon_on_cancel=True
                    )
                )
                with trio.move_on_after(10):
                    await listening.wait()
                task_status.started()
        finally:
            self._stop.set()

    def _deliver(self, payload: str) -> None:
        self.heard += 1
        self.sup.heard(payload)

    def _caught_up(self) -> None:
        """After a (re)connection: what may have been said meanwhile."""
        for actor in list(self.sup.actors.values()):
            actor.notify_mail()  # a turn that finds no unread mail does nothing
        self.sup.heard("resync:")

    def _listen(self, token: trio.lowlevel.TrioToken, listening: trio.Event) -> None:
        first = True
        while not self._stop.is_set():
            try:
                raw = self.store.engine.raw_connection()
            except Exception as e:
                log.warning("cannot listen for the other daemons", reason=str(e))
                self._stop.wait(_RETRY_S)
                continue
            try:
                conn = raw.driver_connection  # type: ignore[attr-defined]
                conn.autocommit = True
                conn.execute(f"LISTEN {CHANNEL}")
                ready = listening.set if first else self._caught_up
                trio.from_thread.run_sync(ready, trio_token=token)
                first = False
                while not self._stop.is_set():
                    for note in conn.notifies(timeout=_POLL_S):
                        trio.from_thread.run_sync(self._deliver, note.payload, trio_token=token)
            except trio.RunFinishedError:
                return
            except Exception as e:
                log.warning("listening for the other daemons broke; again", reason=str(e))
                self._stop.wait(_RETRY_S)
            finally:
                with contextlib.suppress(Exception):  # it is being dropped either way
                    raw.invalidate()
