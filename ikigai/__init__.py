"""ikigai's Python client: drive the ikigai daemon from scripts.

    import ikigai

    with ikigai.connect() as c:                       # starts a daemon if none runs
        a = c.create(name="helper")["agent"]["uuid"]
        turn = c.prompt(a, "list three primes")
        for ev in turn:                               # every event of the turn, live
            if ev["event"]["type"] == "text_delta":
                print(ev["event"]["text"], end="")
        print(turn.wait()["status"])

``Client`` is synchronous and standard library only. ``AsyncClient`` (in
ikigai.aio, imported on first use) runs under trio or asyncio (anyio).
Results are the TypedDicts of ``ikigai.types``. See docs/scripting.md.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ikigai._stream import Subscription, Turn
    from ikigai.aio import AsyncClient, AsyncSubscription, AsyncTurn, connect_async
    from ikigai.client import Client, connect
    from ikigai.errors import (
        DaemonUnreachable,
        IkigaiError,
        RequestTooLarge,
        RpcError,
        TurnFailed,
        UsageError,
    )

__all__ = [
    "AsyncClient",
    "AsyncSubscription",
    "AsyncTurn",
    "Client",
    "DaemonUnreachable",
    "IkigaiError",
    "RequestTooLarge",
    "RpcError",
    "Subscription",
    "Turn",
    "TurnFailed",
    "UsageError",
    "connect",
    "connect_async",
]

# every name is imported on first use: ``import ikigai.errors`` (ikictl's
# start) must not load the client, nor ``ikigai.Client`` the async one (anyio)
_LAZY = {
    "Client": "ikigai.client",
    "connect": "ikigai.client",
    "DaemonUnreachable": "ikigai.errors",
    "IkigaiError": "ikigai.errors",
    "RequestTooLarge": "ikigai.errors",
    "RpcError": "ikigai.errors",
    "TurnFailed": "ikigai.errors",
    "UsageError": "ikigai.errors",
    "AsyncClient": "ikigai.aio",
    "AsyncSubscription": "ikigai.aio",
    "AsyncTurn": "ikigai.aio",
    "connect_async": "ikigai.aio",
    "Subscription": "ikigai._stream",
    "Turn": "ikigai._stream",
}


def __getattr__(name: str) -> object:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'ikigai' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(where), name)
