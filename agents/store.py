"""The agents layer's view of the store: the synchronous Store, called from
trio through worker threads (the Store serializes SQLite writes itself).

Every write returns once it is committed, so an acknowledged message survives
a crash of the daemon.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import queue
import secrets
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

import outcome
import trio

from providers.types import Message, Response
from store import (
    AgentRecord,
    AgentRef,
    Budget,
    ForkChild,
    MailRecord,
    MessageRecord,
    QueuedPrompt,
    Replayed,
    Store,
    UsageReport,
    UsageTotals,
    WorktreeSpec,
)

T = TypeVar("T")


class Listing(NamedTuple):
    """What AsyncStore.listing reads."""

    records: list[AgentRecord]  # the listed agents, oldest first
    shorts: dict[str, str]  # every agent's short id (listed or not)
    totals: dict[str, UsageTotals]  # own usage of the agents that have some
    active: dict[str, datetime]  # newest own row's time of the agents that have rows

SHORT_REF = 8  # hex characters a displayed id has at least


def short_refs(
    wanted: Iterable[str], records: Iterable[AgentRecord | AgentRef]
) -> dict[str, str]:
    """For each uuid of ``wanted``, the shortest prefix (at least SHORT_REF
    characters) that Store.resolve takes for that agent alone, given
    ``records``: every agent sharing its first SHORT_REF characters, dead ones
    too, since refs resolve against them. UUIDv7 ids begin with their creation
    time, so agents made in one burst share far more than SHORT_REF."""
    records = list(records)
    ids = sorted({r.uuid for r in records}.union(wanted))
    # resolve() prefers a live agent's name to an id prefix
    names = {r.name for r in records if r.alive}
    cut = _cuts(ids)
    at = {u: i for i, u in enumerate(ids)}
    out: dict[str, str] = {}
    for u in wanted:
        i = at[u]
        need = max(SHORT_REF, cut[i], cut[i - 1] if i else 0)
        while need < len(u) and (u[need - 1] == "-" or u[:need] in names):
            need += 1
        out[u] = u[:need]
    return out


_WHOLE = 1 << 30  # a prefix longer than any id: the whole id


def _cuts(ids: list[str]) -> list[int]:
    """For each of the sorted ``ids``, what tells it from the next apart:
    their common prefix and one character more; all of both (_WHOLE) when
    one begins the other. Once a pair, not once a side: a listing asks for
    every id. (The last id has no next: 0.)"""
    cut = [0] * len(ids)
    width = len(ids[0]) if ids else 0
    if all(len(u) == width and u.isascii() for u in ids):  # uuids: the common case
        # the first character two ids differ at is the highest byte their XOR
        # sets: a few C calls a pair, where comparing characters is a loop
        ints = [int.from_bytes(u.encode(), "big") for u in ids]
        for i, (x, y) in enumerate(itertools.pairwise(ints)):
            cut[i] = width - ((x ^ y).bit_length() + 7) // 8 + 1
        return cut
    k = SHORT_REF - 1
    for i, (a, b) in enumerate(itertools.pairwise(ids)):
        # (else fewer than SHORT_REF characters tell them apart: 0 will do)
        if a[:k] == b[:k] or len(a) < k or len(b) < k:
            same = _common(a, b)
            cut[i] = same + 1 if same < min(len(a), len(b)) else _WHOLE
    return cut


def _common(a: str, b: str) -> int:
    """The length of the common prefix of two strings, by halving: slices
    compare in C, where a loop over characters would run in Python."""
    hi = min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    lo = 0  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class Workers:
    """Threads that run store calls for trio tasks, at most ``limit`` at once.

    What trio.to_thread.run_sync does, for a fraction of its CPU: a call is a
    queue put, and a worker that finds more calls queued runs them without
    sleeping, so under load calls take no thread wake-up, limiter or
    thread-cache hand-off each. A worker left idle for ``idle`` seconds exits.
    Like run_sync, a call is not abandoned when its task is cancelled: the
    task waits for the result (a store call is committed when it returns).
    Results go back to the trio thread in batches: one wake-up for every call
    that finished meanwhile. One Workers serves one trio run."""

    def __init__(self, limit: int, *, idle: float = 10.0) -> None:
        if limit < 1:
            raise ValueError(f"store worker threads must be at least 1, not {limit}")
        self._limit = limit
        self._idle_timeout = idle
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0  # workers waiting for a job
        self._queued = 0  # jobs no worker has taken yet
        # results waiting for the trio thread, and whether it was told: calls
        # a group commit answers together wake the loop once, not once each
        self._done: list[tuple[trio.lowlevel.Task, outcome.Outcome[Any]]] = []
        self._told = False

    @property
    def threads(self) -> int:
        """Worker threads alive now (busy or idle)."""
        with self._lock:
            return self._threads

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread; its result, or its exception raised here."""
        await trio.lowlevel.checkpoint_if_cancelled()
        task = trio.lowlevel.current_task()
        token = trio.lowlevel.current_trio_token()
        ctx = contextvars.copy_context()

        def job() -> None:
            result = outcome.capture(ctx.run, fn)
            with self._lock:
                self._done.append((task, result))
                if self._told:
                    return
                self._told = True
            token.run_sync_soon(self._answer)

        with self._lock:
            # counted and queued under the lock: a worker that saw no job and
            # is exiting checks the count under it first
            self._jobs.put(job)
            self._queued += 1
            if self._queued > self._idle and self._threads < self._limit:
                self._threads += 1
                threading.Thread(target=self._work, name="ikigai-store", daemon=True).start()
        return await trio.lowlevel.wait_task_rescheduled(  # type: ignore[no-any-return]
            lambda _: trio.lowlevel.Abort.FAILED
        )

    def _answer(self) -> None:
        """In the trio thread: every finished call's task goes on with its result."""
        with self._lock:
            done, self._done = self._done, []
            self._told = False
        for task, result in done:
            trio.lowlevel.reschedule(task, result)

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            try:
                job = self._jobs.get(timeout=self._idle_timeout)
            except queue.Empty:
                with self._lock:
                    self._idle -= 1
                    if self._queued == 0:
                        self._threads -= 1
                        return
                continue
            with self._lock:
                self._idle -= 1
                self._queued -= 1
            job()


