"""Drive an ACP agent (``ikictl acp``) from a test through a client written by
others: the official TypeScript SDK, run by the relay ``acp_client.mjs``.

    async with open_acp_client([ikictl, "acp"], env, cwd) as c:
        init = await c.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        sid = (await c.call("newSession", {"cwd": cwd, "mcpServers": []}))["sessionId"]
        async with trio.open_nursery() as n:   # a prompt waits for its turn to end
            n.start_soon(c.call, "prompt", {"sessionId": sid, "prompt": [...]})
            ask = await c.next(lambda m: m["type"] == "permission")
            await c.answer(ask["rid"], {"outcome": "selected", "optionId": "allow"})
        assert await c.close() == 0

Methods are named as the SDK (2.4.0) names them: ``initialize``,
``authenticate``, ``logout``, ``newSession``, ``loadSession``, ``listSessions``,
``deleteSession``, ``resumeSession``, ``closeSession``, ``setSessionMode``,
``setSessionConfigOption``, ``prompt``, ``unstable_forkSession``,
``unstable_archiveSession``, ``unstable_unarchiveSession``,
``unstable_sessionStatus``, ``unstable_setSessionTitle``,
``unstable_listProviders``, ``unstable_setProvider``,
``unstable_disableProvider``, ``unstable_authStatus`` - or by wire name
(``session/new``; ``_x/y`` for extensions). ``initialize``'s params are sent
as given: the client capabilities are the test's.

The relay's messages (``c.next`` returns them; ``c.messages`` keeps them all):

- ``{"type": "update", "params": {...}}``: a ``session/update``, params as the
  agent sent them, in wire order (so before the result of its prompt);
- ``{"type": "permission", "rid": K, "params": {...}}``: waits for ``c.answer``;
- ``{"type": "client_call", "method", "params"}``: anything else the agent
  asked (fs/*, terminal/*...), refused with -32601 "not offered by this client";
- ``{"type": "notification", "method", "params"}``: other notifications;
- ``{"type": "raw_reply", "message": {...}}``: a reply to none of the SDK's
  requests: the answer to a ``c.raw`` line (give raw requests string ids: the
  SDK numbers its own 0, 1, 2...). An agent that drops an unparseable line
  sends nothing, and nothing shows;
- ``{"type": "rejected", "message": {...}}``: an error reply the SDK itself
  sent the agent (a request or line it refused);
- ``{"type": "sdk_log", "level", "text"}``: what the SDK printed on stderr
  (a notification its schema refused, a reply to an unknown id...);
- ``{"type": "permission_aborted", "rid": K}``: the agent withdrew request K
  (``$/cancel_request``); the SDK answered it -32800;
- ``{"type": "exited", "code", "signal"}``: the agent is gone (written once).

``c.call`` takes the ``result`` / ``error`` (raised as :class:`AcpError`) /
``relay_error`` (:class:`AcpDriverError`: the connection closed, no such
method) of its own call. ``c.cancel``, ``c.notify``, ``c.raw``, ``c.answer``,
``c.kill`` and ``c.close`` reach the agent in the order they were made.

``c.problems()`` lists the ``rejected`` and ``sdk_log`` messages: empty when
the official client accepted everything the agent sent.

``node`` and the SDK (``IKIGAI_ACP_SDK``, else ``.cache/acp-sdk/node_modules``,
where scripts/test installs it) are required: without them the test fails
(never skips) with the command that installs them.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests._ready import READY_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
RELAY = Path(__file__).with_name("acp_client.mjs")
SDK_PIN = "@agentclientprotocol/sdk@2.4.0"
SDK_FALLBACK = ROOT / ".cache" / "acp-sdk" / "node_modules"
INSTALL = f"npm install --no-audit --no-fund --prefix .cache/acp-sdk {SDK_PIN}"
# one step of a test (a call, a wait for the next message); the test's own
# trio.fail_after bounds the whole
STEP_TIMEOUT = 30.0
# how long the relay and agent get to go once the test is done with them
SHUTDOWN_GRACE = 30.0
STDERR_TAIL = 4000

Message = dict[str, Any]


class AcpError(Exception):
    """The agent answered a call with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code} {message}" + ("" if data is None else f" {data!r}"))
        self.code = code
        self.message = message
        self.data = data


class AcpDriverError(AssertionError):
    """The relay could not do what was asked: no answer in time, the relay or
    the connection gone, a method the SDK does not have."""


def require_node_and_sdk() -> tuple[str, str]:
    """node's path and the node_modules folder holding the SDK; a test without
    them fails, saying how to install them."""
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "node is not installed: the ACP tests run the official TypeScript SDK "
            "(install Node.js 20+, e.g. `apt-get install nodejs npm`, then "
            f"`{INSTALL}`)"
        )
    sdk = os.environ.get("IKIGAI_ACP_SDK") or str(SDK_FALLBACK)
    if not (Path(sdk) / "@agentclientprotocol" / "sdk" / "package.json").is_file():
        pytest.fail(
            f"the ACP TypeScript SDK is not installed in {sdk}: run `{INSTALL}` in "
            f"{ROOT} (scripts/test does), or set IKIGAI_ACP_SDK to the node_modules "
            "folder holding @agentclientprotocol/sdk"
        )
    return node, str(Path(sdk).resolve())


