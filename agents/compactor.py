"""Compacting an agent's context: the summary calls and the compaction row.

Runs inside a turn (before a model call whose request would not fit, or after
the provider answered ``context_length``) or on its own (``agent.compact``,
between turns: the actor's queue keeps turns out meanwhile). The stored
history is never changed: a ``compaction`` row covers the summarized prefix
and replay shows its summary in the prefix's place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

import structlog
import trio

from providers.accumulate import Accumulator
from providers.catalog import Catalog
from providers.errors import transport_error
from providers.secrets import scrub
from providers.tokens import estimate_text
from providers.types import Message, ProviderError, Request, Response, TextBlock, Usage
from store import SUMMARY_PREFIX

from . import compaction
from .budget import over_budget
from .compaction import Budget
from .deps import ActorDeps
from .events import AgentEvent, AgentState, CompactionDone, CompactionFailed, CompactionStarted
from .limited import passage
from .meter import ContextMeter
from .pricing import price

if TYPE_CHECKING:
    from .tracing import ModelCall

log = structlog.get_logger("ikigai.agents")

Reason = Literal["auto", "manual", "context_length"]
_SUMMARY_ATTEMPTS = 3


class CompactHost(Protocol):
    uuid: str
    name: str
    provider: str
    model: str
    system_prompt: str
    meter: ContextMeter
    tree: str  # its root ancestor's uuid (the limiter's fairness)
    state: AgentState

    def publish(self, event: AgentEvent, turn: str | None = None) -> None: ...
    def set_state(self, state: AgentState) -> None: ...
    async def context(self) -> list[Message]: ...
    def loaded_context(self) -> list[Message] | None: ...
    def invalidate_context(self) -> None: ...


@dataclass
class CompactOutcome:
    compacted: bool
    reason: str  # why it ran ("auto", "manual", "context_length"), or why nothing was done
    messages: int = 0  # context messages the summary replaced
    tokens_before: int = 0
    tokens_after: int = 0
    summary_tokens: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    model: str = ""  # provider/model that wrote the summary
    error: ProviderError | None = None
    message: str | None = None  # what went wrong, for people


def budget_of(
    catalog: Catalog,
    provider: str,
    model: str,
    output: int,
    compact_at: float,
    meter: ContextMeter | None = None,
) -> Budget:
    limits = catalog.limits(provider, model)
    window = limits.context_window
    if meter is not None:
        window = min(window, meter.windows.get((provider, model), window))
    return Budget(
        window=window,
        output=min(output, limits.max_output_tokens),
        compact_at=compact_at,
    )


class Compactor:
    def __init__(
        self,
        host: CompactHost,
        deps: ActorDeps,
        turn: str | None = None,
        *,
        priority: str = "interactive",
    ) -> None:
        self.host = host
        self.deps = deps
        self.turn = turn
        self.priority = priority  # its summary calls' place in the provider limiter

    def _fixed(self, provider: str) -> int:
        """Raw estimate of the system prompt and tool definitions."""
        system = self.host.system_prompt
        probe = Request(
            model="",
            messages=[],
            system=[TextBlock(text=system)] if system else [],
            tools=self.deps.tools.definitions(),
        )
        return self.host.meter.fixed(probe)

    def _summarizer(self, provider: str, model: str) -> tuple[str, str]:
        spec = self.deps.config.summary_model
        if spec:
            try:
                r = self.deps.neighbours.resolve_model(spec)
                return r.provider, r.model
            except ValueError:
                log.warning("summary_model does not resolve: using the agent's model", spec=spec)
        return provider, model

    async def compact(
        self,
        *,
        reason: Reason,
        provider: str | None = None,
        model: str | None = None,
        first_row: int | None = None,
        keep_turns: int | None = None,
    ) -> CompactOutcome:
        """Summarize the oldest part of the context. ``provider``/``model``:
        whose window the context must fit (the agent's by default);
        ``first_row``: the running turn's first row, never compacted."""
        tracer = self.deps.tracer
        if tracer is None:
            return await self._compact(reason, provider, model, first_row, keep_turns)
        host = self.host
        in_turn = self.turn is not None
        with tracer.compaction(agent=host.uuid, name=host.name, reason=reason, in_turn=in_turn):
            return await self._compact(reason, provider, model, first_row, keep_turns)

    async def _compact(
        self,
        reason: Reason,
        provider: str | None,
        model: str | None,
        first_row: int | None,
        keep_turns: int | None,
    ) -> CompactOutcome:
        host, deps, meter = self.host, self.deps, self.host.meter
        provider = provider or host.provider
        model = model or host.model
        catalog = deps.pool.catalog
        entries = await deps.db.replay_entries(host.uuid)
        messages = [e.message for e in entries]
        sizes = meter.sizes(messages)
        fixed = self._fixed(provider)
        budget = budget_of(
            catalog, provider, model, deps.config.max_output_tokens, deps.config.compact_at, meter
        )
        protect = len(entries)
        if first_row is not None:
            protect = next((i for i, e in enumerate(entries) if e.id == first_row), protect)
        ratio = meter.ratio.get(provider, 1.0)
        cut = compaction.choose_cut(
            messages,
            sizes,
            first_is_summary=bool(entries) and entries[0].summary,
            protect_from=protect,
            keep_tokens=int(budget.keep(meter.scale(provider, fixed)) / ratio),
            keep_turns=keep_turns,
        )
        before = meter.scale(provider, fixed + sum(sizes))
        if cut is None:
            if keep_turns is not None and keep_turns > 0:
                turns = "turn" if keep_turns == 1 else f"{keep_turns} turns"
                why = f"nothing to compact: the context holds no more than the {turns} to keep"
            elif protect < len(entries) and protect <= 1:
                why = "nothing to compact: the context holds only the current turn"
            elif keep_turns is None and entries:
                why = (
                    f"nothing to compact: the context (~{before:,} tokens) already fits in "
                    "what a compaction keeps"
                )
            else:
                why = "nothing to compact: the context is empty or already only its summary"
            return CompactOutcome(
                compacted=False, reason=why, tokens_before=before, tokens_after=before
            )
        covered = messages[:cut]
        sp, sm = self._summarizer(provider, model)
        host.publish(
            CompactionStarted(
                reason=reason, messages=cut, tokens_before=before, model=f"{sp}/{sm}"
            ),
            self.turn,
        )
        host.set_state("compacting")
        log.info("compacting", agent=host.uuid, turn=self.turn, reason=reason, messages=cut)
        outcome = await self._summarize(covered, sizes[:cut], sp, sm)
        outcome.reason = reason
        outcome.tokens_before = before
        outcome.model = f"{sp}/{sm}"
        if outcome.error is not None or outcome.message is not None:
            host.publish(
                CompactionFailed(reason=reason, message=outcome.message or "", error=outcome.error),
                self.turn,
            )
            log.warning(
                "compaction failed",
                agent=host.uuid,
                turn=self.turn,
                category=outcome.error.category if outcome.error else None,
            )
            return outcome
        summary = outcome.summary_text
        upto = entries[cut - 1].id
        new_size = meter.scale(provider, fixed + sum(sizes[cut:]) + estimate_text(summary) + 40)
        with trio.CancelScope(shield=True):  # a summary paid for is stored
            await deps.db.compact(
                host.uuid,
                upto=upto,
                summary=summary,
                data={
                    "reason": reason,
                    "messages": cut,
                    "tokens_before": before,
                    "tokens_after": new_size,
                    "keep_turns": keep_turns,
                    "summary_provider": sp,
                    "summary_model": sm,
                },
                usage=outcome.usage,
                provider=sp,
                model=sm,
            )
            host.invalidate_context()
            await host.context()
        outcome.compacted = True
        outcome.messages = cut
        outcome.tokens_after = new_size
        host.publish(
            CompactionDone(
                reason=reason,
                messages=cut,
                tokens_before=before,
                tokens_after=new_size,
                summary_tokens=outcome.summary_tokens,
                usage=outcome.usage,
                cost_usd=outcome.cost_usd,
                model=outcome.model,
            ),
            self.turn,
        )
        log.info(
            "compacted",
            agent=host.uuid,
            turn=self.turn,
            messages=cut,
            tokens_before=before,
            tokens_after=new_size,
        )
        return outcome

    async def _summarize(
        self, covered: list[Message], sizes: list[int], provider: str, model: str
    ) -> _Summary:
        """The summary of ``covered``, in as many calls as the summarizing
        model's window needs (each part summarized with the summary so far)."""
        deps, meter = self.deps, self.host.meter
        catalog = deps.pool.catalog
        budget = budget_of(
            catalog, provider, model, deps.config.max_output_tokens, deps.config.compact_at, meter
        )
        ratio = meter.ratio.get(
            provider, max([compaction.UNCALIBRATED_RATIO, *meter.ratio.values()])
        )
        room, cap = compaction.summary_parts(budget, ratio)
        out = _Summary(compacted=False, reason="")
        spent, cost = Usage(), 0.0
        for _ in range(3):
            out = await self._summary_parts(covered, sizes, provider, model, room, cap)
            spent = spent + out.usage  # parts already summarized were paid for
            cost = None if out.cost_usd is None or cost is None else cost + out.cost_usd
            if out.error is None or out.error.category != "context_length" or room <= 256:
                break
            room = max(256, room // 2)  # a part was still too long for it: smaller parts
        out.usage, out.cost_usd = spent, cost
        return out

    async def _summary_parts(
        self,
        covered: list[Message],
        sizes: list[int],
        provider: str,
        model: str,
        room: int,
        cap: int,
    ) -> _Summary:
        catalog = self.deps.pool.catalog
        out = _Summary(compacted=False, reason="")
        previous: str | None = None
        for part in compaction.chunks(covered, sizes, room):
            text = compaction.fit_text(compaction.transcript(part), room)
            request = compaction.summary_request(
                model, text, previous=previous, max_output_tokens=cap
            )
            meter = self.host.meter
            why = await over_budget(
                self.deps,
                self.host.uuid,
                provider=provider,
                model=model,
                input_tokens=meter.scale(provider, meter.raw(request)),
                max_output_tokens=request.max_output_tokens,
                counted=True,  # a compaction is part of a turn, or of none
            )
            if why is not None:  # not made: it could cross a budget
                out.message = f"budget exceeded: {why}"
                return out
            response, error = await self._call(provider, model, request)
            if response is None:
                out.error = error
                out.message = scrub(error.message) if error else "the summary call failed"
                return out
            out.usage = out.usage + response.usage
            cost = price(catalog, provider, response.model, model, response.usage)
            out.cost_usd = None if cost is None or out.cost_usd is None else out.cost_usd + cost
            previous = "".join(b.text for b in response.blocks if isinstance(b, TextBlock)).strip()
            if not previous:
                out.message = f"{provider}/{model} answered the summary request with no text"
                return out
        out.summary_text = previous or ""
        out.summary_tokens = out.usage.output_tokens or estimate_text(out.summary_text)
        return out

    async def _call(
        self, provider: str, model: str, request: Request
    ) -> tuple[Response | None, ProviderError | None]:
        tracer = self.deps.tracer
        if tracer is None:
            return await self._attempts(provider, model, request)
        api = self.deps.pool.api_for(provider, model)
        call = tracer.model_call(provider=provider, api=api, request=request)
        response, error = None, None
        try:
            response, error = await self._attempts(provider, model, request, call)
        finally:
            cost = None
            if response is not None:
                catalog = self.deps.pool.catalog
                cost = price(catalog, provider, response.model, model, response.usage)
            call.end(response, error, cost)
        return response, error

    async def _attempts(
        self, provider: str, model: str, request: Request, call: ModelCall | None = None
    ) -> tuple[Response | None, ProviderError | None]:
        deps = self.deps
        error: ProviderError | None = None
        for attempt in range(1, _SUMMARY_ATTEMPTS + 1):
            acc = Accumulator(provider=provider)
            host, meter = self.host, self.host.meter
            async with passage(
                host,
                deps.pool.limiter(provider),
                provider=provider,
                tree=host.tree,
                priority=self.priority,
                input_tokens=meter.scale(provider, meter.raw(request)),
                max_output_tokens=request.max_output_tokens,
                turn=self.turn,
            ) as slot:
                async with deps.pool.get(provider, model).stream(
                    request, on_limits=slot.learn
                ) as events:
                    async for event in events:
                        acc.feed(event)
                if acc.finish_reason is not None:
                    slot.done(acc.usage)
            if acc.error is None and acc.finish_reason is not None:
                return acc.response(), None
            error = acc.error or transport_error(
                "network", "the stream ended without a final event", provider=provider
            )
            delay = deps.config.retry.delay(error, attempt)
            if delay is None or attempt == _SUMMARY_ATTEMPTS:
                break
            if call is not None:
                call.retry(attempt + 1, delay, error)
            if not slot.wall(error, delay):  # paused: the retry waits in the key's queue
                await trio.sleep(delay)
        return None, error


@dataclass
class _Summary(CompactOutcome):
    summary_text: str = ""


@dataclass
class ContextStatus:
    """What ``show`` says about an agent's context and its window."""

    window: int  # tokens the model reads, as believed now
    window_source: str  # catalog | config | default | provider (learned from a refusal)
    max_output: int  # tokens reserved for the answer
    limit: int  # input tokens above which the next call compacts first
    compact_at: float
    tokens: int  # estimated input tokens of the next request (context + system + tools)
    calibrated: bool  # the estimate is scaled by what the provider reported
    messages: int  # messages in the replayed context
    summarized: bool  # the context begins with a compaction summary


async def context_status(host: CompactHost, deps: ActorDeps) -> ContextStatus:
    provider, model, meter = host.provider, host.model, host.meter
    catalog = deps.pool.catalog
    limits = catalog.limits(provider, model)
    budget = budget_of(
        catalog, provider, model, deps.config.max_output_tokens, deps.config.compact_at, meter
    )
    learned = budget.window < limits.context_window
    # the actor's context when loaded (`show` must not replay the history each
    # time), else a replay that leaves the actor's cache alone
    loaded = host.loaded_context()
    context = loaded if loaded is not None else await deps.db.replay(host.uuid)
    raw = Compactor(host, deps)._fixed(provider) + sum(meter.sizes(context))
    first = context[0] if context else None
    summarized = (
        first is not None
        and first.role == "user"
        and bool(first.content)
        and isinstance(first.content[0], TextBlock)
        and first.content[0].text.startswith(SUMMARY_PREFIX)
    )
    return ContextStatus(
        window=budget.window,
        window_source="provider" if learned else limits.source,
        max_output=budget.output,
        limit=budget.limit,
        compact_at=deps.config.compact_at,
        tokens=meter.scale(provider, raw),
        calibrated=provider in meter.ratio,
        messages=len(context),
        summarized=summarized,
    )
