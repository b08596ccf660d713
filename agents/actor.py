"""One agent: its provider, model, thinking level and system prompt, a queue of
commands, at most one turn at a time, and a log of numbered events.

A turn: store the user message (durably) -> request from the replayed context
-> stream from the provider, publishing every event -> store the assistant
message -> run its tool calls (concurrently, bounded) -> store the results ->
again, until the model stops, the tool-turn limit is reached, or the turn is
cancelled. ``cancel()`` stops the turn now: the HTTP stream is closed, running
tools' process groups are killed, and the turn is marked interrupted (kept in
history, left out of the context). ``cancel(at_boundary=True)`` lets the
current provider call or tool batch finish and stops before the next.
"""

from __future__ import annotations

import uuid as uuidlib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
import trio

from providers.accumulate import Accumulator
from providers.errors import transport_error
from providers.modelspec import ResolvedModel
from providers.secrets import scrub
from providers.types import (
    Message,
    ProviderError,
    Request,
    Response,
    TextBlock,
    ThinkingConfig,
    ThinkingLevel,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)
from store import AgentRecord, InvalidEntry

from .context import for_provider
from .eventlog import EventLog
from .events import (
    AgentEvent,
    AgentState,
    FallbackUsed,
    ModelSwitched,
    Notice,
    Queued,
    RetryScheduled,
    StateChanged,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
    TurnStatus,
)
from .retry import RetryPolicy
from .tools import ToolContext

if TYPE_CHECKING:
    from .supervisor import Supervisor

log = structlog.get_logger("ikigai.agents")

_EVENT_CONTENT = 2000  # characters of a tool result shown in its event


@dataclass
class AgentConfig:
    max_tool_turns: int = 50
    max_output_tokens: int = 4096
    tool_concurrency: int = 8
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    event_keep: int = 256
    subscriber_buffer: int = 512
    cwd: Path = field(default_factory=Path.cwd)
    fallbacks: list[str] = field(default_factory=list)  # MODEL[/THINKING] tried on retryable errors


@dataclass
class _Prompt:
    turn: str
    text: str
    queue_id: int | None  # its prompt_queue row (None: not stored, tests only)


@dataclass
class _Switch:
    resolved: ResolvedModel
    done: trio.Event = field(default_factory=trio.Event)


@dataclass
class TurnResult:
    turn: str
    status: TurnStatus
    reply: str
    error: ProviderError | None = None
    message: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None


_KEEP_RESULTS = 64  # ended turns remembered for a late wait_turn()
_PUBLISH_SLICE = 64  # events published between checkpoints, so subscribers keep up with a burst


