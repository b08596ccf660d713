"""One turn: its state and its loop.

store the user message (with the queue row, durably; for a prompt to an
idle agent this write is its acknowledgement, see _start.py) -> request from the
replayed context -> stream from the provider, publishing every event -> store
the assistant message -> run its tool calls (concurrently, bounded) -> store
the results -> again, until the model stops, the tool-turn limit is reached,
or the turn is cancelled. A turn cancelled mid-way is marked interrupted:
kept in history, left out of the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import structlog
import trio

from providers.accumulate import Accumulator
from providers.errors import transport_error
from providers.secrets import scrub
from providers.types import (
    Message,
    ProviderError,
    Request,
    Response,
    TextBlock,
    ThinkingLevel,
    ToolCallBlock,
    ToolChoice,
    ToolResultBlock,
    Usage,
)

from ._answer import Answer
from ._answering import AnsweringSteps
from ._commands import Attached
from ._fitting import FittingSteps
from ._start import StartAck
from .budget import refuse_call
from .compaction import too_long
from .compactor import price
from .deps import ActorDeps
from .events import (
    AgentEvent,
    AgentState,
    FallbackUsed,
    Notice,
    RetryScheduled,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    TurnStarted,
    TurnStatus,
)
from .meter import ContextMeter
from .permissions._gate import Approvals, Gate
from .tools import ToolContext

if TYPE_CHECKING:
    from .tracing import ModelCall

log = structlog.get_logger("ikigai.agents")

_EVENT_CONTENT = 2000  # characters of a tool result shown in its event
_PUBLISH_SLICE = 64  # events published between checkpoints, so subscribers keep up with a burst


@dataclass
class TurnResult:
    turn: str
    status: TurnStatus
    reply: str
    error: ProviderError | None = None
    message: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    data: Any = None  # the answer matching the prompt's schema, parsed (agents/_answer.py)
    schema: bool = False  # the prompt asked for one: ``data`` is its answer (None: none valid)


class TurnHost(Protocol):
    """The actor a turn runs in, as the turn sees it."""

    uuid: str
    provider: str
    model: str
    thinking_level: ThinkingLevel
    system_prompt: str
    cwd: Path
    policy: list[str] | None  # its chain of policy names; None: the configured default
    approvals: Approvals
    meter: ContextMeter
    mcp: list[str] | None  # its MCP servers; None: the configured defaults
    tree: str  # its root ancestor's uuid: the limiter's queue is fair across trees
    state: AgentState

    def publish(self, event: AgentEvent, turn: str | None = None) -> None: ...
    def set_state(self, state: AgentState) -> None: ...
    async def context(self) -> list[Message]: ...
    def invalidate_context(self) -> None: ...


class Turn(FittingSteps, AnsweringSteps):
    """The state of one turn (its id, spend, cancel scope, first row) and the loop that runs it."""

    def __init__(
        self,
        host: TurnHost,
        deps: ActorDeps,
        turn: str,
        text: str,
        queue_id: int | None,
        *,
        resume_from: int | None = None,
        priority: str = "interactive",
        ack: StartAck | None = None,
        attachments: list[Attached] | None = None,
        tool_choice: ToolChoice | None = None,
        schema: dict[str, Any] | None = None,
    ) -> None:
        self.host = host
        self.attachments = attachments or []  # files sent with the prompt, after its text
        # the JSON Schema its final answer must match (agents/_answer.py)
        self.answer = Answer(schema) if schema is not None else None
        self.tool_choice = tool_choice or ToolChoice()  # the prompt's (_fitting.py)
        # a prompt to an idle agent: its submitter is answered by this turn's start
        self.ack = ack
        # its model calls' place in the provider limiter's queue (agents/limited.py)
        self.priority = priority
        self.deps = deps
        self.id = turn
        self.text = text
        self.queue_id = queue_id
        self.usage = Usage()
        self.cost: float | None = 0.0
        self.stop_at_boundary = False
        self.scope = trio.CancelScope()  # made now, so a cancel before the turn starts still counts
        self.first_row: int | None = None  # its user row, once stored
        self.model_calls = 0  # requests sent, retries and fallbacks included
        self._lowered: str | None = None  # the last thinking-lowered notice said
        self._capped = False  # the output cap was raised to an API's minimum (said once)
        # the first row of a turn a daemon stop left waiting for approval: it
        # resumes at its tool step instead of storing a prompt
        self.resume_from = resume_from
        self.at_gate = False  # its tool calls are passing the gate
        self.suspended = False  # stopped at the gate by a daemon stop: left open to resume
        self._recovered = False  # a context_length answer was met by compacting (once a turn)
        self._tools = deps.tools  # the built-in tools and the agent's MCP tools
        self._offered: list[int] = []  # the MCP tool specs in _tools
        self._raw = 0  # the raw size estimate of the request being sent
        self.over_budget: str | None = None  # why a call was not made (agents/budget.py)

    def cancel(self, *, at_boundary: bool = False, suspend: bool = False) -> None:
        """``suspend`` (a daemon stop): a turn waiting at the gate keeps its
        pending approvals and stays open, to be resumed after the restart."""
        if at_boundary:
            self.stop_at_boundary = True
        else:
            if suspend and self.at_gate:
                self.suspended = True
            self.scope.cancel()

    async def run(self) -> TurnResult | None:
        """How the turn ended; None when its start was refused (the submitter
        of an acknowledged-at-start prompt was told, and nothing ran)."""
        host, db = self.host, self.deps.db
        if self.ack is None:
            self._announce()
        started = trio.current_time()
        status: TurnStatus = "completed"
        error: ProviderError | None = None
        message: str | None = None
        crashed = False
        context: list[Message] | None = None
        with self.scope as scope:
            try:
                resumed: list[ToolCallBlock] | None = None
                if self.resume_from is not None:
                    self.first_row = self.resume_from
                    context = await host.context()
                    if context and context[-1].role == "assistant":
                        resumed = context[-1].tool_calls or None
                else:
                    content = [TextBlock(text=self.text), *self.attachments]
                    user = Message(role="user", content=content)
                    # shielded: a cancel that comes this early still finds the
                    # prompt in history (then marked interrupted), never lost
                    with trio.CancelScope(shield=True):
                        try:
                            # loaded before the append, or it would hold the prompt twice
                            context = await host.context()
                            self.first_row = await db.start_turn(
                                host.uuid, user, queue_id=self.queue_id, turn=self.id
                            )
                        except Exception as exc:
                            if self.ack is None:
                                raise
                            self.ack.refuse(exc)
                            return None
                    if self.ack is not None:
                        self.ack.started(self.first_row)
                        self._announce()
                    context.append(user)
                status, error = await self._steps(resumed)
                message = self.over_budget  # None unless a budget stopped it
                if status != "completed":  # a completed turn was closed with its last row
                    await db.end_turn(host.uuid)
            except Exception as exc:  # a bug in this turn must not end the agent or its siblings
                crashed = True
                message = scrub(f"internal error: {type(exc).__name__}: {exc}")
                log.exception("turn crashed", agent=host.uuid, turn=self.id)
        return await self._finish(scope, crashed, status, error, message, context, started)

    def _announce(self) -> None:
        host = self.host
        host.publish(
            TurnStarted(
                prompt=self.text,
                provider=host.provider,
                model=host.model,
                thinking_level=host.thinking_level,
            ),
            self.id,
        )
        # the log tells a turn's story by ids and numbers: never the prompt or the reply
        log.info(
            "turn started",
            agent=host.uuid,
            turn=self.id,
            provider=host.provider,
            model=host.model,
            thinking=host.thinking_level,
        )

    async def _finish(
        self,
        scope: trio.CancelScope,
        crashed: bool,
        status: TurnStatus,
        error: ProviderError | None,
        message: str | None,
        context: list[Message] | None,
        started: float,
    ) -> TurnResult:
        host, db = self.host, self.deps.db
        if scope.cancelled_caught or crashed:
            status = "interrupted"
            with trio.CancelScope(shield=True):
                if self.suspended and not crashed:
                    pass  # left open with its pending approvals: resumed after the restart
                elif self.first_row is not None:
                    try:
                        await db.append_interrupted(host.uuid, self.first_row)
                    except Exception:
                        log.exception(
                            "could not mark the turn interrupted", agent=host.uuid, turn=self.id
                        )
                host.invalidate_context()  # replay leaves the interrupted turn out
                context = None
        reply, data = "", None
        if context and context[-1].role == "assistant":
            reply = context[-1].text
        final = None if self.answer is None else self.answer.final
        if final is not None and status != "interrupted":
            reply, data = final.text, None if final.problem else final.data
        self._log_end(status, error, trio.current_time() - started)
        return TurnResult(
            turn=self.id,
            status=status,
            reply=reply,
            error=error,
            message=message,
            usage=self.usage,
            cost_usd=self.cost,
            data=data,
            schema=self.answer is not None,
        )

    async def _steps(
        self, resumed: list[ToolCallBlock] | None = None
    ) -> tuple[TurnStatus, ProviderError | None]:
        """``resumed``: the tool calls of a turn resumed after a restart, whose
        first step is their tool step (the model already asked for them)."""
        host, cfg, db = self.host, self.deps.config, self.deps.db
        for step in range(cfg.max_tool_turns + 1):
            if step == 0 and resumed:
                calls = resumed
            else:
                response, error = await self._call_model()
                if response is None:
                    return ("budget_exceeded" if self.over_budget else "error"), error
                self._answered()  # a forced tool choice was for this first answer only
                self._spend(response)
                msg = Message(
                    role="assistant",
                    content=list(response.blocks),
                    provider=response.provider,
                    model=response.model or host.model,
                    thinking_level=host.thinking_level,
                    provider_data=response.provider_data,
                )
                calls = [b for b in response.blocks if isinstance(b, ToolCallBlock)]
                judged = None if self.answer is None else await self.answer.checked(msg.content)
                if judged is not None:  # the final answer to a schema: checked, maybe retried
                    ended = await self._final(msg, response, judged, calls)
                    if ended is None:
                        continue
                    return ended
                await db.append_assistant(host.uuid, msg, response, end_turn=not calls)
                (await host.context()).append(msg)
                if not calls:
                    return "completed", None
            if step == cfg.max_tool_turns:
                await self._store_results(
                    calls, f"not run: the tool-turn limit ({cfg.max_tool_turns}) was reached"
                )
                host.publish(
                    Notice(text=f"tool-turn limit ({cfg.max_tool_turns}) reached"), self.id
                )
                return "tool_limit", None
            if self.stop_at_boundary:
                await self._store_results(calls, "not run: the turn was cancelled")
                return "cancelled", None
            results = await self._run_tools(calls, resume=step == 0 and bool(resumed))
            for call, result in zip(calls, results, strict=True):
                host.publish(
                    ToolFinished(
                        id=call.id,
                        name=call.name,
                        is_error=result.is_error,
                        content=result.content[:_EVENT_CONTENT],
                    ),
                    self.id,
                )
            tool_msg = Message(role="tool", content=list(results))
            stop = self.stop_at_boundary
            await db.append_tool_results(host.uuid, tool_msg, end_turn=stop)
            (await host.context()).append(tool_msg)
            if stop:
                return "cancelled", None
        return "tool_limit", None  # pragma: no cover - the loop returns on its last step

    async def _run_tools(
        self, calls: list[ToolCallBlock], *, resume: bool
    ) -> list[ToolResultBlock]:
        """Every call through the gate, then the allowed ones run (concurrently,
        bounded, sandboxed as the agent's policy says); a denied one's result
        is the denial, for the model to read."""
        host, cfg, deps = self.host, self.deps.config, self.deps
        gate = Gate(
            host=host,
            db=deps.db,
            permissions=deps.permissions,
            approvals=host.approvals,
            turn=self.id,
            timeout=cfg.approval_timeout,
            suspending=lambda: self.suspended,
        )
        self.at_gate = True
        try:
            verdicts = await gate.check(calls, resume=resume)
        finally:
            self.at_gate = False
        allowed = [c for c, v in zip(calls, verdicts, strict=True) if v is None]
        host.set_state("executing_tool")
        for call in allowed:
            host.publish(ToolStarted(id=call.id, name=call.name, arguments=call.arguments), self.id)
        sandbox, network = deps.permissions.sandbox_of(host.policy)
        names = {c.id: c.name for c in allowed}

        def progress(call_id: str, done: float, total: float | None, note: str | None) -> None:
            name = names.get(call_id, "")
            host.publish(
                ToolProgress(id=call_id, name=name, progress=done, total=total, message=note),
                self.id,
            )

        ctx = ToolContext(
            agent_uuid=host.uuid,
            cwd=host.cwd,
            ops=deps.ops,
            sandbox=sandbox,
            network=network,
            progress=progress,
            worktrees=cfg.worktrees,
            worktree_branch=host.worktree_branch,
            tracer=deps.tracer,
        )
        tracer = deps.tracer
        if tracer is not None:
            for call, verdict in zip(calls, verdicts, strict=True):
                if verdict is not None:  # a span for the call refused, as for those run
                    server = self._tools.server_of(call.name)
                    with tracer.tool(call, server=server, decision="deny") as span:
                        span.end(verdict, True)
        ran = iter(await self._tools.run_all(allowed, ctx, limit=cfg.tool_concurrency))
        return [
            next(ran)
            if verdict is None
            else ToolResultBlock(
                tool_call_id=call.id, content=verdict, is_error=True, name=call.name
            )
            for call, verdict in zip(calls, verdicts, strict=True)
        ]

    def _log_end(self, status: TurnStatus, error: ProviderError | None, seconds: float) -> None:
        host = self.host
        if error is not None:
            log.warning(
                "turn failed",
                agent=host.uuid,
                turn=self.id,
                category=error.category,
                http_status=error.http_status,
                provider=error.provider,
                error=scrub(error.message),
            )
        log.info(
            "turn ended",
            agent=host.uuid,
            turn=self.id,
            status=status,
            model_calls=self.model_calls,
            duration_s=round(seconds, 3),
            input_tokens=self.usage.input_tokens,
            output_tokens=self.usage.output_tokens,
            thinking_tokens=self.usage.thinking_tokens,
            cached_tokens=self.usage.cached_tokens,
        )

    def _spend(self, response: Response) -> None:
        """Add a response's tokens and cost."""
        self.usage = self.usage + response.usage
        cost = self._cost_of(response)
        self.cost = None if cost is None or self.cost is None else self.cost + cost

    def _cost_of(self, response: Response | None) -> float | None:
        """A response's cost (``price``: the one pricing rule)."""
        if response is None:
            return None
        host = self.host
        provider = response.provider or host.provider
        # the requested model is the agent's, on its own provider (a fallback's is reported)
        requested = host.model if provider == host.provider else None
        return price(self.deps.pool.catalog, provider, response.model, requested, response.usage)

    async def _store_results(self, calls: list[ToolCallBlock], text: str) -> None:
        results = [
            ToolResultBlock(tool_call_id=c.id, content=text, is_error=True, name=c.name)
            for c in calls
        ]
        msg = Message(role="tool", content=list(results))
        await self.deps.db.append_tool_results(self.host.uuid, msg, end_turn=True)
        (await self.host.context()).append(msg)

    async def _call_model(self) -> tuple[Response | None, ProviderError | None]:
        """Stream one response, retrying and falling back as the error allows."""
        host = self.host
        targets = self._targets()
        error: ProviderError | None = None
        for index, (provider_name, model, level) in enumerate(targets):
            if index:
                assert error is not None
                log.info(
                    "falling back to another model",
                    agent=host.uuid,
                    turn=self.id,
                    from_model=targets[index - 1][1],
                    to_model=model,
                    category=error.category,
                )
                host.publish(
                    FallbackUsed(from_model=targets[index - 1][1], to_model=model, error=error),
                    self.id,
                )
            request = await self._fitted(model, provider_name, level)
            tracer = self.deps.tracer
            if tracer is None:
                response, error = await self._attempts(provider_name, model, level, request)
            else:
                after = (targets[index - 1][1], error) if index and error is not None else None
                call = tracer.model_call(
                    provider=provider_name,
                    api=self.deps.pool.api_for(provider_name, model),
                    request=request,
                    fallback_from=after,
                )
                response, error = None, None
                try:
                    response, error = await self._attempts(
                        provider_name, model, level, request, call
                    )
                finally:
                    refused = self.over_budget if response is None and error is None else None
                    call.end(response, error, self._cost_of(response), refused)
            if response is not None or error is None:  # answered, or not made (budget)
                return response, None
            if not error.retryable or self.stop_at_boundary:
                break
        return None, error

    async def _attempts(
        self,
        provider_name: str,
        model: str,
        level: ThinkingLevel,
        request: Request,
        call: ModelCall | None = None,
    ) -> tuple[Response | None, ProviderError | None]:
        """One model's answer, retried as the error allows: (response, None),
        (None, the last error), or (None, None) when a budget refused the call."""
        host = self.host
        attempt = 0
        while True:
            if await refuse_call(self, provider_name, model, request):
                return None, None  # not made: it could cross a budget
            attempt += 1
            self.model_calls += 1
            acc = Accumulator(provider=provider_name)
            provider = self.deps.pool.get(provider_name, model)
            # a retry waiting in the key's queue stays "retrying" (limited.py)
            async with self._passage(provider_name, request) as slot:
                if not self.deps.lease_held():
                    # another daemon may adopt this agent any moment: no
                    # call from here; the watchdog stops this turn
                    await trio.sleep_forever()
                host.set_state("waiting_for_llm")
                async with provider.stream(request, on_limits=slot.learn) as events:
                    burst = 0
                    async for event in events:
                        acc.feed(event)
                        host.publish(event, self.id)
                        burst += 1
                        if burst == _PUBLISH_SLICE:
                            # one network read can hold thousands of deltas:
                            # let subscribers' forwarders run before their buffers fill
                            burst = 0
                            await trio.lowlevel.checkpoint()
                if acc.finish_reason is not None:
                    slot.done(acc.usage)
            if acc.error is None and acc.finish_reason is not None:
                response = acc.response()
                host.meter.learn(provider_name, self._raw, response.usage.input_tokens)
                if provider_name in host.meter.ratio:  # the limiter's first guess for others
                    self.deps.pool.token_ratio[provider_name] = host.meter.ratio[provider_name]
                return response, None
            error = acc.error or transport_error(
                "network", "the stream ended without a final event", provider=provider_name
            )
            if error.category == "context_length":
                if not self._recovered and await self._recover(
                    request, provider_name, model, error
                ):
                    request = await self._fitted(model, provider_name, level, checked=True)
                    continue
                limits = self.deps.pool.catalog.limits(provider_name, model)
                error = too_long(error, provider_name, model, limits)
            delay = self.deps.config.retry.delay(error, attempt)
            if delay is None or self.stop_at_boundary:
                return None, error
            if call is not None:
                call.retry(attempt + 1, delay, error)
            log.info(
                "retrying model call",
                agent=host.uuid,
                turn=self.id,
                attempt=attempt + 1,
                category=error.category,
                http_status=error.http_status,
                wait_s=round(delay, 3),
                model=model,
                error=scrub(error.message),
            )
            host.publish(
                RetryScheduled(
                    attempt=attempt + 1,
                    delay=delay,
                    error=error,
                    model=model,
                    discarded_output=acc.has_output,
                ),
                self.id,
            )
            host.set_state("retrying")
            if not slot.wall(error, delay):
                await trio.sleep(delay)
            # else: the key is paused for every agent; the retry waits in its queue
