"""Context compaction as the protocol shows it: ``agent.compact``'s answer and
the ``context`` object of ``agent.show``, built from what the agents report.
Kept out of api.py so that module stays small."""

from __future__ import annotations

import msgspec
import structlog

from agents import AgentError, Supervisor
from agents.compactor import CompactOutcome, ContextStatus
from protocol import results as R

log = structlog.get_logger("ikigai.daemon")


def compacted(outcome: CompactOutcome) -> R.Compacted:
    u = outcome.usage
    out: R.Compacted = {
        "compacted": outcome.compacted,
        "reason": outcome.reason,
        "messages": outcome.messages,
        "tokens_before": outcome.tokens_before,
        "tokens_after": outcome.tokens_after,
        "summary_tokens": outcome.summary_tokens,
        "usage": {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "thinking_tokens": u.thinking_tokens,
            "cached_tokens": u.cached_tokens,
        },
        "cost_usd": outcome.cost_usd,
        "model": outcome.model,
    }
    # a failed summary is an answer, not an RPC error: its calls may have
    # been paid for, and the script asked "compact" either way
    if outcome.error is not None:
        out["error"] = msgspec.to_builtins(outcome.error)
    if outcome.message is not None or outcome.error is not None:
        out["message"] = outcome.message or (outcome.error.message if outcome.error else "")
    return out


def context_info(status: ContextStatus) -> R.ContextInfo:
    return {
        "window": status.window,
        "window_source": status.window_source,
        "max_output": status.max_output,
        "limit": status.limit,
        "compact_at": status.compact_at,
        "tokens": status.tokens,
        "calibrated": status.calibrated,
        "messages": status.messages,
        "summarized": status.summarized,
    }


async def context_of(sup: Supervisor, uuid: str) -> R.ContextInfo | None:
    """The live agent's context (None once it is dead: it may die meanwhile)."""
    if sup.actor_of(uuid) is None:
        return None
    try:
        return context_info(await sup.context_status(uuid))
    except AgentError:
        return None
    except Exception:
        # a fault measuring the context must not take `show` (and `send`) down with it
        log.exception("could not measure the context", agent=uuid)
        return None