class Actor:
    def __init__(self, record: AgentRecord, supervisor: Supervisor) -> None:
        self.sup = supervisor
        self.uuid: str = record.uuid
        self.name: str = record.name
        self.parent: str | None = record.parent_uuid
        self.provider: str = record.provider
        self.model: str = record.model
        self.thinking_level: ThinkingLevel = record.thinking_level
        self.system_prompt: str = record.system_prompt or ""
        cfg = supervisor.config
        self.log = EventLog(self.uuid, keep=cfg.event_keep, buffer=cfg.subscriber_buffer)
        self.state: AgentState = "idle"
        self.current_turn: str | None = None
        self.turn_first_row: int | None = None  # the running turn's user row
        self.last_result: TurnResult | None = None
        self.alive = True
        self._queue: deque[_Prompt | _Switch] = deque()
        self._wake = trio.Event()
        self._turn_scope: trio.CancelScope | None = None
        self._stop_at_boundary = False
        self._context: list[Message] | None = None  # the replayed context, kept in step with the store
        self._turn_ended = trio.Event()  # pulsed at the end of every turn
        self._mail_waiting = False
        self._repaired = False  # dangling turn from a crashed daemon checked
        self._submit_lock = trio.Lock()  # queue rows and the in-memory queue in one order
        self._results: dict[str, TurnResult] = {}  # the last few ended turns
        self._waiters: dict[str, trio.Event] = {}

    # ------------------------------------------------------------ observation

    @property
    def busy(self) -> bool:
        return (
            self.current_turn is not None
            or self._mail_waiting  # mail not yet taken is a turn about to start
            or any(isinstance(c, _Prompt) for c in self._queue)
        )

    @property
    def queued(self) -> int:
        return sum(isinstance(c, _Prompt) for c in self._queue)

    def _publish(self, event: AgentEvent, turn: str | None = None) -> None:
        self.log.publish(event, turn if turn is not None else self.current_turn)

    def _set_state(self, state: AgentState) -> None:
        if state != self.state:
            self.state = state
            self._publish(StateChanged(state=state))

    # ------------------------------------------------------------ commands

    def new_turn_id(self) -> str:
        return f"{self.uuid[-8:]}-{uuidlib.uuid4().hex[:8]}"

    async def submit(self, text: str, *, mail_ids: list[int] | None = None) -> tuple[str, int]:
        """Queue a prompt, committed to the store before this returns (with
        ``mail_ids``, that mail is marked read in the same transaction).
        Returns (turn id, position): 0 starts now, N waits behind N."""
        turn = self.new_turn_id()
        async with self._submit_lock:
            queued = await self.sup.db.enqueue_prompt(self.uuid, turn, text, mail_ids=mail_ids)
            self.restore_prompt(turn, text, queued.id)
        position = self.queued - 1 + (1 if self.current_turn is not None else 0)
        if position:
            self._publish(Queued(turn=turn, position=position), turn)
        return turn, position

    def restore_prompt(self, turn: str, text: str, queue_id: int | None) -> None:
        """Queue a prompt already stored (on restore, in the store's order)."""
        self._queue.append(_Prompt(turn=turn, text=text, queue_id=queue_id))
        self._wake.set()

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
        for event in self._waiters.values():
            event.set()
        self._waiters.clear()

    def queue_switch(self, resolved: ResolvedModel) -> _Switch:
        cmd = _Switch(resolved=resolved)
        self._queue.append(cmd)
        self._wake.set()
        return cmd

    def cancel(self, *, at_boundary: bool = False) -> bool:
        """Cancel the running turn (and nothing queued). False if no turn runs."""
        if self.current_turn is None or self._turn_scope is None:
            return False
        if at_boundary:
            self._stop_at_boundary = True
        else:
            self._turn_scope.cancel()
        return True

    def drop_queue(self) -> int:
        n = self.queued
        self._queue = deque(c for c in self._queue if not isinstance(c, _Prompt))
        return n

    def notify_mail(self) -> None:
        self._mail_waiting = True
        self._wake.set()

    async def wait_turn_end(self) -> None:
        await self._turn_ended.wait()

    def invalidate_context(self) -> None:
        self._context = None

    # ------------------------------------------------------------ the loop

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            if not self._queue and self._mail_waiting:
                await self._take_mail()
            if not self._queue:
                self._wake = trio.Event()
                await self._wake.wait()
                continue
            cmd = self._queue.popleft()
            if isinstance(cmd, _Switch):
                await self.apply_switch(cmd.resolved)
                cmd.done.set()
            else:
                await self._turn(cmd)

    async def _take_mail(self) -> None:
        # the flag stays up until the prompt is queued, so the agent never looks idle in between
        mail = await self.sup.db.inbox(self.uuid, unread=True)
        awaited = self.sup.waiting.get(self.uuid, {})
        mail = [m for m in mail if m.from_uuid not in awaited]
        if not mail:
            self._mail_waiting = False
            return
        lines = []
        for m in mail:
            sender = self.sup.label_of(m.from_uuid) if m.from_uuid else "a person"
            lines.append(f"[mail from {sender}]\n{m.body}")
        # read and queued in one transaction: a crash in between loses nothing
        try:
            await self.submit("\n\n".join(lines), mail_ids=[m.id for m in mail])
        except InvalidEntry:
            # a wait took some of it meanwhile: the flag is still up, read again
            await trio.sleep(0.05)
            return
        self._mail_waiting = False

    async def context(self) -> list[Message]:
        if self._context is None:
            if not self._repaired:
                await self._repair_dangling_turn()
            self._context = await self.sup.db.replay(self.uuid)
        return self._context

    async def _repair_dangling_turn(self) -> None:
        """A daemon that died mid-turn can leave tool calls with no results,
        which no provider accepts: mark that turn interrupted. Done on first
        use rather than at start, so restoring 10,000 agents reads no history."""
        self._repaired = True
        start = await self.sup.db.dangling_turn_start(self.uuid)
        if start is not None:
            await self.sup.db.append_interrupted(self.uuid, start)
            self._publish(Notice(text="a turn cut short by a daemon stop was marked interrupted"))

    async def apply_switch(self, resolved: ResolvedModel) -> None:
        await self.sup.db.switch_model(self.uuid, resolved.provider, resolved.model, resolved.thinking.level)
        self.provider, self.model, self.thinking_level = (
            resolved.provider,
            resolved.model,
            resolved.thinking.level,
        )
        self._publish(
            ModelSwitched(
                provider=resolved.provider,
                model=resolved.model,
                thinking_level=resolved.thinking.level,
                description=resolved.description,
                warnings=list(resolved.warnings),
            )
        )

    async def _turn(self, cmd: _Prompt) -> None:
        turn = cmd.turn
        self.current_turn = turn
        self._stop_at_boundary = False
        self._turn_usage = Usage()
        self._turn_cost: float | None = 0.0
        self._publish(
            TurnStarted(
                prompt=cmd.text, provider=self.provider, model=self.model, thinking_level=self.thinking_level
            ),
            turn,
        )
        status: TurnStatus = "completed"
        error: ProviderError | None = None
        message: str | None = None
        first_row: int | None = None
        crashed = False
        with trio.CancelScope() as scope:
            self._turn_scope = scope
            try:
                user = Message(role="user", content=[TextBlock(text=cmd.text)])
                # shielded: a cancel that comes this early still finds the
                # prompt in history (then marked interrupted), never lost
                with trio.CancelScope(shield=True):
                    context = await self.context()  # loaded before the append, or it would hold the prompt twice
                    first_row = self.turn_first_row = await self.sup.db.start_turn(
                        self.uuid, user, queue_id=cmd.queue_id, turn=turn
                    )
                context.append(user)
                status, error = await self._steps(turn)
                if status != "completed":  # a completed turn was closed with its last row
                    await self.sup.db.end_turn(self.uuid)
            except Exception as exc:  # a bug in this turn must not end the agent or its siblings
                crashed = True
                message = scrub(f"internal error: {type(exc).__name__}: {exc}")
                log.exception("turn crashed", agent=self.uuid, turn=turn)
        self._turn_scope = None
        if scope.cancelled_caught or crashed:
            status = "interrupted"
            with trio.CancelScope(shield=True):
                if first_row is not None:
                    try:
                        await self.sup.db.append_interrupted(self.uuid, first_row)
                    except Exception:
                        log.exception("could not mark the turn interrupted", agent=self.uuid, turn=turn)
                self._context = None  # replay leaves the interrupted turn out
        reply = ""
        if self._context:
            last = self._context[-1]
            if last.role == "assistant":
                reply = last.text
        self.last_result = result = TurnResult(
            turn=turn,
            status=status,
            reply=reply,
            error=error,
            message=message,
            usage=self._turn_usage,
            cost_usd=self._turn_cost,
        )
        self._results[turn] = result
        if len(self._results) > _KEEP_RESULTS:
            del self._results[next(iter(self._results))]
        waiter = self._waiters.pop(turn, None)
        if waiter is not None:
            waiter.set()
        self._set_state("idle")
        self._publish(
            TurnEnded(status=status, error=error, message=message, usage=self._turn_usage, cost_usd=self._turn_cost),
            turn,
        )
        self.current_turn = None
        self.turn_first_row = None
        self._turn_ended.set()
        self._turn_ended = trio.Event()
        self.sup.turn_finished(self)

    async def _steps(self, turn: str) -> tuple[TurnStatus, ProviderError | None]:
        cfg = self.sup.config
        for step in range(cfg.max_tool_turns + 1):
            response, error = await self._call_model(turn)
            if response is None:
                return "error", error
            self._spend(response)
            msg = Message(
                role="assistant",
                content=list(response.blocks),
                provider=response.provider,
                model=response.model or self.model,
                thinking_level=self.thinking_level,
                provider_data=response.provider_data,
            )
            calls = [b for b in response.blocks if isinstance(b, ToolCallBlock)]
            await self.sup.db.append_assistant(self.uuid, msg, response, end_turn=not calls)
            (await self.context()).append(msg)
            if not calls:
                return "completed", None
            if step == cfg.max_tool_turns:
                await self._store_results(
                    calls, f"not run: the tool-turn limit ({cfg.max_tool_turns}) was reached"
                )
                self._publish(Notice(text=f"tool-turn limit ({cfg.max_tool_turns}) reached"))
                return "tool_limit", None
            if self._stop_at_boundary:
                await self._store_results(calls, "not run: the turn was cancelled")
                return "cancelled", None
            self._set_state("executing_tool")
            for call in calls:
                self._publish(ToolStarted(id=call.id, name=call.name, arguments=call.arguments))
            ctx = ToolContext(agent_uuid=self.uuid, cwd=cfg.cwd, ops=self.sup.ops)
            results = await self.sup.tools.run_all(calls, ctx, limit=cfg.tool_concurrency)
            for call, result in zip(calls, results, strict=True):
                self._publish(
                    ToolFinished(
                        id=call.id,
                        name=call.name,
                        is_error=result.is_error,
                        content=result.content[:_EVENT_CONTENT],
                    )
                )
            tool_msg = Message(role="tool", content=list(results))
            stop = self._stop_at_boundary
            await self.sup.db.append_tool_results(self.uuid, tool_msg, end_turn=stop)
            (await self.context()).append(tool_msg)
            if stop:
                return "cancelled", None
        return "tool_limit", None  # pragma: no cover - the loop returns on its last step

    def _spend(self, response: Response) -> None:
        self._turn_usage = self._turn_usage + response.usage
        entry = self.sup.pool.catalog.lookup(response.provider or self.provider, response.model or self.model)
        if entry is None:
            entry = self.sup.pool.catalog.lookup(self.provider, self.model)
        if entry is None or entry.prices is None or self._turn_cost is None:
            self._turn_cost = None
            return
        u = response.usage
        self._turn_cost += entry.prices.cost(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cached_tokens=u.cached_tokens,
            cache_write_tokens=u.cache_write_tokens,
        )

    async def _store_results(self, calls: list[ToolCallBlock], text: str) -> None:
        results = [ToolResultBlock(tool_call_id=c.id, content=text, is_error=True, name=c.name) for c in calls]
        msg = Message(role="tool", content=results)
        await self.sup.db.append_tool_results(self.uuid, msg, end_turn=True)
        (await self.context()).append(msg)

    def _request(self, model: str, provider: str, level: ThinkingLevel, history: list[Message]) -> Request:
        return Request(
            model=model,
            messages=for_provider(history, provider),
            system=[TextBlock(text=self.system_prompt)] if self.system_prompt else [],
            thinking=ThinkingConfig(level=level),
            tools=self.sup.tools.definitions(),
            max_output_tokens=self.sup.config.max_output_tokens,
        )

    async def _call_model(self, turn: str) -> tuple[Response | None, ProviderError | None]:
        """Stream one response, retrying and falling back as the error allows."""
        targets: list[tuple[str, str, ThinkingLevel]] = [(self.provider, self.model, self.thinking_level)]
        for spec in self.sup.config.fallbacks:
            try:
                r = self.sup.resolve_model(spec, current_thinking=self.thinking_level)
            except ValueError:
                continue
            if (r.provider, r.model) != (self.provider, self.model):
                targets.append((r.provider, r.model, r.thinking.level))
        history = await self.context()
        error: ProviderError | None = None
        for index, (provider_name, model, level) in enumerate(targets):
            if index:
                assert error is not None
                self._publish(FallbackUsed(from_model=targets[index - 1][1], to_model=model, error=error))
            request = self._request(model, provider_name, level, history)
            attempt = 0
            while True:
                attempt += 1
                self._set_state("waiting_for_llm")
                acc = Accumulator(provider=provider_name)
                provider = self.sup.pool.get(provider_name, model)
                async with provider.stream(request) as events:
                    burst = 0
                    async for event in events:
                        acc.feed(event)
                        self._publish(event, turn)
                        burst += 1
                        if burst == _PUBLISH_SLICE:
                            # one network read can hold thousands of deltas:
                            # let subscribers' forwarders run before their buffers fill
                            burst = 0
                            await trio.lowlevel.checkpoint()
                if acc.error is None and acc.finish_reason is not None:
                    return acc.response(), None
                error = acc.error or transport_error(
                    "network", "the stream ended without a final event", provider=provider_name
                )
                delay = self.sup.config.retry.delay(error, attempt)
                if delay is None or self._stop_at_boundary:
                    break
                self._publish(
                    RetryScheduled(
                        attempt=attempt + 1,
                        delay=delay,
                        error=error,
                        model=model,
                        discarded_output=acc.has_output,
                    )
                )
                self._set_state("retrying")
                await trio.sleep(delay)
            if not error.retryable or self._stop_at_boundary:
                break
        return None, error
