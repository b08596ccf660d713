"""One ACP session: an ikigai agent an editor attached to. Its event stream
becomes ``session/update`` notifications, its approvals become
``session/request_permission`` requests, and the turns this editor started
are answered with their stop reason when they end.

The agent lives in the daemon: a session ending (the editor closes, the
process exits) unsubscribes and changes nothing else."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections import deque
from typing import TYPE_CHECKING, Any

from ikictl.acp import mapping

if TYPE_CHECKING:
    from ikigai.aio import AsyncClient, AsyncSubscription

    from .link import DaemonLink
    from .wire import StdioTransport

__all__ = ["Ended", "Session"]

log = logging.getLogger("ikictl.acp")

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT_ONCE = "reject_once"
_OPTIONS = [
    {"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"},
    {"optionId": ALLOW_ALWAYS, "name": "Always allow (this agent)", "kind": "allow_always"},
    {"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"},
]


class Ended:
    """How a turn ended: what the prompt's answer is made of."""

    __slots__ = ("error", "finish", "message", "status")

    def __init__(self, status: str, finish: str | None, error: Any, message: str | None) -> None:
        self.status = status
        self.finish = finish
        self.error = error
        self.message = message


class _Call:
    """A tool call the model is writing: its arguments arrive in pieces."""

    __slots__ = ("args", "id", "name")

    def __init__(self, call_id: str, name: str) -> None:
        self.id = call_id
        self.name = name
        self.args: list[str] = []