class AsyncStore:
    """The synchronous Store seen from trio: each call runs in a worker thread
    (at most ``threads`` at once) and returns once its transaction is
    committed. Thin on purpose: the store owns the SQL and the rules."""

    def __init__(self, store: Store, *, threads: int = 8) -> None:
        self.store = store
        self._workers = Workers(threads)
        # every agent's ref and short id as the last listing found them
        self._shorts: tuple[list[AgentRef], dict[str, str]] | None = None

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Any Store method, in a worker thread (for reads this facade does not wrap)."""
        return await self._workers.run(functools.partial(fn, *args, **kwargs))

    # ------------------------------------------------------------ agents

    async def list_agents(self, *, include_dead: bool = False) -> list[AgentRecord]:
        return await self.call(self.store.list_agents, include_dead=include_dead)

    async def resolve(self, ref: str) -> AgentRecord:
        return await self.call(self.store.resolve, ref)

    async def find_agents(self, ref: str) -> list[AgentRecord]:
        return await self.call(self.store.find_agents, ref)

    async def listing(self, *, include_dead: bool = False) -> Listing:
        """What agent.list reads of the store, in one worker thread: the
        listed agents (not removed ones; dead ones with ``include_dead``),
        every agent's short id, and the usage and last activity kept by
        Store.listing_facts."""

        def read() -> Listing:
            records, refs = self.store.listing_records(include_dead=include_dead)
            kept = self._shorts
            if kept is not None and kept[0] == refs:
                shorts = kept[1]  # no agent made, renamed, killed or removed since
            else:
                shorts = short_refs([r.uuid for r in refs], refs)
                self._shorts = (refs, shorts)
            facts = self.store.listing_facts()
            return Listing(records, shorts, facts.totals, facts.active)

        return await self.call(read)

    async def short_refs(self, uuids: list[str]) -> dict[str, str]:
        """Each agent's shortest unique id prefix (see short_refs), in one worker thread."""

        def find() -> dict[str, str]:
            if len(uuids) > 4:  # a listing: one query for every agent beats one per agent
                return short_refs(uuids, self.store.agent_refs())
            found = [r for u in set(uuids) for r in self.store.find_agents(u[:SHORT_REF])]
            return short_refs(uuids, found)

        return await self.call(find)

    async def usage_totals(self) -> dict[str, UsageTotals]:
        """Store.usage_totals(), from the values the store keeps up to date."""
        return (await self.call(self.store.listing_facts)).totals

    async def usage(self, uuid: str, *, descendants: bool = False) -> UsageReport:
        return await self.call(self.store.usage, uuid, descendants=descendants)

    async def usage_of_trees(self, uuids: list[str]) -> list[UsageReport]:
        """Each agent's report with its descendants, in one worker thread."""
        return await self.call(lambda: [self.store.usage(u, descendants=True) for u in uuids])

    async def history(
        self, uuid: str, *, limit: int | None = None, before: int | None = None
    ) -> list[MessageRecord]:
        return await self.call(self.store.history, uuid, limit=limit, before=before)

    async def create_agent(
        self,
        *,
        name: str | None,
        provider: str,
        model: str,
        thinking_level: str,
        system_prompt: str = "",
        parent_uuid: str | None = None,
        cwd: str | None = None,
        policy: str | None = None,
        mcp: str | None = None,
        priority: str | None = None,
        budget: Budget | None = None,
        uuid: str | None = None,
        worktree: WorktreeSpec | None = None,
    ) -> AgentRecord:
        return await self.call(
            self.store.create_agent,
            name or f"agent-{secrets.token_hex(3)}",
            provider=provider,
            model=model,
            thinking_level=thinking_level,
            system_prompt=system_prompt,
            parent_uuid=parent_uuid,
            cwd=cwd,
            policy=policy,
            mcp=mcp,
            priority=priority,
            budget=budget,
            uuid=uuid,
            worktree=worktree,
        )

    async def fork(self, parent_uuid: str, **kwargs: Any) -> AgentRecord:
        return await self.call(self.store.fork, parent_uuid, **kwargs)

    async def fork_many(
        self, parent_uuid: str, children: list[ForkChild], **kwargs: Any
    ) -> list[tuple[AgentRecord, MessageRecord | None]]:
        return await self.call(self.store.fork_many, parent_uuid, children, **kwargs)

    async def descendants(self, uuid: str, *, live_only: bool = True) -> list[str]:
        rows = await self.call(self.store.descendants, uuid, include_dead=not live_only)
        return [r.uuid for r in rows]

    async def kill(self, uuids: list[str], *, reason: str) -> None:
        def kill_all() -> None:
            for uuid in reversed(uuids):  # children first: a parent never dies before its child
                if self.store.get_agent(uuid).alive:
                    self.store.mark_dead(uuid, reason=reason)

        await self.call(kill_all)

    async def switch_model(self, uuid: str, provider: str, model: str, thinking_level: str) -> None:
        await self.call(
            self.store.switch_model,
            uuid,
            provider=provider,
            model=model,
            thinking_level=thinking_level,
        )

    async def set_system(self, uuid: str, text: str) -> None:
        await self.call(self.store.set_system_prompt, uuid, text)

    # ------------------------------------------------------------ history

    async def append_user(self, uuid: str, message: Message) -> int:
        return (await self.call(self.store.append_user, uuid, message)).id

    async def enqueue_prompt(
        self,
        uuid: str,
        turn: str,
        text: str,
        *,
        mail_ids: list[int] | None = None,
        attachments: list[dict[str, Any]] | None = None,
        tool_choice: dict[str, str] | None = None,
        schema: dict[str, Any] | None = None,
    ) -> QueuedPrompt:
        enqueue, ids, files = self.store.enqueue_prompt, mail_ids or (), attachments or ()
        return await self.call(
            enqueue, uuid, turn, text, mail_ids=ids, attachments=files,
            tool_choice=tool_choice, schema=schema,
        )

    async def start_turn(
        self, uuid: str, message: Message, *, queue_id: int | None, turn: str
    ) -> int:
        return (
            await self.call(self.store.start_turn, uuid, message, queue_id=queue_id, turn=turn)
        ).id

    async def end_turn(self, uuid: str) -> None:
        await self.call(self.store.end_turn, uuid)

    async def append_assistant(
        self, uuid: str, message: Message, response: Response, *, end_turn: bool = False
    ) -> int:
        rows = await self.call(
            self.store.append_assistant,
            uuid,
            message,
            usage=response.usage,
            finish_reason=response.finish_reason,
            end_turn=end_turn,
        )
        return rows[0].id

    async def append_tool_results(
        self, uuid: str, message: Message, *, end_turn: bool = False
    ) -> int:
        return (
            await self.call(self.store.append_tool_results, uuid, message, end_turn=end_turn)
        ).id

    async def append_interrupted(self, uuid: str, turn_start: int) -> int:
        return (await self.call(self.store.mark_interrupted, uuid, turn_start)).id

    async def control(self, uuid: str, kind: str, label: str | None) -> int:
        if kind == "clear":
            row = await self.call(self.store.clear, uuid)
        elif kind == "mark":
            row = await self.call(self.store.mark, uuid, label)
        elif kind == "rewind":
            row = await self.call(self.store.rewind, uuid, label)
        else:
            raise ValueError(f"unknown history operation {kind!r} (clear, mark, rewind)")
        return row.id

    async def last_row_before(self, uuid: str, before: int) -> int | None:
        """The newest row the agent sees with an id below ``before``."""
        rows = await self.call(self.store.history, uuid, limit=1, before=before)
        return rows[-1].id if rows else None

    async def replay(self, uuid: str) -> list[Message]:
        return await self.call(self.store.replay, uuid)

    async def dangling_turn_start(self, uuid: str) -> int | None:
        """The first row of a turn that ended with tool calls and no results (a
        daemon that died mid-turn), or None."""

        def find() -> int | None:
            messages = self.store.replay(uuid)
            if not messages or messages[-1].role != "assistant" or not messages[-1].tool_calls:
                return None
            ids = self.store.replay_ids(uuid)
            for msg, row_id in zip(reversed(messages), reversed(ids), strict=True):
                if msg.role == "user":
                    return row_id
            return None

        return await self.call(find)

    # ------------------------------------------------------------ mail

    async def send_mail(self, sender: str | None, to: str, body: str) -> int:
        return (await self.call(self.store.send_mail, to, body, from_uuid=sender)).id

    async def inbox(self, uuid: str, *, unread: bool = True) -> list[MailRecord]:
        return await self.call(self.store.inbox, uuid, unread_only=unread)

    async def mark_read(self, uuid: str, ids: list[int]) -> int:
        return await self.call(self.store.mark_read, uuid, ids)

    # ------------------------------------------------------------ compaction

    async def compact(self, uuid: str, **kwargs: Any) -> MessageRecord:
        """Store.compact: upto, summary, data, usage, provider, model."""
        return await self.call(self.store.compact, uuid, **kwargs)

    async def replay_entries(self, uuid: str) -> list[Replayed]:
        return await self.call(self.store.replay_entries, uuid)
