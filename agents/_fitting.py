"""The steps of a turn around each model call that keep its request fitting
the model: the agent's MCP tools offered, the request's size known (estimate,
or the provider's count near the limit), the context compacted when it would
not fit, and a context-length refusal met with one compaction and a retry;
and the prompt's tool choice applied to each call.
A mixin of Turn (turn.py), which holds the state these methods use."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import trio

from providers.limits import output_cap
from providers.types import (
    ProviderError,
    ProviderFailure,
    Request,
    TextBlock,
    ThinkingConfig,
    ThinkingLevel,
    ToolChoice,
)

from ._answer import Answer, Fitting
from ._mcp_select import effective
from .compaction import window_from_error
from .compactor import Compactor, CompactOutcome, Reason, budget_of
from .context import step_thinking
from .events import CompactionFailed, Notice
from .limited import Passage, passage

if TYPE_CHECKING:
    from providers.types import Message, Usage

    from .deps import ActorDeps
    from .tools import ToolRegistry


class FittingSteps:
    # set by Turn
    host: Any
    deps: ActorDeps
    id: str
    first_row: int | None
    usage: Usage
    cost: float | None
    _raw: int
    _recovered: bool
    _tools: ToolRegistry
    _offered: list[int]
    priority: str
    _lowered: str | None
    _capped: bool
    tool_choice: ToolChoice
    answer: Answer | None  # the prompt's schema (agents/_answer.py)
    _choice_said = False  # a notice about the tool choice was published (once a turn)

    def _targets(self) -> list[tuple[str, str, ThinkingLevel]]:
        """The agent's model, then each configured fallback that differs from it."""
        host = self.host
        targets: list[tuple[str, str, ThinkingLevel]] = [
            (host.provider, host.model, host.thinking_level)
        ]
        for spec in self.deps.config.fallbacks:
            try:
                r = self.deps.neighbours.resolve_model(spec, current_thinking=host.thinking_level)
            except ValueError:
                continue
            if (r.provider, r.model) != (host.provider, host.model):
                targets.append((r.provider, r.model, r.thinking.level))
        return targets

    def _passage(
        self, provider: str, request: Request, *, count: bool = False
    ) -> AbstractAsyncContextManager[Passage]:
        """This turn's place in ``provider``'s limiter for ``request``: its
        input as the meter estimates it and its output cap; a token count
        (``count``) is one request and no tokens (counting spends none)."""
        host, pool = self.host, self.deps.pool
        meter = host.meter
        ratio = meter.ratio.get(provider) or pool.token_ratio.get(provider, 1.0)
        return passage(
            host,
            pool.limiter(provider),
            provider=provider,
            tree=host.tree,
            priority=self.priority,
            input_tokens=0 if count else int(meter.raw(request) * ratio) + 1,
            max_output_tokens=0 if count else request.max_output_tokens,
            turn=self.id,
        )

    def _request(
        self, model: str, provider: str, level: ThinkingLevel, history: list[Message]
    ) -> Request:
        system = self.host.system_prompt
        limits = self.deps.pool.catalog.limits(provider, model)
        # for_provider, then bound_results: kept from the last call, only what was appended walked
        messages = self.host.meter.prepared(
            history, provider, int(limits.context_window * self.deps.config.tool_result_share)
        )
        api = self.deps.pool.api_for(provider, model)
        level, lowered = step_thinking(messages, provider=provider, api=api, level=level)
        if lowered is not None and lowered != self._lowered:
            self.host.publish(Notice(text=lowered), self.id)
        self._lowered = lowered
        choice, level = self._tool_choice(api, level)
        wanted = self.deps.config.max_output_tokens
        fits = min(wanted, limits.max_output_tokens)
        cap = output_cap(api, fits)
        if cap != fits and not self._capped:
            self._capped = True
            self.host.publish(
                Notice(
                    text=f"max_output_tokens {fits} is below the {api} API's minimum: "
                    f"{cap} asked for instead (raise max_output_tokens in config.json)"
                ),
                self.id,
            )
        fitting = Fitting(self._tools.definitions(), choice, level, None)
        if self.answer is not None:
            fitting, note = self.answer.fit(
                self.deps.pool.catalog, provider, model, api, fitting
            )
            if note is not None:
                self._say(note)
        return Request(
            model=model,
            messages=messages,
            system=[TextBlock(text=system)] if system else [],
            thinking=ThinkingConfig(level=fitting.level),
            tools=fitting.tools,
            tool_choice=fitting.choice,
            max_output_tokens=cap,
            response_schema=fitting.schema,
        )

    def _tool_choice(self, api: str, level: ThinkingLevel) -> tuple[ToolChoice, ThinkingLevel]:
        """This call's tool choice and thinking level. A forced tool the agent
        no longer has (a reload took it away, its MCP server is down) leaves
        the choice to the model. Anthropic refuses thinking with a forced tool
        (400 "Thinking may not be enabled when tool_choice forces tool use"):
        that call goes without thinking, and a notice says so."""
        choice = self.tool_choice
        forced = choice.mode in ("required", "tool")
        if choice.name is not None and choice.name not in self._tools:
            self._say(f"tool_choice: {choice.name} is no longer a tool of the agent: auto instead")
            choice = self.tool_choice = ToolChoice()
        elif forced and not len(self._tools):
            self._say("tool_choice required: the agent has no tool any more: auto instead")
            choice = self.tool_choice = ToolChoice()
        elif forced and api == "messages" and level != "none":
            self._say(
                "thinking is off for this call: Anthropic takes no thinking with a forced tool"
                f" (tool_choice: {choice.name or 'required'})"
            )
            level = "none"
        return choice, level

    def _say(self, text: str) -> None:
        if not self._choice_said:
            self._choice_said = True
            self.host.publish(Notice(text=text), self.id)

    def _answered(self) -> None:
        """The turn's first answer came: a forced tool choice ends with it (the
        model must be free to stop after the tool ran); "none" holds all turn."""
        if self.tool_choice.mode in ("required", "tool"):
            self.tool_choice = ToolChoice()

    async def _fitted(
        self, model: str, provider: str, level: ThinkingLevel, *, checked: bool = False
    ) -> Request:
        """The request for this call, the context compacted first if it would
        not fit the model's window (``checked``: compaction just ran)."""
        host, meter = self.host, self.host.meter
        await self._offer_mcp()
        request = self._request(model, provider, level, await host.context())
        self._raw = meter.raw(request)
        if checked:
            return request
        budget = budget_of(
            self.deps.pool.catalog,
            provider,
            model,
            request.max_output_tokens,
            self.deps.config.compact_at,
            meter,
        )
        size = meter.scale(provider, self._raw)
        if size > budget.limit * 0.9 and provider not in meter.exact_unavailable:
            size = await self._exact(provider, model, request, size)
        if size <= budget.limit:
            return request
        outcome = await self._compact("auto", provider, model)
        if outcome.compacted:
            request = self._request(model, provider, level, await host.context())
            self._raw = meter.raw(request)
        return request

    async def _offer_mcp(self) -> None:
        """The agent's MCP tools join the built-in ones (a lazy server starts
        on this first use; one that cannot start is left out, its state says why)."""
        hub = self.deps.mcp
        servers = effective(hub, self.host.mcp)
        if hub is None or not servers:
            self._tools = self.deps.tools
            return
        specs = await hub.tool_specs(servers)
        key = [id(s) for s in specs]  # the hub hands out the same specs until a tool changes
        if key != self._offered:
            self._offered = key
            self._tools = self.deps.tools.with_extra(specs)

    async def _exact(self, provider: str, model: str, request: Request, estimate: int) -> int:
        """The provider's own count of the request (Anthropic, Gemini), near the limit."""
        meter = self.host.meter
        try:
            # the counting endpoint's rate headers are its own limits, not the
            # messages' the limiter paces: not learned from. The 30 s are the
            # count's own: the wait for the key is not in them
            async with self._passage(provider, request, count=True):
                with trio.fail_after(30):
                    exact = await self.deps.pool.get(provider, model).count_tokens(request)
        except ProviderFailure as failure:
            if failure.error.category == "invalid_request":
                meter.exact_unavailable.add(provider)  # no counting endpoint: don't ask again
            return estimate
        except trio.TooSlowError:
            return estimate
        meter.learn(provider, self._raw, exact)
        return exact

    async def _compact(self, reason: Reason, provider: str, model: str) -> CompactOutcome:
        outcome = await Compactor(self.host, self.deps, self.id, priority=self.priority).compact(
            reason=reason, provider=provider, model=model, first_row=self.first_row
        )
        if outcome.usage.total_tokens:
            self.usage = self.usage + outcome.usage
            spent = outcome.cost_usd
            self.cost = None if spent is None or self.cost is None else self.cost + spent
        if not outcome.compacted and outcome.error is None and outcome.message is None:
            self.host.publish(
                CompactionFailed(reason=reason, message=outcome.reason), self.id
            )
        return outcome

    async def _recover(
        self, request: Request, provider: str, model: str, error: ProviderError
    ) -> bool:
        """The provider found the request too long: learn its real window (from
        its message, else: smaller than this request), compact to fit it, and
        say whether a retry is worth it."""
        self._recovered = True
        meter = self.host.meter
        limits = self.deps.pool.catalog.limits(provider, model)
        refused = meter.scale(provider, self._raw) + request.max_output_tokens
        stated = window_from_error(error.message)
        window = stated if stated is not None else int(refused * 0.9)
        if window < limits.context_window:
            meter.windows[(provider, model)] = min(
                window, meter.windows.get((provider, model), window)
            )
            self.host.publish(
                Notice(
                    text=f"{provider}/{model} refused a request as longer than its window: "
                    f"taking the window as {window:,} tokens, not the {limits.source}'s "
                    f"{limits.context_window:,} (set providers.{provider}.models.{model}"
                    ".context_window in config.json)"
                ),
                self.id,
            )
        else:
            # the window is right, the estimate was low: scale it up to the refused size
            meter.at_least(provider, self._raw, window - request.max_output_tokens + 1)
        outcome = await self._compact("context_length", provider, model)
        return outcome.compacted
