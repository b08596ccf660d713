"""Traces of what agents do: turns, model calls, tool calls, compactions.

The daemon builds a ``Tracer`` (``otel_tracer`` in ``_otel.py``, the one
module that imports the OpenTelemetry SDK) only when traces are asked for;
otherwise ``ActorDeps.tracer`` is None and the hooks cost one ``is None`` per
turn, model call and tool batch, never one per stream event.

Spans follow the OpenTelemetry GenAI semantic conventions (``SEMCONV``):
``invoke_agent {name}`` per turn, ``chat {model}`` / ``generate_content
{model}`` per model call, ``execute_tool {tool}`` per tool call, ``compact
{name}`` per compaction. A fork's first turn, a turn that reads mail and a
``wait`` are joined to what caused them by links (``ikigai.link.type``).

Parents are ambient, as OpenTelemetry's own context is: the turn's span is
current in the actor's task while the turn runs, each tool call's span in the
task that runs it, so a fork made by a tool call finds its cause without
being handed it.

A trace context crosses the socket as a W3C ``traceparent`` header value;
``parse_traceparent`` checks one without the SDK.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import structlog

if TYPE_CHECKING:
    from providers.types import ProviderError, Request, Response, ToolCallBlock, Usage

__all__ = [
    "SEMCONV",
    "Cause",
    "CauseKind",
    "ModelCall",
    "ToolSpan",
    "Tracer",
    "TurnSpan",
    "caused_here",
    "continuing",
    "format_traceparent",
    "parse_traceparent",
    "prompt_causes",
]

# the GenAI semantic conventions followed (all gen_ai.* names are experimental there)
SEMCONV = "1.44.0"

log = structlog.get_logger("ikigai.traces")

CauseKind = Literal["prompt", "fork", "mail", "wait"]

_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")


@dataclass(frozen=True, slots=True)
class Cause:
    """What started a turn, as a span it continues: a script's (``prompt``,
    its parent), a fork tool call (``fork``) or a mail's sender (``mail``)."""

    traceparent: str
    kind: CauseKind


def parse_traceparent(value: object) -> tuple[int, int, int] | None:
    """(trace id, span id, flags) of a W3C traceparent, or None when it is
    not one: a malformed context is ignored, never an error."""
    if not isinstance(value, str) or len(value) > 512:
        return None
    m = _TRACEPARENT.fullmatch(value.strip())
    if m is None:
        return None
    version, trace_hex, span_hex, flags_hex, rest = m.groups()
    # version ff is invalid; version 00 has exactly four fields
    if version == "ff" or (version == "00" and rest):
        return None
    trace_id, span_id = int(trace_hex, 16), int(span_hex, 16)
    if not trace_id or not span_id:
        return None
    return trace_id, span_id, int(flags_hex, 16)


def prompt_causes(value: object) -> tuple[Cause, ...]:
    """A script's ``traceparent`` as the cause of its prompt's turn; a
    malformed one is ignored (a debug line says so), never an error."""
    if value is None:
        return ()
    if parse_traceparent(value) is None:
        shown = value[:80] if isinstance(value, str) else type(value).__name__
        log.debug("traceparent ignored: not a W3C traceparent", traceparent=repr(shown))
        return ()
    assert isinstance(value, str)
    return (Cause(value.strip(), "prompt"),)


def caused_here(tracer: Tracer | None, kind: CauseKind) -> tuple[Cause, ...]:
    """The current span as the cause of what is being started (a fork's
    first turn): none when traces are off or no span is current."""
    here = tracer.current() if tracer is not None else None
    return (Cause(here, kind),) if here is not None else ()


def continuing(tracer: Tracer | None, value: object) -> AbstractContextManager[None]:
    """A script's ``traceparent`` made current while its call makes agents:
    their first turns continue its trace (forks linked to it). Nothing when
    traces are off or the value is malformed."""
    causes = prompt_causes(value) if tracer is not None else ()
    if tracer is None or not causes:
        return nullcontext()
    return tracer.continuing(causes[0].traceparent)


def format_traceparent(trace_id: int, span_id: int, flags: int = 1) -> str:
    return f"00-{trace_id:032x}-{span_id:016x}-{flags & 0xFF:02x}"


class ModelCall(Protocol):
    """The span of one model call (its retries are events on it)."""

    def retry(self, attempt: int, delay: float, error: ProviderError) -> None: ...

    def end(
        self,
        response: Response | None,
        error: ProviderError | None,
        cost: float | None,
        refused: str | None = None,
    ) -> None:
        """``refused``: why a budget stopped the call before it was made."""
        ...


class ToolSpan(Protocol):
    def end(self, content: str, is_error: bool) -> None: ...


class TurnSpan(Protocol):
    traceparent: str

    def end(
        self,
        status: str,
        reply: str,
        usage: Usage,
        cost: float | None,
        error: ProviderError | None,
        message: str | None,
    ) -> None: ...


class Tracer(Protocol):
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
    ) -> AbstractContextManager[TurnSpan]:
        """The span of a turn, current while the ``with`` runs."""
        ...

    def model_call(
        self,
        *,
        provider: str,
        api: str,
        request: Request,
        fallback_from: tuple[str, ProviderError] | None = None,
    ) -> ModelCall:
        """A model call's span, a child of the current span."""
        ...

    def tool(
        self, call: ToolCallBlock, *, server: str | None, decision: str
    ) -> AbstractContextManager[ToolSpan]:
        """A tool call's span, current while the ``with`` runs."""
        ...

    def compaction(
        self, *, agent: str, name: str, reason: str, in_turn: bool
    ) -> AbstractContextManager[None]:
        """A compaction's span, current while the ``with`` runs: a child of
        the turn's ``in_turn``, else a trace of its own."""
        ...

    def current(self) -> str | None:
        """The traceparent of the current span (None outside any)."""
        ...

    def continuing(self, traceparent: str) -> AbstractContextManager[None]:
        """A remote span (a script's) current while the ``with`` runs."""
        ...

    def link(self, traceparent: str, kind: CauseKind) -> None:
        """Link the current span to another (a ``wait`` to the turns it waited for)."""
        ...

    def mail_sent(self, mail_id: int) -> None:
        """Remember the current span as the cause of this mail."""
        ...

    def mail_causes(self, mail_ids: Sequence[int]) -> list[Cause]:
        """The spans that sent these mails (forgotten once read)."""
        ...

    def last_turn(self, agent: str) -> str | None:
        """The traceparent of the agent's latest turn here."""
        ...

    def shutdown(self) -> None:
        """Export what is left (blocking: call it on a thread)."""
        ...
