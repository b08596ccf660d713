"""One agent: its provider, model, thinking level and system prompt, a queue of
commands, at most one turn at a time (agents/turn.py runs it), and a log of
numbered events.

``cancel()`` stops the turn now: the HTTP stream is closed, running tools'
process groups are killed, and the turn is marked interrupted (kept in
history, left out of the context). ``cancel(at_boundary=True)`` lets the
current provider call or tool batch finish and stops before the next.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import structlog
import trio

from providers.modelspec import ResolvedModel
from providers.types import Message, ThinkingLevel, ToolChoice
from store import AgentRecord, InvalidEntry

from . import _mcp_select as mcp_select
from ._commands import Attached, restored_choice, restored_files, stored_choice, stored_files
from ._commands import CompactCmd as _Compact
from ._commands import PromptCmd as _Prompt
from ._commands import SwitchCmd as _Switch
from ._start import StartAck
from ._traced import traced
from .compactor import Compactor, CompactOutcome
from .deps import ActorDeps, AgentConfig
from .eventlog import EventLog
from .events import AgentEvent, AgentState, ModelSwitched, Notice, Queued, StateChanged, TurnEnded
from .meter import ContextMeter
from .permissions import parse_chain
from .permissions._gate import Approvals
from .tracing import Cause
from .turn import Turn, TurnResult

__all__ = ["Actor", "AgentConfig", "TurnResult"]

log = structlog.get_logger("ikigai.agents")


KEEP_RESULTS = 64  # ended turns remembered for a late wait_turn() (agent.wait names it)


class Actor:
    """One agent's task: a queue of prompts and model switches, at most one
    turn at a time, and an event log subscribers attach to. Everything it
    uses from outside comes in ``deps``; the supervisor runs ``run()``."""

    # ten thousand idle agents: slots instead of a dict each (1.6 KB -> 0.3)
    __slots__ = (
        "_context",
        "_context_lock",
        "_looping",
        "_mail_waiting",
        "_meter",
        "_queue",
        "_repaired",
        "_results",
        "_running",
        "_sleeper",
        "_spawn",
        "_submit_lock",
        "_turn_ended",
        "_waiters",
        "alive",
        "approvals",
        "cwd",
        "deps",
        "last_result",
        "log",
        "mcp",
        "model",
        "name",
        "needs_host",
        "parent",
        "policy",
        "priority",
        "provider",
        "state",
        "system_prompt",
        "thinking_level",
        "tree",
        "uuid",
        "worktree_branch",
    )

    def __init__(
        self, record: AgentRecord, deps: ActorDeps, approvals: Approvals | None = None
    ) -> None:
        self.deps = deps
        # the supervisor's, shared by every agent (session answers); its own when alone
        self.approvals = approvals if approvals is not None else Approvals()
        self.uuid: str = record.uuid
        self.name: str = record.name
        self.parent: str | None = record.parent_uuid
        self.provider: str = record.provider
        self.model: str = record.model
        self.thinking_level: ThinkingLevel = record.thinking_level
        self.system_prompt: str = record.system_prompt or ""
        cfg = deps.config
        # where its tools run: its own folder, or (agents from before there
        # was one) the daemon's
        self.cwd: Path = Path(record.cwd) if record.cwd else cfg.cwd
        # the branch of the worktree its cwd is (the supervisor sets it): the
        # one branch its sandbox lets it move (agents/tools/_gitmounts.py)
        self.worktree_branch: str | None = None
        # its policy chain, ancestors' first; None: the configured default
        self.policy: list[str] | None = parse_chain(record.policy)
        # the MCP servers it may use; None: those marked default in config
        self.mcp: list[str] | None = mcp_select.parse(getattr(record, "mcp", None))
        # its root ancestor (the supervisor sets it): the limiter is fair across trees
        self.tree: str = record.uuid
        # its own priority for every model call (agent.set_priority, inherited
        # by forks); None: each turn's, by who started it
        self.priority: str | None = getattr(record, "priority", None)
        self.log = EventLog(
            self.uuid,
            keep=cfg.event_keep,
            buffer=cfg.subscriber_buffer,
            first_seq=getattr(record, "seq", None) or 1,  # handed over: its seq goes on
        )
        self.state: AgentState = "idle"
        # why it cannot run on this daemon's host (its folder or an MCP server
        # missing here, after an adoption); None: it can. It keeps its queue
        # and mail in the database until it moves to a host that has them
        self.needs_host: str | None = None
        self._running: Turn | None = None
        self.last_result: TurnResult | None = None
        self.alive = True
        # a list: it holds a command or two, and an empty deque costs 760 bytes
        # in each of ten thousand idle agents
        self._queue: list[_Prompt | _Switch | _Compact] = []
        self._meter: ContextMeter | None = None
        self._sleeper: trio.lowlevel.Task | None = None  # run()'s loop, while it waits for work
        # the supervisor's: start a task that does the queued work (work()), so
        # an idle agent holds no task, frames or cancel scope
        self._spawn: Callable[[Actor], None] | None = None
        self._looping = False  # work() runs, or is about to
        self._context: list[Message] | None = None  # the replayed context, in step with the store
        self._turn_ended: trio.Event | None = None  # pulsed at the end of every turn
        self._mail_waiting = False
        self._repaired = False  # dangling turn from a crashed daemon checked
        # made on first use (trio.Lock and Event each hold a parking lot)
        self._context_lock: trio.Lock | None = None
        # queue rows and the in-memory queue in one order
        self._submit_lock: trio.Lock | None = None
        self._results: dict[str, TurnResult] = {}  # the last few ended turns
        self._waiters: dict[str, trio.Event] = {}

    @property
    def meter(self) -> ContextMeter:
        """Its request sizes, calibrated by what providers report (made on first use)."""
        if self._meter is None:
            self._meter = ContextMeter()
        return self._meter

    @meter.setter
    def meter(self, meter: ContextMeter) -> None:
        self._meter = meter

    def _poke(self) -> None:
        """There is work: wake the loop waiting for it, or have one started."""
        task, self._sleeper = self._sleeper, None
        if task is not None:
            trio.lowlevel.reschedule(task)
        elif not self._looping and self._spawn is not None and self.alive:
            self._looping = True
            self._spawn(self)

    async def _wait_for_work(self) -> None:
        """Wait for _poke: the task itself is all an idle agent holds, no Event."""
        self._sleeper = trio.lowlevel.current_task()

        def abort(_: object) -> trio.lowlevel.Abort:
            self._sleeper = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    # ------------------------------------------------------------ observation

    @property
    def current_turn(self) -> str | None:
        return self._running.id if self._running is not None else None

    @property
    def turn_first_row(self) -> int | None:
        """The running turn's user row, once stored."""
        return self._running.first_row if self._running is not None else None

    @property
    def busy(self) -> bool:
        return (
            self.current_turn is not None
            or self._mail_waiting  # mail not yet taken is a turn about to start
            or any(isinstance(c, _Prompt | _Compact) for c in self._queue)
        )

    @property
    def queued(self) -> int:
        return sum(isinstance(c, _Prompt) for c in self._queue)

    @property
    def next_model(self) -> ResolvedModel | None:
        """The last model switch queued behind the running turn."""
        return next((c.resolved for c in reversed(self._queue) if isinstance(c, _Switch)), None)

    def publish(self, event: AgentEvent, turn: str | None = None) -> None:
        self.log.publish(event, turn if turn is not None else self.current_turn)

    def set_state(self, state: AgentState) -> None:
        if state != self.state:
            self.state = state
            self.publish(StateChanged(state=state))

    # ------------------------------------------------------------ commands

    def new_turn_id(self) -> str:
        return f"{self.uuid[-8:]}-{uuidlib.uuid4().hex[:8]}"

    async def submit(
        self,
        text: str,
        *,
        mail_ids: list[int] | None = None,
        priority: str = "interactive",
        attachments: list[Attached] | None = None,
        causes: tuple[Cause, ...] = (),
        tool_choice: ToolChoice | None = None,
        schema: dict[str, Any] | None = None,
    ) -> tuple[str, int]:
        """Queue a prompt, committed to the store before this returns (with
        ``mail_ids``, that mail is marked read in the same transaction).
        ``priority``: who is waiting for it (see _Prompt). ``tool_choice``: its turn's.
        ``causes``: the spans its turn continues (agents/tracing).
        Returns (turn id, position): 0 starts now, N waits behind N."""
        if self.needs_host is not None:
            raise InvalidEntry(
                f"agent {self.name} ({self.uuid}) needs another host: {self.needs_host}"
            )
        turn = self.new_turn_id()
        if self._submit_lock is None:
            self._submit_lock = trio.Lock()
        async with self._submit_lock:
            if not mail_ids and self._idle():
                ack = StartAck()
                files = list(attachments or ())
                prompt = _Prompt(
                    turn, text, None, priority=priority, ack=ack, attachments=files, causes=causes
                )
                prompt.tool_choice, prompt.schema = tool_choice, schema
                self._queue.append(prompt)
                self._poke()
            else:
                ack = None
                # kept in the queue row, across a restart
                queued = await self.deps.db.enqueue_prompt(
                    self.uuid, turn, text, mail_ids=mail_ids,
                    attachments=stored_files(list(attachments or ())),
                    tool_choice=stored_choice(tool_choice), schema=schema,
                )
                self.restore_prompt(
                    turn, text, queued.id, priority=priority, attachments=queued.attachments,
                    causes=causes, tool_choice=queued.tool_choice, schema=queued.schema,
                )
        if ack is not None:
            # like a store call, not abandoned halfway: the answer says whether it is stored
            with trio.CancelScope(shield=True):
                await ack.stored()
            return turn, 0
        position = self.queued - 1 + (1 if self.current_turn is not None else 0)
        if position:
            self.publish(Queued(turn=turn, position=position), turn)
        return turn, position

    def _idle(self) -> bool:
        """Nothing runs or waits: a prompt now would start at once."""
        return self._running is None and not self._queue and not self._mail_waiting and self.alive

    def resume_turn(self, turn: str, text: str, first_row: int) -> None:
        """A turn a daemon stop left waiting for approval: it runs first, from
        its tool step, and asks again (on restore)."""
        self._repaired = True  # its tool calls without results are meant: not a dangling turn
        self._queue.insert(0, _Prompt(turn=turn, text=text, queue_id=None, resume_from=first_row))
        self._poke()

    def begin_stored(
        self,
        turn: str,
        text: str,
        first_row: int,
        *,
        priority: str,
        context: list[Message] | None = None,
        causes: tuple[Cause, ...] = (),
    ) -> None:
        """Run a turn whose user row (and open-turn mark) the transaction that
        created this agent wrote (Store.fork_many). ``context``: its replayed
        context, if the caller has it (forks of one parent share their prefix)."""
        self._repaired = True  # a new agent: no turn of a crashed daemon to repair
        if context is not None and self._context is None:
            self._context = context
        self._queue.append(
            _Prompt(turn, text, None, first_row, priority=priority, causes=causes)
        )
        self._poke()

    def restore_prompt(
        self,
        turn: str,
        text: str,
        queue_id: int | None,
        *,
        priority: str = "background",
        attachments: list[dict[str, Any]] | None = None,
        causes: tuple[Cause, ...] = (),
        tool_choice: dict[str, str] | None = None,  # as the queue row keeps it
        schema: dict[str, Any] | None = None,
    ) -> None:
        """Queue a prompt already stored (on restore, in the store's order:
        nobody's call waits on it any more, so background by default)."""
        files = restored_files(attachments or [])
        prompt = _Prompt(turn, text, queue_id, priority=priority, attachments=files, causes=causes)
        prompt.tool_choice, prompt.schema = restored_choice(tool_choice), schema
        self._queue.append(prompt)
        self._poke()

    def knows_turn(self, turn: str) -> bool:
        """Whether ``wait_turn(turn)`` will answer: the turn runs, waits in
        the queue, or ended recently enough that its outcome is kept."""
        if self.current_turn == turn or turn in self._results:
            return True
        return any(getattr(cmd, "turn", None) == turn for cmd in self._queue)

    def turn_pending(self, turn: str) -> bool:
        """The turn runs or waits in the queue."""
        return self.current_turn == turn or any(
            getattr(cmd, "turn", None) == turn for cmd in self._queue
        )

    def turn_outcome(self, turn: str) -> TurnResult | None:
        """How the turn ended, while its outcome is kept."""
        return self._results.get(turn)

    async def wait_turn(self, turn: str) -> TurnResult | None:
        """How ``turn`` ended; None if the agent ended first. Independent of
        any subscriber, so a burst that makes subscribers lag cannot fail it."""
        while turn not in self._results:
            if not self.alive:
                return None
            event = self._waiters.setdefault(turn, trio.Event())
            await event.wait()
        return self._results[turn]

    def ended(self) -> None:
        """The agent was killed: wake every wait_turn."""
        self.alive = False
        for cmd in self._queue:
            if isinstance(cmd, _Compact):
                cmd.done.set()  # its outcome stays None: the agent is gone
            elif isinstance(cmd, _Prompt) and cmd.ack is not None:
                cmd.ack.refuse(InvalidEntry(f"agent {self.name} ({self.uuid}) was killed"))
        for event in self._waiters.values():
            event.set()
        self._waiters.clear()

    def queue_switch(self, resolved: ResolvedModel) -> _Switch:
        cmd = _Switch(resolved=resolved)
        self._queue.append(cmd)
        self._poke()
        return cmd

    def queue_compact(self, keep_turns: int | None) -> _Compact:
        """Compact between turns: prompts sent meanwhile wait behind it."""
        cmd = _Compact(keep_turns=keep_turns)
        self._queue.append(cmd)
        self._poke()
        return cmd

    def cancel(self, *, at_boundary: bool = False, suspend: bool = False) -> bool:
        """Cancel the running turn (and nothing queued). False if no turn runs.
        ``suspend`` (a daemon stop): a turn waiting for approval stays pending."""
        if self._running is None:
            return False
        self._running.cancel(at_boundary=at_boundary, suspend=suspend)
        return True

    def drop_queue(self) -> int:
        n = self.queued
        for cmd in self._queue:
            if isinstance(cmd, _Prompt) and cmd.ack is not None:
                cmd.ack.refuse(InvalidEntry(f"agent {self.name} ({self.uuid}) was killed"))
        self._queue = [c for c in self._queue if not isinstance(c, _Prompt)]
        return n

    def notify_mail(self) -> None:
        if self.needs_host is not None:  # kept unread until it runs where it can
            return
        self._mail_waiting = True
        self._poke()

    async def wait_turn_end(self) -> None:
        if self._turn_ended is None:
            self._turn_ended = trio.Event()
        await self._turn_ended.wait()

    def invalidate_context(self) -> None:
        self._context = None
        if self._meter is not None:
            self._meter.prefix.clear()  # its replay was made from the list just dropped

    # ------------------------------------------------------------ the loop

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The agent's loop, for ever: each command in turn, waiting when there
        is none (an actor run on its own; the supervisor calls work())."""
        task_status.started()
        try:
            while True:
                if not await self._next():
                    await self._wait_for_work()
        finally:
            self._refuse_unstarted()

    async def work(self) -> None:
        """Every queued command, then return: the supervisor starts this when
        work arrives (_poke), so ten thousand idle agents hold no task."""
        try:
            while await self._next():
                pass
        finally:
            self._looping = False
            if self._queue:
                self._refuse_unstarted()

    def _refuse_unstarted(self) -> None:
        # however the loop ends, no submitter waits for a start that will not
        # come; a loop restarted after a crash does not run what it was told failed
        for cmd in self._queue:
            if isinstance(cmd, _Prompt) and cmd.ack is not None:
                cmd.ack.refuse(InvalidEntry(f"agent {self.name} ({self.uuid}) stopped"))
        self._queue = [c for c in self._queue if not (isinstance(c, _Prompt) and c.ack is not None)]

    async def _next(self) -> bool:
        """The next command done; False when there was none."""
        if not self._queue and self._mail_waiting:
            await self._take_mail()
        if not self._queue:
            return False
        cmd = self._queue.pop(0)
        if isinstance(cmd, _Switch):
            await self.apply_switch(cmd.resolved)
            cmd.done.set()
        elif isinstance(cmd, _Compact):
            await self._compact(cmd)
        else:
            await self._turn(cmd)
        return True

    async def _take_mail(self) -> None:
        # the flag stays up until the prompt is queued, so the agent never looks idle in between
        mail = await self.deps.db.inbox(self.uuid, unread=True)
        awaited = self.deps.neighbours.awaited_by(self.uuid)
        mail = [m for m in mail if m.from_uuid not in awaited]
        if not mail:
            self._mail_waiting = False
            return
        lines = []
        for m in mail:
            sender = self.deps.neighbours.label_of(m.from_uuid) if m.from_uuid else "a person"
            lines.append(f"[mail from {sender}]\n{m.body}")
        tracer = self.deps.tracer
        causes = tuple(tracer.mail_causes([m.id for m in mail])) if tracer is not None else ()
        # read and queued in one transaction: a crash in between loses nothing
        try:
            await self.submit(
                "\n\n".join(lines),
                mail_ids=[m.id for m in mail],
                priority="background",
                causes=causes,
            )
        except InvalidEntry:
            # a wait took some of it meanwhile: the flag is still up, read again
            await trio.sleep(0.05)
            return
        self._mail_waiting = False

    async def context(self) -> list[Message]:
        # one load at a time: two callers loading at once would each get their
        # own list, and a turn appending to one would send the other
        if self._context_lock is None:
            self._context_lock = trio.Lock()
        async with self._context_lock:
            if self._context is None:
                if not self._repaired:
                    await self._repair_dangling_turn()
                self._context = await self.deps.db.replay(self.uuid)
            return self._context

    def loaded_context(self) -> list[Message] | None:
        """The context if it is loaded (for readers that must not load it)."""
        return self._context

    async def _repair_dangling_turn(self) -> None:
        """A daemon that died mid-turn can leave tool calls with no results,
        which no provider accepts: mark that turn interrupted. Done on first
        use rather than at start, so restoring 10,000 agents reads no history."""
        self._repaired = True
        start = await self.deps.db.dangling_turn_start(self.uuid)
        if start is not None:
            await self.deps.db.append_interrupted(self.uuid, start)
            self.publish(Notice(text="a turn cut short by a daemon stop was marked interrupted"))

    async def apply_switch(self, resolved: ResolvedModel) -> None:
        await self.deps.db.switch_model(
            self.uuid, resolved.provider, resolved.model, resolved.thinking.level
        )
        self.provider, self.model, self.thinking_level = (
            resolved.provider,
            resolved.model,
            resolved.thinking.level,
        )
        self.publish(
            ModelSwitched(
                provider=resolved.provider,
                model=resolved.model,
                thinking_level=resolved.thinking.level,
                description=resolved.description,
                warnings=list(resolved.warnings),
            )
        )

    async def _compact(self, cmd: _Compact) -> None:
        try:
            # asked for by a person (agent.compact)
            compactor = Compactor(self, self.deps, priority=self.priority or "interactive")
            cmd.outcome = await compactor.compact(reason="manual", keep_turns=cmd.keep_turns)
        except Exception as exc:  # a bug here must not end the agent
            log.exception("compaction crashed", agent=self.uuid)
            cmd.outcome = CompactOutcome(
                compacted=False, reason="manual", message=f"internal error: {type(exc).__name__}"
            )
        finally:
            self.set_state("idle")
            cmd.done.set()

    async def _turn(self, cmd: _Prompt) -> None:
        turn = Turn(
            self,
            self.deps,
            cmd.turn,
            cmd.text,
            cmd.queue_id,
            resume_from=cmd.resume_from,
            priority=self.priority or cmd.priority,
            ack=cmd.ack,
            attachments=cmd.attachments,
            tool_choice=cmd.tool_choice,
            schema=cmd.schema,
        )
        self._running = turn
        try:
            tracer = self.deps.tracer
            result = await (turn.run() if tracer is None else traced(tracer, self, turn, cmd))
        finally:
            self._running = None
        if result is None:  # its start was refused: the submitter was told, nothing ran
            return
        self.last_result = result
        self._results[turn.id] = result
        if len(self._results) > KEEP_RESULTS:
            del self._results[next(iter(self._results))]
        waiter = self._waiters.pop(turn.id, None)
        if waiter is not None:
            waiter.set()
        self.set_state("idle")
        self.publish(
            TurnEnded(
                status=result.status,
                error=result.error,
                message=result.message,
                usage=result.usage,
                cost_usd=result.cost_usd,
                data=result.data if result.schema else msgspec.UNSET,
            ),
            turn.id,
        )
        if self._turn_ended is not None:
            self._turn_ended.set()
            self._turn_ended = None
        self.deps.neighbours.turn_finished(self.uuid)
