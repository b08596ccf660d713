"""The ACP agent an editor talks to: each ACP method carried out as calls to
the daemon. A session is an ikigai agent (its id is the agent's uuid), so a
session outlives the editor, and an editor can open an agent a script made.

Methods take the SDK's parsed params (pydantic models) and answer plain
JSON-shaped dicts in the schema's camelCase, which the SDK sends as they are."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from acp import RequestError

import protocol as p
from ikictl.acp import mapping
from ikictl.acp.options import OptionError, config_options, modes, set_option
from ikictl.acp.session import Session, stderr
from protocol.version import __version__

if TYPE_CHECKING:
    from ikigai.aio import AsyncClient

    from .link import DaemonLink
    from .wire import StdioTransport

__all__ = ["PROTOCOL_VERSION", "Bridge"]

PROTOCOL_VERSION = 1  # ACP's current stable version; the only one there is
_PAGE = 50  # sessions per session/list answer
_HISTORY_PAGE = 500
_REPLAY = 5000  # history rows replayed at most by session/load (the newest)
# a daemon error code as the editor reads it: a session the daemon cannot find is bad params
_CODES = {p.AGENT_NOT_FOUND: p.INVALID_PARAMS, p.AMBIGUOUS_AGENT: p.INVALID_PARAMS}
DAEMON_UNREACHABLE = -32000
# methods safe to send again on a new connection when the old one broke
_READS = frozenset({p.AGENT_SHOW, p.AGENT_LIST, p.AGENT_HISTORY, p.DAEMON_STATUS, p.MODELS_LIST})
T = TypeVar("T")


class Bridge:
    """Implements the SDK's ``acp.interfaces.Agent``."""

    def __init__(
        self,
        link: DaemonLink,
        out: StdioTransport,
        *,
        model: str | None = None,
        policy: str | None = None,
        permission_timeout: float | None = 600.0,
    ) -> None:
        self.link = link
        self.out = out
        self.model = model
        self.policy = policy
        self.permission_timeout = permission_timeout
        self.conn: Any = None
        self.sessions: dict[str, Session] = {}
        self.client_capabilities: dict[str, Any] = {}
        self._noted_mcp = False

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def _use(self, use: Callable[[AsyncClient], Awaitable[T]], *, again: bool = False) -> T:
        """``use`` the daemon connection, the daemon's errors turned into the
        editor's. A connection found broken is dropped (the next request
        connects again); with ``again`` (a read, safe to repeat) this one is
        tried once more on a new connection."""
        from ikigai.errors import DaemonUnreachable, RequestTooLarge

        for attempt in (1, 2):
            try:
                client = await self.link.client()
            except DaemonUnreachable as e:
                raise RequestError(
                    DAEMON_UNREACHABLE, f"the ikigai daemon cannot be reached: {e}"
                ) from None
            try:
                return await use(client)
            except DaemonUnreachable as e:
                self.link.lost(client)
                if attempt == 2 or not again:
                    raise RequestError(
                        DAEMON_UNREACHABLE,
                        f"the connection to the ikigai daemon broke ({e}): try again",
                    ) from None
            except p.RpcError as e:
                raise RequestError(_CODES.get(e.code, e.code), e.message, e.data) from None
            except RequestTooLarge as e:
                raise RequestError(
                    p.INVALID_PARAMS, f"prompt: too large for the daemon: {e}"
                ) from None
        raise AssertionError("unreachable")

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        return await self._use(lambda c: c.call(method, params), again=method in _READS)

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError(
                p.INVALID_PARAMS,
                f"sessionId: no open session {session_id[:80]!r}: open it with session/new, "
                "session/load or session/resume first",
            )
        return session

    async def _open(self, session_id: str, info: dict[str, Any]) -> Session:
        old = self.sessions.pop(session_id, None)
        session = Session(session_id, info, self.link, self.out, self.conn, self.permission_timeout)
        if old is not None:
            # a prompt still awaiting its turn on the replaced session is answered by this one
            if old.agent == session.agent:
                session.waiters, old.waiters = old.waiters, {}
                session.sent.extend(old.sent)
            await old.detach()
        self.sessions[session_id] = session
        return session

    async def _state(self, agent: str) -> dict[str, Any]:
        options = await self._use(lambda c: config_options(c, agent), again=True)
        return {"configOptions": options, "modes": modes(options)}

    def _note_mcp(self, servers: list[Any] | None) -> None:
        if servers and not self._noted_mcp:
            self._noted_mcp = True
            stderr(
                "the editor's MCP servers are not used: ikigai's agents use the MCP servers "
                "of ikigai's config (see docs/acp.md)"
            )

    # ---------------------------------------------------------------- ACP methods

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **_: Any,
    ) -> dict[str, Any]:
        self.client_capabilities = _plain(client_capabilities)
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
                "sessionCapabilities": {"list": {}, "fork": {}, "resume": {}, "close": {}},
            },
            "authMethods": [],
            "agentInfo": {"name": "ikigai", "title": "ikigai", "version": __version__},
        }

    async def authenticate(self, method_id: str, **_: Any) -> dict[str, Any]:
        raise RequestError(
            p.INVALID_PARAMS, "methodId: ikigai asks for no authentication (authMethods is empty)"
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> dict[str, Any]:
        if not os.path.isabs(cwd) or "\x00" in cwd:
            raise RequestError(p.INVALID_PARAMS, "cwd: must be an absolute path")
        self._note_mcp(mcp_servers)
        params: dict[str, Any] = {"cwd": cwd}
        if self.model:
            params["model"] = self.model
        if self.policy:
            params["policy"] = self.policy
        created = await self._call(p.AGENT_CREATE, params)
        info = created["agent"]
        session = await self._open(info["uuid"], info)
        await self._use(session.start)
        return {"sessionId": info["uuid"]} | await self._state(info["uuid"])

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> dict[str, Any]:
        self._note_mcp(mcp_servers)
        info = await self._call(p.AGENT_SHOW, {"agent": session_id})
        session = await self._open(session_id, info)
        await self._use(session.subscribe)  # nothing said meanwhile is lost
        for update in mapping.history_updates(await self._history(info["uuid"]), info.get("cwd")):
            await session.update(update)
        await self._use(session.start)
        return await self._state(info["uuid"])

    async def _history(self, agent: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        params: dict[str, Any] = {"agent": agent, "blocks": True, "limit": _HISTORY_PAGE}
        while len(rows) < _REPLAY:
            page = await self._call(p.AGENT_HISTORY, params)
            rows[:0] = page["messages"]
            if not page["more"] or not page["messages"]:
                break
            params["before"] = page["messages"][0]["id"]
        return rows[-_REPLAY:]

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> dict[str, Any]:
        self._note_mcp(mcp_servers)
        info = await self._call(p.AGENT_SHOW, {"agent": session_id})
        session = await self._open(session_id, info)
        await self._use(session.start)
        return await self._state(info["uuid"])

    async def fork_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> dict[str, Any]:
        self._note_mcp(mcp_servers)
        parent = self._session(session_id)
        forked = await self._call(p.AGENT_FORK, {"agent": parent.agent})
        info = forked["agent"]
        session = await self._open(info["uuid"], info)
        await self._use(session.start)
        return {"sessionId": info["uuid"]} | await self._state(info["uuid"])

    async def close_session(self, session_id: str, **_: Any) -> dict[str, Any]:
        session = self._session(session_id)
        self.sessions.pop(session_id, None)
        await session.detach()
        return {}

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> dict[str, Any]:
        start = 0
        if cursor is not None:
            if not cursor.isdigit() or len(cursor) > 9:
                raise RequestError(p.INVALID_PARAMS, "cursor: not a cursor this agent gave")
            start = int(cursor)
        agents = await self._call(p.AGENT_LIST, {})
        if cwd is not None:
            agents = [a for a in agents if a.get("cwd") == cwd]
        agents.sort(key=lambda a: a.get("last_active_at") or "", reverse=True)
        page = agents[start : start + _PAGE]
        answer: dict[str, Any] = {
            "sessions": [
                {
                    "sessionId": a["uuid"],
                    "cwd": a.get("cwd") or "/",
                    "title": a.get("name") or a["uuid"],
                    "updatedAt": a.get("last_active_at"),
                }
                for a in page
            ]
        }
        if start + _PAGE < len(agents):
            answer["nextCursor"] = str(start + _PAGE)
        return answer

    async def set_session_mode(self, mode_id: str, session_id: str, **_: Any) -> dict[str, Any]:
        await self._set(self._session(session_id), "policy", mode_id)
        return {}

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> dict[str, Any]:
        session = self._session(session_id)
        await self._set(session, config_id, value)
        return {"configOptions": (await self._state(session.agent))["configOptions"]}

    async def _set(self, session: Session, config_id: str, value: object) -> None:
        try:
            await self._use(lambda c: set_option(c, session.agent, config_id, value))
        except OptionError as e:
            raise RequestError(p.INVALID_PARAMS, str(e)) from None

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> dict[str, Any]:
        session = self._session(session_id)
        blocks = [_plain(b) for b in prompt]
        try:
            parts = mapping.prompt_parts(blocks)
        except mapping.PromptError as e:
            raise RequestError(p.INVALID_PARAMS, str(e)) from None
        if not parts.text.strip():
            raise RequestError(p.INVALID_PARAMS, "prompt: empty: write something to the agent")
        params: dict[str, Any] = {"agent": session.agent, "text": parts.text}
        if parts.attachments:
            params["attachments"] = parts.attachments
        session.expect(parts.text)
        try:
            queued = await self._call(p.AGENT_PROMPT, params)
        except BaseException:
            with contextlib.suppress(ValueError):
                session.sent.remove(parts.text)
            raise
        # a session/load while the prompt was being queued replaced the session
        session = self.sessions.get(session_id, session)
        ended = await session.outcome(queued["turn"])
        reason = mapping.stop_reason(ended.status, ended.finish)
        if reason is None:
            error = ended.error if isinstance(ended.error, dict) else {}
            why = ended.message or error.get("message") or ended.status
            raise RequestError(
                p.TURN_FAILED,
                f"the turn ended in error ({ended.status}): {why}",
                {"status": ended.status, "error": ended.error},
            )
        return {"stopReason": reason}

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            return  # a notification: nothing to answer, nothing to cancel
        with contextlib.suppress(RequestError):
            await self._call(p.AGENT_CANCEL, {"agent": session.agent})

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def close(self) -> None:
        """The editor has gone: let go of every agent (they keep running)."""
        for session in list(self.sessions.values()):
            await session.detach()
        self.sessions.clear()


def _plain(value: Any) -> dict[str, Any]:
    """The SDK gives a model, or a bare value where its validation let one through."""
    if hasattr(value, "model_dump"):
        dumped = value.model_dump(by_alias=True, exclude_none=True)
        return dumped if isinstance(dumped, dict) else {}
    return value if isinstance(value, dict) else {}