class Session:
    def __init__(
        self,
        sid: str,
        info: dict[str, Any],
        link: DaemonLink,
        out: StdioTransport,
        conn: Any,
        permission_timeout: float | None,
    ) -> None:
        self.id = sid  # as the editor names it (a uuid, a prefix or a name it loaded by)
        self.agent: str = info["uuid"]
        self.name: str = info.get("name") or sid
        self.cwd: str | None = info.get("cwd")
        self.link = link
        self.client: AsyncClient | None = None  # the connection our subscription is on
        self.out = out
        self.conn = conn  # the SDK's AgentSideConnection: our requests to the editor
        self.permission_timeout = permission_timeout
        self.sub: AsyncSubscription | None = None
        self.task: asyncio.Task[None] | None = None
        self.waiters: dict[str, asyncio.Future[Ended]] = {}
        self.ended: dict[str, Ended] = {}
        self.finish: dict[str, str] = {}
        self.sent: deque[str] = deque(maxlen=64)  # prompts this editor sent, not seen started yet
        self.calls: dict[int, _Call] = {}  # by the stream's block index
        self.asks: dict[str, asyncio.Task[None]] = {}  # approval id -> its permission request
        self.titles: dict[str, tuple[str, dict[str, Any]]] = {}  # call id -> (tool, args)
        self.approval_calls: dict[str, str] = {}  # approval id -> its tool call id
        self.gone = False

    # ---------------------------------------------------------------- life

    async def subscribe(self, client: AsyncClient) -> None:
        """Subscribe to the agent's new events (kept until ``start``)."""
        self.sub = await client.subscribe(self.agent)
        self.client = client

    async def start(self, client: AsyncClient) -> None:
        """Forward the events from now on, and ask the editor about the
        approvals already waiting."""
        if self.sub is None:
            await self.subscribe(client)
        self.task = asyncio.create_task(self._forward())
        await self._ask_pending(client)

    async def _ask_pending(self, client: AsyncClient) -> None:
        for pending in await client.approvals(self.agent):
            self._ask(pending["approval"], pending["tool"], pending["arguments"], None)

    async def detach(self) -> None:
        self.gone = True
        for ask in list(self.asks.values()):
            ask.cancel()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        if self.sub is not None:
            with contextlib.suppress(Exception):
                await self.sub.aclose()
        for fut in self.waiters.values():
            if not fut.done():
                fut.set_result(Ended("cancelled", None, None, "the session was closed"))

    async def update(self, update: dict[str, Any]) -> None:
        await self.out.send(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": self.id, "update": update},
            }
        )

    def expect(self, text: str) -> None:
        """This editor sends ``text`` as a prompt: its start is not echoed back."""
        self.sent.append(text)

    async def outcome(self, turn: str) -> Ended:
        """Wait for ``turn`` to end (its events are forwarded by then)."""
        done = self.ended.pop(turn, None)
        if done is not None:
            return done
        if self.gone:
            return Ended("cancelled", None, None, "the session was closed")
        fut = self.waiters.setdefault(turn, asyncio.get_running_loop().create_future())
        try:
            return await fut
        finally:
            self.waiters.pop(turn, None)

    # ---------------------------------------------------------------- events

    async def _forward(self) -> None:
        from ikigai.errors import DaemonUnreachable

        while not self.gone and self.sub is not None:
            try:
                async for params in self.sub:
                    try:
                        await self._one(params.get("turn"), params.get("event") or {})
                    except ConnectionError:
                        return  # the editor has gone
                    except Exception:  # an event shaped like nothing we know: skip it, go on
                        log.exception("event not forwarded")
                reason = self.sub.end_reason or "the agent's stream ended"
            except DaemonUnreachable:
                if self.client is not None:
                    self.link.lost(self.client)
                reason = "the connection to the daemon broke"
            self._interrupted(reason)
            # "agent ended" is also what a stopping daemon says: an agent that
            # moved, or whose daemon restarted, is followed; a dead one is not
            if not await self._reattach():
                return

    def _interrupted(self, reason: str) -> None:
        """The turns waited for end here: what ran on is not seen any more."""
        for turn, fut in list(self.waiters.items()):
            if not fut.done():
                fut.set_result(Ended("interrupted", None, None, reason))
            self.waiters.pop(turn, None)

    async def _reattach(self) -> bool:
        """Subscribe again once a daemon answers (never autostarting one);
        False when the agent is gone for good."""
        from ikigai.errors import DaemonUnreachable

        delay = 0.2
        client: AsyncClient | None = None
        before = self.link.connects
        while not self.gone:
            await asyncio.sleep(0.1)  # a stopping daemon may still answer, briefly
            try:
                client = await self.link.client(autostart=False)
                info: dict[str, Any] = dict(await client.show(self.agent))
                if info.get("status") != "running":
                    return False
                self.sub = await client.subscribe(self.agent)
                self.client = client
                await self._ask_pending(client)
                if self.link.connects != before:
                    note = "[the ikigai daemon restarted: reconnected]\n"
                    await self.update(mapping.text_chunk("agent_thought_chunk", note))
                return True
            except DaemonUnreachable:
                if client is not None:
                    self.link.lost(client)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
            except ConnectionError:
                return False  # the editor has gone
            except Exception:  # the agent was removed, or an answer we cannot read
                return False
        return False

    async def _one(self, turn: str | None, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        if kind == "text_delta" and ev.get("text"):
            await self.update(mapping.text_chunk("agent_message_chunk", ev["text"]))
        elif kind == "thinking_delta" and ev.get("text"):
            await self.update(mapping.text_chunk("agent_thought_chunk", ev["text"]))
        elif kind == "tool_call_start":
            self.calls[int(ev.get("index", -1))] = _Call(str(ev.get("id")), str(ev.get("name")))
        elif kind == "tool_call_delta":
            call = self.calls.get(int(ev.get("index", -1)))
            if call is not None:
                call.args.append(str(ev.get("arguments") or ""))
        elif kind == "tool_call_done":
            call = self.calls.pop(int(ev.get("index", -1)), None)
            if call is not None:
                args = _arguments("".join(call.args))
                self.titles[call.id] = (call.name, args)
                await self.update(mapping.tool_start(call.id, call.name, args, self.cwd))
        elif kind == "done":
            if turn and ev.get("finish_reason"):
                self.finish[turn] = ev["finish_reason"]
        elif kind == "tool_started":
            await self._tool_started(ev)
        elif kind == "tool_finished":
            self.titles.pop(str(ev.get("id")), None)
            await self.update(
                mapping.tool_done(
                    str(ev.get("id")), str(ev.get("content") or ""), bool(ev.get("is_error"))
                )
            )
        elif kind == "approval_requested":
            self._ask(
                str(ev.get("approval")),
                str(ev.get("tool")),
                ev.get("arguments") or {},
                ev.get("tool_call_id"),
            )
        elif kind == "approval_decided":
            await self._decided(ev)
        elif kind == "turn_started":
            await self._started(ev)
        elif kind == "turn_ended" and turn:
            self._ended(turn, ev)
        elif kind == "model_switched":
            await self.update({"sessionUpdate": "config_option_update"} | await self._options())
        elif kind == "notice" and ev.get("text"):
            await self.update(mapping.text_chunk("agent_thought_chunk", f"[{ev['text']}]\n"))
        elif kind == "retry":
            error = ev.get("error") or {}
            note = f"[retrying in {ev.get('delay', 0):.0f} s: {error.get('message', '')}]\n"
            await self.update(mapping.text_chunk("agent_thought_chunk", note))

    async def _options(self) -> dict[str, Any]:
        from ikictl.acp.options import config_options

        return {"configOptions": await config_options(await self.link.client(), self.agent)}

    async def _tool_started(self, ev: dict[str, Any]) -> None:
        call_id = str(ev.get("id"))
        given = ev.get("arguments")
        args: dict[str, Any] = given if isinstance(given, dict) else {}
        update = mapping.tool_start(call_id, str(ev.get("name")), args, self.cwd, "in_progress")
        if call_id in self.titles:  # announced as the model wrote it: now it runs
            update = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "in_progress",
            }
        self.titles[call_id] = (str(ev.get("name")), args)
        await self.update(update)

    async def _started(self, ev: dict[str, Any]) -> None:
        text = str(ev.get("prompt") or "")
        if text in self.sent:
            self.sent.remove(text)
            return
        # a prompt from someone else (a script, ikictl, another editor, mail): shown as theirs
        if text:
            await self.update(mapping.text_chunk("user_message_chunk", text))

    def _ended(self, turn: str, ev: dict[str, Any]) -> None:
        done = Ended(
            str(ev.get("status")), self.finish.pop(turn, None), ev.get("error"), ev.get("message")
        )
        fut = self.waiters.get(turn)
        if fut is not None and not fut.done():
            fut.set_result(done)
        else:
            self.ended[turn] = done
            while len(self.ended) > 64:  # turns no one here waits for
                self.ended.pop(next(iter(self.ended)))

    # ---------------------------------------------------------------- approvals

    def _ask(
        self, approval: str, tool: str, arguments: dict[str, Any], call_id: str | None
    ) -> None:
        if approval in self.asks or self.gone:
            return
        if call_id:
            self.approval_calls[approval] = call_id
        self.asks[approval] = asyncio.create_task(
            self._permission(approval, tool, arguments, call_id)
        )

    async def _permission(
        self, approval: str, tool: str, arguments: dict[str, Any], call_id: str | None
    ) -> None:
        from acp.schema import PermissionOption, ToolCallUpdate

        call = call_id or approval
        call_update = ToolCallUpdate.model_validate(
            {
                "toolCallId": call,
                "title": mapping.tool_title(tool, arguments),
                "kind": mapping.tool_kind(tool),
                "status": "pending",
                "rawInput": arguments,
                "locations": mapping.tool_locations(arguments, self.cwd),
            }
        )
        options = [PermissionOption.model_validate(o) for o in _OPTIONS]
        decision, remember, reason = "deny", "once", "the editor's answer was not understood"
        try:
            request = self.conn.request_permission(
                session_id=self.id, tool_call=call_update, options=options
            )
            answer = await asyncio.wait_for(request, self.permission_timeout)
            outcome = answer.outcome
            chosen = getattr(outcome, "option_id", None)
            if chosen in (ALLOW_ONCE, ALLOW_ALWAYS):
                decision, remember, reason = (
                    "allow",
                    ("agent" if chosen == ALLOW_ALWAYS else "once"),
                    "",
                )
            elif chosen == REJECT_ONCE:
                reason = "rejected in the editor"
            elif getattr(outcome, "outcome", None) == "cancelled":
                reason = "the editor cancelled the request"
        except TimeoutError:
            reason = f"the editor did not answer within {self.permission_timeout:g} s"
            await self._withdraw(call)
        except asyncio.CancelledError:
            # answered elsewhere (ikictl, a script, another editor) or the session ended
            with contextlib.suppress(Exception):
                await self._withdraw(call)
            raise
        except ConnectionError:
            return  # the editor has gone: the approval waits for another client
        except Exception as exc:  # an answer shaped like nothing in the schema
            log.warning("permission answer not understood: %s", type(exc).__name__)
        finally:
            self.asks.pop(approval, None)
        params: dict[str, Any] = {"approval": approval, "decision": decision}
        if decision == "allow":
            params["remember"] = remember
        elif reason:
            params["reason"] = reason
        with contextlib.suppress(Exception):  # decided meanwhile by someone else: theirs stands
            await (await self.link.client()).call("agent.approve", params)

    async def _withdraw(self, call_id: str) -> None:
        """Take back our pending permission request for ``call_id``: the
        editor closes its dialog ($/cancel_request, answered -32800)."""
        rid = self.out.request_for(self.id, call_id)
        if rid is not None:
            await self.out.send(
                {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": rid}}
            )

    async def _decided(self, ev: dict[str, Any]) -> None:
        approval = str(ev.get("approval"))
        ask = self.asks.get(approval)
        if ask is not None and not ask.done():
            ask.cancel()
        call_id = self.approval_calls.pop(approval, None)
        if ev.get("decision") == "deny" and call_id is not None:
            # the call will not run: its tool call ends here, saying who refused it
            note = f"denied by {ev.get('by')}" + (f": {ev['reason']}" if ev.get("reason") else "")
            self.titles.pop(call_id, None)
            await self.update(mapping.tool_done(call_id, note, True))


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def stderr(message: str) -> None:
    """One line for the editor's log of this process."""
    print(f"ikictl acp: {message}", file=sys.stderr, flush=True)
