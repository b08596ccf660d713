"""The Tracer on the OpenTelemetry SDK: spans and metrics per the GenAI
semantic conventions (``SEMCONV``). Imported only when traces are on.

Spans are started with explicit parents and made current with ``use_span``
in the task that runs their work; ending one only hands it to the span
processor (a batch processor exports on its own thread), so a turn never
waits for a collector.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TracerProvider,
)

from providers.secrets import scrub
from providers.types import (
    ProviderError,
    Request,
    Response,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
)

from . import SEMCONV, Cause, CauseKind, format_traceparent, parse_traceparent

SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV}"
_KEEP_MAIL = 10_000  # mails whose sender is remembered until read

# gen_ai.provider.name where the convention names a provider otherwise than ikigai does
_PROVIDER_NAMES = {"google": "gcp.gemini", "xai": "x_ai", "mistral": "mistral_ai"}
# the conventions' advised buckets (gen_ai.client.token.usage, .operation.duration)
_TOKEN_BUCKETS = [4.0**i for i in range(14)]
_SECONDS_BUCKETS = [0.01 * 2**i for i in range(14)]


def provider_name(provider: str) -> str:
    return _PROVIDER_NAMES.get(provider, provider)


def _context_of(traceparent: str) -> SpanContext | None:
    parsed = parse_traceparent(traceparent)
    if parsed is None:
        return None
    trace_id, span_id, flags = parsed
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags & 1))


def _traceparent(span: Span) -> str:
    c = span.get_span_context()
    return format_traceparent(c.trace_id, c.span_id, int(c.trace_flags))


def _error(span: Span, error: ProviderError | None, message: str | None = None) -> None:
    if error is not None:
        span.set_attribute("error.type", error.category)
        if error.http_status is not None:
            span.set_attribute("http.response.status_code", error.http_status)
        span.set_status(Status(StatusCode.ERROR, scrub(error.message)[:1000]))
    elif message:
        span.set_attribute("error.type", "ikigai.turn")
        span.set_status(Status(StatusCode.ERROR, scrub(message)[:1000]))


def _usage(span: Span, usage: Usage) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    if usage.thinking_tokens:
        span.set_attribute("gen_ai.usage.reasoning.output_tokens", usage.thinking_tokens)
    if usage.cached_tokens:
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens)
    if usage.cache_write_tokens:
        span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)


def _messages(role: str, parts: list[dict[str, Any]], finish: str | None = None) -> str:
    message: dict[str, Any] = {"role": role, "parts": parts}
    if finish is not None:
        message["finish_reason"] = finish
    return scrub(json.dumps([message], ensure_ascii=False, default=str))


def _parts(response: Response) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in response.blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ThinkingBlock) and block.text:
            parts.append({"type": "reasoning", "content": block.text})
        elif isinstance(block, ToolCallBlock):
            parts.append(
                {
                    "type": "tool_call",
                    "id": block.id,
                    "name": block.name,
                    "arguments": block.arguments,
                }
            )
    return parts


class _ModelCall:
    def __init__(self, owner: OtelTracer, span: Span, attrs: dict[str, Any]) -> None:
        self.owner, self.span, self.attrs = owner, span, attrs
        self.started = time.monotonic()

    def retry(self, attempt: int, delay: float, error: ProviderError) -> None:
        attrs: dict[str, Any] = {
            "ikigai.retry.attempt": attempt,
            "ikigai.retry.delay_s": round(delay, 3),
            "error.type": error.category,
        }
        if error.http_status is not None:
            attrs["http.response.status_code"] = error.http_status
        self.span.add_event("ikigai.retry", attrs)

    def end(
        self,
        response: Response | None,
        error: ProviderError | None,
        cost: float | None,
        refused: str | None = None,
    ) -> None:
        span, attrs = self.span, dict(self.attrs)
        if refused is not None:  # not sent: a budget would have been crossed
            span.set_attribute("ikigai.budget.refused", scrub(refused)[:300])
        if response is not None:
            if response.model:
                span.set_attribute("gen_ai.response.model", response.model)
                attrs["gen_ai.response.model"] = response.model
            data = response.provider_data or {}
            rid = data.get("id") or data.get("response_id")
            if isinstance(rid, str):
                span.set_attribute("gen_ai.response.id", rid)
            span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
            _usage(span, response.usage)
            if cost is not None:
                span.set_attribute("ikigai.cost_usd", cost)
            if self.owner.content:
                span.set_attribute(
                    "gen_ai.output.messages",
                    _messages("assistant", _parts(response), response.finish_reason),
                )
            tokens = self.owner.tokens
            tokens.record(response.usage.input_tokens, {**attrs, "gen_ai.token.type": "input"})
            tokens.record(response.usage.output_tokens, {**attrs, "gen_ai.token.type": "output"})
        _error(span, error)
        if error is not None:
            attrs["error.type"] = error.category
        if response is not None or error is not None:  # not a call cancelled or never made
            self.owner.duration.record(time.monotonic() - self.started, attrs)
        span.end()


class _ToolSpan:
    def __init__(self, span: Span, content: bool) -> None:
        self.span, self.content = span, content

    def end(self, content: str, is_error: bool) -> None:
        if self.content:
            self.span.set_attribute("gen_ai.tool.call.result", scrub(content))
        if is_error:
            self.span.set_attribute("error.type", "ikigai.tool_error")
            self.span.set_status(Status(StatusCode.ERROR, scrub(content)[:300]))


class _TurnSpan:
    def __init__(self, span: Span, content: bool) -> None:
        self.span, self.content = span, content
        self.traceparent = _traceparent(span)

    def end(
        self,
        status: str,
        reply: str,
        usage: Usage,
        cost: float | None,
        error: ProviderError | None,
        message: str | None,
    ) -> None:
        span = self.span
        span.set_attribute("ikigai.turn.status", status)
        _usage(span, usage)
        if cost is not None:
            span.set_attribute("ikigai.cost_usd", cost)
        if self.content and reply:
            span.set_attribute(
                "gen_ai.output.messages",
                _messages("assistant", [{"type": "text", "content": reply}]),
            )
        if status in ("error", "budget_exceeded") or error is not None:
            _error(span, error, message or status)


class OtelTracer:
    """Spans and metrics of agents on the given providers. ``content``:
    prompts, replies, tool arguments and results recorded (scrubbed)."""

    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        *,
        content: bool,
        version: str = "",
    ) -> None:
        self.providers = (tracer_provider, meter_provider)
        self.tracer = tracer_provider.get_tracer("ikigai", version, schema_url=SCHEMA_URL)
        meter = meter_provider.get_meter("ikigai", version, schema_url=SCHEMA_URL)
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self.content = content
        self._mail: OrderedDict[int, str] = OrderedDict()
        self._last: dict[str, str] = {}

    # ------------------------------------------------------------ spans

    @contextmanager
    def turn(
        self,
        *,
        agent: str,
        name: str,
        turn: str,
        provider: str,
        model: str,
        prompt: str,
        causes: Sequence[Cause],
    ) -> Iterator[_TurnSpan]:
        links: list[Link] = []
        parent = None
        for cause in causes:
            ctx = _context_of(cause.traceparent)
            if ctx is None:
                continue
            if parent is None:  # the first cause is the parent: one tree reads as one trace
                parent = trace.set_span_in_context(NonRecordingSpan(ctx))
            if cause.kind != "prompt":
                links.append(Link(ctx, {"ikigai.link.type": cause.kind}))
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": agent,
            "gen_ai.agent.name": name,
            "gen_ai.conversation.id": agent,
            "gen_ai.provider.name": provider_name(provider),
            "gen_ai.request.model": model,
            "ikigai.turn.id": turn,
        }
        if self.content:
            attrs["gen_ai.input.messages"] = _messages(
                "user", [{"type": "text", "content": prompt}]
            )
        span = self.tracer.start_span(
            f"invoke_agent {name}",
            context=parent if parent is not None else trace.set_span_in_context(trace.INVALID_SPAN),
            kind=SpanKind.INTERNAL,
            attributes=attrs,
            links=links,
        )
        handle = _TurnSpan(span, self.content)
        self._last[agent] = handle.traceparent
        with trace.use_span(
            span, end_on_exit=True, record_exception=False, set_status_on_exception=False
        ):
            yield handle

    def model_call(
        self,
        *,
        provider: str,
        api: str,
        request: Request,
        fallback_from: tuple[str, ProviderError] | None = None,
    ) -> _ModelCall:
        operation = "generate_content" if api == "generate_content" else "chat"
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider_name(provider),
            "gen_ai.request.model": request.model,
        }
        span = self.tracer.start_span(
            f"{operation} {request.model}",
            kind=SpanKind.CLIENT,
            attributes={
                **attrs,
                "gen_ai.request.max_tokens": request.max_output_tokens,
                "gen_ai.request.stream": True,
                "ikigai.api": api,
                "ikigai.thinking.level": request.thinking.level,
            },
        )
        if fallback_from is not None:
            model, error = fallback_from
            span.add_event(
                "ikigai.fallback",
                {"ikigai.fallback.from_model": model, "error.type": error.category},
            )
        return _ModelCall(self, span, attrs)

    @contextmanager
    def tool(
        self, call: ToolCallBlock, *, server: str | None, decision: str
    ) -> Iterator[_ToolSpan]:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "extension" if server else "function",
            "ikigai.permission.decision": decision,
        }
        if server:
            attrs["ikigai.mcp.server"] = server
        if self.content:
            arguments = call.arguments if call.raw_arguments is None else call.raw_arguments
            attrs["gen_ai.tool.call.arguments"] = scrub(
                json.dumps(arguments, ensure_ascii=False, default=str)
            )
        span = self.tracer.start_span(
            f"execute_tool {call.name}", kind=SpanKind.INTERNAL, attributes=attrs
        )
        with trace.use_span(
            span, end_on_exit=True, record_exception=False, set_status_on_exception=False
        ):
            yield _ToolSpan(span, self.content)

    @contextmanager
    def compaction(self, *, agent: str, name: str, reason: str, in_turn: bool) -> Iterator[None]:
        # outside a turn (agent.compact) a compaction is a trace of its own: the
        # actor's task may have been started under someone else's span
        root = None if in_turn else trace.set_span_in_context(trace.INVALID_SPAN)
        span = self.tracer.start_span(
            f"compact {name}",
            context=root,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.agent.id": agent,
                "gen_ai.agent.name": name,
                "gen_ai.conversation.id": agent,
                "ikigai.compaction.reason": reason,
            },
        )
        with trace.use_span(
            span, end_on_exit=True, record_exception=False, set_status_on_exception=False
        ):
            yield

    # ------------------------------------------------------------ context

    def current(self) -> str | None:
        span = trace.get_current_span()
        if not span.get_span_context().is_valid:
            return None
        return _traceparent(span)

    @contextmanager
    def continuing(self, traceparent: str) -> Iterator[None]:
        ctx = _context_of(traceparent)
        if ctx is None:
            yield
            return
        token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(ctx)))
        try:
            yield
        finally:
            otel_context.detach(token)

    def link(self, traceparent: str, kind: CauseKind) -> None:
        ctx = _context_of(traceparent)
        span = trace.get_current_span()
        if ctx is not None and span.get_span_context().is_valid:
            span.add_link(ctx, {"ikigai.link.type": kind})

    def mail_sent(self, mail_id: int) -> None:
        here = self.current()
        if here is not None:
            self._mail[mail_id] = here
            while len(self._mail) > _KEEP_MAIL:
                self._mail.popitem(last=False)

    def mail_causes(self, mail_ids: Sequence[int]) -> list[Cause]:
        found = (self._mail.pop(i, None) for i in mail_ids)
        return [Cause(tp, "mail") for tp in found if tp is not None]

    def last_turn(self, agent: str) -> str | None:
        return self._last.get(agent)

    def shutdown(self) -> None:
        tracer_provider, meter_provider = self.providers
        for provider in (tracer_provider, meter_provider):
            stop = getattr(provider, "shutdown", None)
            if stop is not None:
                stop()


def otel_tracer(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    *,
    content: bool,
    version: str = "",
) -> OtelTracer:
    return OtelTracer(tracer_provider, meter_provider, content=content, version=version)
