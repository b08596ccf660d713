"""Run the bridge: stdin and stdout to the editor through the SDK's connection,
one socket connection to the daemon (opened at once, beside the editor's
``initialize``, and held until the editor goes)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, cast

from acp import RequestError
from acp.agent.connection import AgentSideConnection
from pydantic import ValidationError

import protocol as p
from ikictl.acp.bridge import Bridge
from ikictl.acp.link import DaemonLink
from ikictl.acp.session import stderr
from ikictl.acp.wire import open_stdio

__all__ = ["serve"]

_SHOWN_ERRORS = 3


def compact_errors(handler: Any) -> Any:
    """The SDK answers a params error with pydantic's whole error list, input
    included (a 10 MB prompt quoted back): here the first few fields and
    what is wrong with each, never the input."""

    async def handle(method: str, params: Any, is_notification: bool) -> Any:
        try:
            return await handler(method, params, is_notification)
        except (ValidationError, RequestError) as e:
            if not is_notification:
                raise _worded(method, e) from None
            # nobody to answer: one line on stderr, not the SDK's traceback
            stderr(f"notification {method[:80]!r} ignored: {str(_worded(method, e))[:300]}")
            return None

    return handle


def _worded(method: str, e: ValidationError | RequestError) -> RequestError:
    if isinstance(e, RequestError):
        return e
    errors = e.errors(include_input=False, include_url=False, include_context=False)
    said = "; ".join(
        f"{'.'.join(str(x) for x in err['loc'])[:120] or 'params'}: {err['msg'][:200]}"
        for err in errors[:_SHOWN_ERRORS]
    )
    more = f" (and {len(errors) - _SHOWN_ERRORS} more)" if len(errors) > _SHOWN_ERRORS else ""
    return RequestError(p.INVALID_PARAMS, f"invalid params for {method[:80]}: {said}{more}")


def _quiet_exit_race(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio.run's shutdown of the default executor can find its future
    already cancelled as the process exits (a traceback on the editor's log,
    about nothing); everything else is reported as asyncio would."""
    if isinstance(context.get("exception"), asyncio.InvalidStateError):
        return
    loop.default_exception_handler(context)


async def serve(
    *,
    socket: str | None,
    autostart: bool,
    model: str | None,
    policy: str | None,
    permission_timeout: float | None,
) -> int:
    asyncio.get_running_loop().set_exception_handler(_quiet_exit_race)
    out = await open_stdio()
    link = DaemonLink(socket, autostart)
    # connect at once, beside the editor's initialize (a failure is answered
    # to the first request that needs the daemon, which tries again)
    early = asyncio.create_task(link.client())
    bridge = Bridge(link, out, model=model, policy=policy, permission_timeout=permission_timeout)
    # cast: the Bridge answers plain JSON-shaped dicts, not the SDK's models (sent as they are)
    conn = AgentSideConnection(cast(Any, bridge), out, listening=False, use_unstable_protocol=True)
    # the SDK has no hook for how a params error is worded: wrap its dispatcher
    conn._conn._handler = compact_errors(conn._conn._handler)
    try:
        await conn.listen()
    finally:
        with contextlib.suppress(Exception):
            await bridge.close()
        with contextlib.suppress(Exception):
            await conn.close()
        with contextlib.suppress(BaseException):
            await early
        await link.close()
    return 0
