"""The model's ``wait`` tool, answered by the supervisor: until each agent
named has mailed the caller, finished its work, or died. Their mail is held
for the wait meanwhile, not delivered as a new prompt of the caller."""

from __future__ import annotations

import math
from typing import Any

import trio


async def wait_for(
    sup: Any,
    caller: str,
    refs: list[str],
    timeout: float | None,  # noqa: ASYNC109 - the model's own wait limit, part of the tool
) -> list[dict[str, Any]]:
    """Until each agent has mailed ``caller``, finished its work, or died."""
    records = [await sup.resolve(r) for r in refs]
    watched = sup.waiting.setdefault(caller, {})
    for rec in records:  # their mail is for this wait, not a new prompt of the caller
        watched[rec.uuid] = watched.get(rec.uuid, 0) + 1
    try:
        results = await _wait_for(sup, caller, records, timeout)
        tracer = sup.deps.tracer
        if tracer is not None:  # the wait's span links to the turns it waited for
            for rec in records:
                last = tracer.last_turn(rec.uuid)
                if last is not None:
                    tracer.link(last, "wait")
        return results
    finally:
        for rec in records:
            watched[rec.uuid] -= 1
            if not watched[rec.uuid]:
                del watched[rec.uuid]
        if not watched:
            sup.waiting.pop(caller, None)
        if caller in sup.actors:
            sup.actors[caller].notify_mail()  # whatever the wait did not take

async def _wait_for(
    sup: Any,
    caller: str,
    records: list[Any],
    timeout: float | None,  # noqa: ASYNC109 - the model's own wait limit, part of the tool
) -> list[dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    deadline = trio.current_time() + (timeout if timeout is not None else math.inf)
    while True:
        for rec in records:
            if rec.uuid in results:
                continue
            # another daemon runs it: the database says how it is (that daemon's
            # NOTIFY of each turn's end wakes this loop). Read before the inbox:
            # a turn found ended has committed the mail it sent
            remote = (
                await sup.db.call(sup.db.store.activity, rec.uuid)
                if rec.uuid not in sup.actors and sup.elsewhere(rec)
                else None
            )
            mail = [
                m for m in await sup.db.inbox(caller, unread=True) if m.from_uuid == rec.uuid
            ]
            if mail:
                await sup.db.mark_read(caller, [m.id for m in mail])
                results[rec.uuid] = {
                    "agent": rec.uuid,
                    "name": rec.name,
                    "status": "answered",
                    "reply": "\n\n".join(m.body for m in mail),
                }
                continue
            actor = sup.actors.get(rec.uuid)
            if remote is not None:
                alive, busy, reply = remote
                if not alive:
                    results[rec.uuid] = {
                        "agent": rec.uuid,
                        "name": rec.name,
                        "status": "dead",
                        "reply": "",
                    }
                elif not busy:
                    results[rec.uuid] = {
                        "agent": rec.uuid,
                        "name": rec.name,
                        "status": "idle",
                        "reply": reply,
                    }
                continue
            if actor is None:
                results[rec.uuid] = {
                    "agent": rec.uuid,
                    "name": rec.name,
                    "status": "dead",
                    "reply": "",
                }
            elif not actor.busy:
                last = actor.last_result
                results[rec.uuid] = {
                    "agent": rec.uuid,
                    "name": rec.name,
                    "status": last.status if last else "idle",
                    "reply": last.reply if last else "",
                }
        if len(results) == len(records):
            break
        changed = sup._changed
        with trio.move_on_at(deadline):
            await changed.wait()
        if trio.current_time() >= deadline:
            break
    return [
        results.get(
            rec.uuid, {"agent": rec.uuid, "name": rec.name, "status": "running", "reply": ""}
        )
        for rec in records
    ]
