"""The errors the client raises, defined once (ikictl maps them to exit codes).

RpcError is the daemon's error answer (code, message, data), from
protocol: the contract both sides import.
"""

from __future__ import annotations

from protocol import RpcError

__all__ = [
    "DaemonUnreachable",
    "IkigaiError",
    "RequestTooLarge",
    "RpcError",
    "TurnFailed",
    "UsageError",
]

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from protocol.results import TurnOutcome


class IkigaiError(Exception):
    """Base of the client's own errors (RpcError is the daemon's answer)."""


class DaemonUnreachable(IkigaiError):
    """No daemon answers on the socket, or it closed the connection (ikictl exit 3)."""


class UsageError(IkigaiError, ValueError):
    """A request that cannot be sent as given: an argument that is not valid
    UTF-8, a line longer than the daemon takes (ikictl exit 2)."""


class RequestTooLarge(UsageError):
    """A request line longer than the daemon's max_line_bytes."""

    def __init__(self, method: str, size: int, limit: int | None) -> None:
        what = _WHAT.get(method, f"the {method} request")
        of = f"limit {limit:,}" if limit else "over the daemon's limit"
        super().__init__(
            f"{what} is too large: {size:,} bytes, {of} (max_line_bytes in config.json)"
        )
        self.size, self.limit = size, limit


class TurnFailed(IkigaiError):
    """``wait(check=True)``: the turn did not complete; ``outcome`` says how it ended."""

    def __init__(self, outcome: TurnOutcome) -> None:
        err = outcome.get("error") or {}
        why = err.get("message") if isinstance(err, dict) else None
        super().__init__(
            f"turn {outcome.get('turn')} ended {outcome.get('status')}"
            + (f": {why}" if why else "")
        )
        self.outcome = outcome


_WHAT = {
    "agent.prompt": "the prompt",
    "agent.create": "the prompt",
    "agent.fork": "the prompt",
    "agent.import": "the imported agent",
    "mail.send": "the mail",
    "agent.set_system": "the system prompt",
}