def is_type(kind: str) -> Callable[[Message], bool]:
    return lambda m: m.get("type") == kind


class AcpClient:
    """One relay process and the agent it runs; made by :func:`open_acp_client`."""

    def __init__(self, proc: trio.Process) -> None:
        self._proc = proc
        self._send_lock = trio.Lock()
        self._pending: list[Message] = []
        self._changed = trio.Event()
        self._eof = False
        self._stderr_closed = trio.Event()
        self._stderr = bytearray()
        self._next_id = 1
        self.messages: list[Message] = []
        self.sdk_version: str | None = None
        self.agent_pid: int | None = None

    # -- commands ---------------------------------------------------------------

    # A timeout of our own (ASYNC109) as well as the test's fail_after: its
    # failure names what was awaited, the unread messages and the stderr.
    async def call(
        self,
        method: str,
        params: Any = None,
        timeout: float = STEP_TIMEOUT,  # noqa: ASYNC109
    ) -> Any:
        """Call an agent method through the SDK and return its result; raise
        :class:`AcpError` on a JSON-RPC error answer."""
        call_id = self._next_id
        self._next_id += 1
        cmd: Message = {"id": call_id, "op": "call", "method": method}
        if params is not None:
            cmd["params"] = params
        await self._send(cmd)
        answer = await self.next(
            lambda m: (
                m.get("id") == call_id and m.get("type") in ("result", "error", "relay_error")
            ),
            timeout=timeout,
            what=f"the answer to {method} (call {call_id})",
        )
        if answer["type"] == "result":
            return answer["result"]
        error = answer["error"]
        if answer["type"] == "error":
            raise AcpError(error["code"], error["message"], error.get("data"))
        raise AcpDriverError(f"{method}: {error['message']}{self._stderr_tail()}")

    async def cancel(self, session_id: str) -> None:
        """Send the ``session/cancel`` notification."""
        await self._send({"op": "cancel", "params": {"sessionId": session_id}})

    async def notify(self, method: str, params: Any = None) -> None:
        """Send any notification through the SDK (by wire name)."""
        await self._send({"op": "notify", "method": method, "params": params})

    async def raw(self, line: str | bytes, newline: bool = True) -> None:
        """Write ``line`` to the agent's stdin as is, bypassing the SDK (bytes
        may be anything, invalid UTF-8 included); a newline follows unless
        ``newline`` is false."""
        cmd: Message = {"op": "raw", "newline": newline}
        if isinstance(line, bytes):
            cmd["b64"] = base64.b64encode(line).decode()
        else:
            cmd["line"] = line
        await self._send(cmd)

    async def answer(
        self, rid: int, outcome: Mapping[str, Any] | None = None, *, never: bool = False
    ) -> None:
        """Answer permission request ``rid`` with ``outcome`` (as the schema has
        it: ``{"outcome": "selected", "optionId": ...}`` or ``{"outcome":
        "cancelled"}``), or, with ``never``, leave it unanswered for good."""
        if never:
            await self._send({"op": "answer", "rid": rid, "never": True})
        else:
            await self._send({"op": "answer", "rid": rid, "outcome": dict(outcome or {})})

    async def kill(self, sig: str = "SIGTERM") -> None:
        """Send the agent a signal (by name)."""
        await self._send({"op": "kill", "signal": sig})

    async def close(self, timeout: float = STEP_TIMEOUT) -> int | None:  # noqa: ASYNC109
        """Close the agent's stdin and wait for it to exit: its exit status, or
        ``-N`` when signal N ended it (as subprocess does)."""
        gone = self.exited()
        if gone is None:
            await self._send({"op": "close"})
            gone = await self.next(is_type("exited"), timeout=timeout, what="the agent to exit")
        if gone.get("signal"):
            return -int(signal.Signals[gone["signal"]])
        return gone.get("code")

    # -- what arrived -----------------------------------------------------------

    async def next(
        self,
        pred: Callable[[Message], bool] | None = None,
        timeout: float = STEP_TIMEOUT,  # noqa: ASYNC109
        what: str | None = None,
    ) -> Message:
        """The next message passing ``pred`` (any, without one), taken out of
        the queue; the others stay in it, in order, for later calls."""
        with trio.move_on_after(timeout):
            while True:
                for i, msg in enumerate(self._pending):
                    if pred is None or pred(msg):
                        del self._pending[i]
                        return msg
                if self._eof:
                    # the relay's last words (why it ended) belong in the message
                    with trio.move_on_after(5):
                        await self._stderr_closed.wait()
                    raise AcpDriverError(
                        f"the relay ended while waiting for {what or 'a message'}; "
                        f"unread: {self._pending!r}{self._stderr_tail()}"
                    )
                await self._changed.wait()
        raise AcpDriverError(
            f"no {what or 'message'} within {timeout} s; unread: {self._pending!r}"
            f"{self._stderr_tail()}"
        )

    def updates(self, session_id: str) -> list[Message]:
        """The ``session/update`` params seen so far for ``session_id`` (read or
        not), in arrival order."""
        return [
            m["params"]
            for m in self.messages
            if m.get("type") == "update"
            and isinstance(m.get("params"), dict)
            and m["params"].get("sessionId") == session_id
        ]

    def message_text(self, session_id: str) -> str:
        """The text of the agent's message chunks so far in ``session_id``."""
        return "".join(
            u["update"].get("content", {}).get("text", "")
            for u in self.updates(session_id)
            if u.get("update", {}).get("sessionUpdate") == "agent_message_chunk"
        )

    def problems(self) -> list[Message]:
        """What the official client refused or complained about so far."""
        return [m for m in self.messages if m.get("type") in ("rejected", "sdk_log")]

    def exited(self) -> Message | None:
        """The ``exited`` message, once the agent is gone."""
        return next((m for m in self.messages if m.get("type") == "exited"), None)

    def stderr(self) -> str:
        """What the relay and the agent wrote on stderr so far."""
        return self._stderr.decode("utf-8", "replace")

    # -- plumbing ---------------------------------------------------------------

    async def _send(self, cmd: Message) -> None:
        assert self._proc.stdin is not None
        async with self._send_lock:
            try:
                await self._proc.stdin.send_all(json.dumps(cmd).encode() + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise AcpDriverError(f"the relay is gone{self._stderr_tail()}") from exc

    def _push(self, msg: Message) -> None:
        self.messages.append(msg)
        self._pending.append(msg)
        self._changed.set()
        self._changed = trio.Event()

    async def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        buf = b""
        try:
            while chunk := await self._proc.stdout.receive_some(65536):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._push(self._decode(line))
        finally:
            self._eof = True
            self._changed.set()

    @staticmethod
    def _decode(line: bytes) -> Message:
        try:
            msg = json.loads(line)
        except ValueError:
            return {"type": "bad_line", "line": line.decode("utf-8", "replace")}
        return msg if isinstance(msg, dict) else {"type": "bad_line", "line": repr(msg)}

    async def _read_stderr(self) -> None:
        # kept for assertions and failure messages, and still shown: pytest
        # prints it with a failing test
        assert self._proc.stderr is not None
        try:
            while chunk := await self._proc.stderr.receive_some(65536):
                self._stderr += chunk
                sys.stderr.write(chunk.decode("utf-8", "replace"))
        finally:
            self._stderr_closed.set()

    def _stderr_tail(self) -> str:
        tail = self.stderr()[-STDERR_TAIL:]
        return f"\n--- stderr (relay and agent) ---\n{tail}" if tail.strip() else ""

    async def _shutdown(self) -> None:
        """Our stdin closed tells the relay we are done: it closes the agent's
        stdin, waits for it (killing it after a while) and exits."""
        assert self._proc.stdin is not None
        with trio.move_on_after(SHUTDOWN_GRACE):
            await self._proc.stdin.aclose()
            await self._proc.wait()
        if self._proc.returncode is None:
            self._proc.terminate()  # the relay kills the agent on SIGTERM
            with trio.move_on_after(5):
                await self._proc.wait()
        if self._proc.returncode is None:
            self._proc.kill()
            await self._proc.wait()


@asynccontextmanager
async def open_acp_client(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    *,
    trace: bool = False,
) -> AsyncIterator[AcpClient]:
    """Start the relay running ``command`` as the agent and wait until it is
    ready. ``env`` is the whole environment of the agent (default: ours); with
    ``trace`` every JSON-RPC message both ways also shows as ``{"type":
    "wire", "dir": "in"|"out", "message": ...}``."""
    node, sdk = require_node_and_sdk()
    full_env = dict(os.environ if env is None else env)
    full_env["IKIGAI_ACP_SDK"] = sdk
    full_env["IKIGAI_ACP_TRACE"] = "1" if trace else "0"
    proc = await trio.lowlevel.open_process(
        [node, str(RELAY), "--", *command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        cwd=None if cwd is None else os.fspath(cwd),
    )
    client = AcpClient(proc)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client._read_stdout)
            nursery.start_soon(client._read_stderr)
            try:
                ready = await client.next(
                    is_type("ready"), timeout=READY_TIMEOUT, what="the relay to start"
                )
                client.sdk_version = ready.get("sdk_version")
                client.agent_pid = ready.get("agent_pid")
                yield client
            finally:
                with trio.CancelScope(shield=True):
                    await client._shutdown()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The readers never fail: a lone exception is the test's own (a failed
        # assert, an AcpError) and is shown as itself, not wrapped in a group.
        if len(group.exceptions) != 1:
            raise
        only = group.exceptions[0]
        raise only from only.__cause__


__all__ = [
    "SDK_PIN",
    "AcpClient",
    "AcpDriverError",
    "AcpError",
    "Message",
    "is_type",
    "open_acp_client",
    "require_node_and_sdk",
]
