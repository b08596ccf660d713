"""Daemons on different hosts: a TCP port for the other daemons only, each
connection authenticated with the shared secret before it is served.

A TCP port between hosts is not the Unix socket's same-user trust, so a
connection must prove it knows ``cluster_secret`` (credentials.json) before a
single request is read, and the daemon proves it back: a challenge each way,
answered with an HMAC-SHA256 of the other side's random challenge and the
prover's own daemon id (a proof made for one side is no use to the other).
The secret itself never crosses the wire. The bytes that follow are the
control protocol, unencrypted: run it on a private network (or a VPN), as
docs/cluster.md says.

    {"daemon": "a-1f2e3d", "challenge": "<hex>"}                  server ->
    {"daemon": "b-9c8b7a", "proof": "<hex>", "challenge": "<hex>"} <- client
    {"proof": "<hex>"}                                            server ->
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import socket
from typing import Any

import structlog
import trio

from daemon.server import ControlServer

log = structlog.get_logger("ikigai.cluster")

HANDSHAKE_S = 10.0  # a peer that has not proved itself by then is dropped
_MAX_HELLO = 4096


class NotAuthenticated(Exception):
    """The other side did not prove it knows the shared secret (or is not who it says)."""


def proof(secret: str, challenge: str, prover: str) -> str:
    return hmac.new(
        secret.encode(), f"{challenge}\0{prover}".encode(), hashlib.sha256
    ).hexdigest()


async def _line(stream: trio.abc.Stream) -> dict[str, Any]:
    """One short JSON object line, read a byte at a time: nothing after it is
    taken from the stream (the control protocol follows)."""
    buf = bytearray()
    while not buf.endswith(b"\n"):
        if len(buf) > _MAX_HELLO:
            raise NotAuthenticated("a handshake line too long")
        data = await stream.receive_some(1)
        if not data:
            raise NotAuthenticated("the connection closed during the handshake")
        buf += data
    try:
        value = json.loads(buf)
    except ValueError:
        raise NotAuthenticated("a handshake line that is not JSON") from None
    if not isinstance(value, dict):
        raise NotAuthenticated("a handshake line that is not an object")
    return value


async def _send(stream: trio.abc.Stream, value: dict[str, Any]) -> None:
    await stream.send_all(json.dumps(value).encode() + b"\n")


async def accept(stream: trio.abc.Stream, secret: str, me: str) -> str:
    """The server's side; the peer's daemon id once it proved itself."""
    challenge = secrets.token_hex(16)
    await _send(stream, {"daemon": me, "challenge": challenge})
    hello = await _line(stream)
    peer, given, theirs = hello.get("daemon"), hello.get("proof"), hello.get("challenge")
    if not (isinstance(peer, str) and isinstance(given, str) and isinstance(theirs, str)):
        raise NotAuthenticated("a handshake without daemon, proof and challenge")
    if len(theirs) > 256 or not hmac.compare_digest(given, proof(secret, challenge, peer)):
        raise NotAuthenticated(f"daemon {peer[:64]!r} did not prove the shared secret")
    await _send(stream, {"proof": proof(secret, theirs, me)})
    return peer


async def offer(stream: trio.abc.Stream, secret: str, me: str, expect: str) -> None:
    """The client's side, to daemon ``expect``: NotAuthenticated unless it
    is that daemon and proves the secret."""
    hello = await _line(stream)
    if hello.get("daemon") != expect or not isinstance(hello.get("challenge"), str):
        raise NotAuthenticated(f"the daemon at that address is not {expect}")
    challenge = secrets.token_hex(16)
    await _send(
        stream,
        {"daemon": me, "proof": proof(secret, hello["challenge"], me), "challenge": challenge},
    )
    answer = await _line(stream)
    if isinstance(answer.get("error"), str):  # it refused this daemon, and said why
        raise NotAuthenticated(answer["error"][:200])
    given = answer.get("proof")
    if not isinstance(given, str) or not hmac.compare_digest(
        given, proof(secret, challenge, expect)
    ):
        raise NotAuthenticated(f"daemon {expect} did not prove the shared secret")


def bind(listen: str) -> tuple[socket.socket, int]:
    """A listening TCP socket for ``HOST:PORT`` (port 0: any free one) and its port."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(256)
    return sock, sock.getsockname()[1]


async def serve_peers(
    server: ControlServer,
    sock: socket.socket,
    secret: str,
    me: str,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the other daemons on ``sock``: each connection authenticated,
    then a control connection like any other."""

    async def handle(stream: trio.SocketStream) -> None:
        try:
            with trio.fail_after(HANDSHAKE_S):
                peer = await accept(stream, secret, me)
        except (NotAuthenticated, trio.TooSlowError, trio.BrokenResourceError, OSError) as e:
            log.warning("refused a daemon connection", reason=str(e))
            with trio.move_on_after(1), contextlib.suppress(trio.BrokenResourceError, OSError):
                await _send(stream, {"error": f"not let in: {e}"})
            with trio.CancelScope(shield=True):
                await stream.aclose()
            return
        log.debug("daemon connected", peer=peer)
        await server.serve_connection(stream)

    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    task_status.started()
    await trio.serve_listeners(handle, [listener])
