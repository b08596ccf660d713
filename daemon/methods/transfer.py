"""``agent.export`` and ``agent.import`` (api.py registers them): an agent's
whole lineage as one JSON document, and a new agent made from one. See
docs/protocol.md, "Export and import"; the rows are the store's
(store/_transfer.py).

Everything wrong with an imported document is -32602 naming the field and
the row's index (``document.messages[3].kind: ...``); the daemon goes on.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Final

import msgspec
from msgspec import Meta

import protocol as p
from agents import _mcp_select as mcp_select
from agents.permissions import dump_chain, parse_chain
from agents.workdir import working_folder
from daemon.methods.shapes import model_info, stamp
from daemon.methods.transfer_files import exported_blobs, with_files
from protocol import params as P
from providers.modelspec import ModelSpec, resolve_model
from providers.types import THINKING_LEVELS, Message
from store import ImportedRow, InvalidEntry, NameTaken

if TYPE_CHECKING:
    from daemon.methods.shapes import ApiHost
    from daemon.server.connection import Connection, Handler
    from protocol import results as R
    from store import AgentRecord

FORMAT: Final = "ikigai-agent"
VERSION = 1
_SUFFIX = 6  # hex characters added to a document's name already taken
_MAX_NAME = 200  # characters of an agent's name (the store's rule)


class _Agent(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    uuid: str
    name: str
    provider: str
    model: str
    thinking_level: str
    system_prompt: str
    cwd: str | None
    policy: list[str] | None
    mcp: list[str] | None
    parent: str | None
    created_at: str


class _Row(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Annotated[int, Meta(ge=0, le=p.MAX_INT)]
    agent: str
    kind: str
    content: str
    data: dict[str, Any] | None
    message: Message | None
    created_at: datetime


class _Doc(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    format: str
    version: int
    exported_at: str
    agent: _Agent
    messages: list[_Row]
    # (the files: put back into the messages' blocks before this is read)
    blobs: dict[str, Any] | None = None


def _bad(where: str, what: str) -> p.RpcError:
    return p.RpcError(
        p.INVALID_PARAMS, f"invalid params for agent.import: {where}: {P.excerpt(what, 400)}"
    )


def parse_document(raw: dict[str, Any]) -> _Doc:
    """The document, checked as a whole (RpcError -32602 naming what is wrong)."""
    if raw.get("format") != FORMAT:
        raise _bad("document.format", f"must be {FORMAT!r} (a document agent.export wrote)")
    version = raw.get("version")
    if version != VERSION or type(version) is not int:
        raise _bad(
            "document.version", f"{version!r} is not a version this daemon reads ({VERSION})"
        )
    raw = with_files(raw)  # each block's file back from document.blobs
    try:
        return msgspec.convert(raw, _Doc)
    except msgspec.ValidationError as e:
        # msgspec says "... - at `$.messages[3].kind`": name the field first
        what, found, at = str(e).rpartition(" - at `$")
        if not found:
            raise _bad("document", str(e)) from None
        raise _bad("document" + at.rstrip("`"), what) from None


def _exported_message(text: str | None, signatures: bool) -> dict[str, Any] | None:
    if text is None:
        return None
    message: dict[str, Any] = msgspec.json.decode(text)
    if not signatures:
        for block in message.get("content") or ():
            if isinstance(block, dict):
                block.pop("signature", None)
    return message


class TransferApi:
    def __init__(self, host: ApiHost) -> None:
        self.host = host

    def handlers(self) -> dict[str, Handler]:
        return {p.AGENT_EXPORT: self.export, p.AGENT_IMPORT: self.import_}

    async def export(self, conn: Connection, params: P.Export) -> R.ExportDoc:
        host = self.host
        record = await host._record(params.agent)
        rows = await host.db.call(host.db.store.lineage_rows, record.uuid)
        files = await host.db.call(host.db.store.lineage_blobs, rows)
        actor = host.sup.actor_of(record.uuid)
        doc: R.ExportDoc = {
            "format": FORMAT,
            "version": VERSION,
            "exported_at": stamp(datetime.now(UTC)),
            "agent": {
                "uuid": record.uuid,
                "name": record.name,
                "provider": actor.provider if actor else record.provider,
                "model": actor.model if actor else record.model,
                "thinking_level": actor.thinking_level if actor else record.thinking_level,
                "system_prompt": actor.system_prompt if actor else record.system_prompt,
                "cwd": str(actor.cwd) if actor else record.cwd,
                "policy": actor.policy if actor else parse_chain(record.policy),
                "mcp": actor.mcp if actor else mcp_select.parse(record.mcp),
                "parent": record.parent_uuid,
                "created_at": stamp(record.created_at),
            },
            "messages": [
                {
                    "id": r.id,
                    "agent": r.agent_uuid,
                    "kind": r.kind,
                    "content": r.content,
                    "data": r.data,
                    "message": _exported_message(r.message_json, params.signatures),
                    "created_at": stamp(r.created_at),
                }
                for r in rows
            ],
        }
        if files:  # each attached file once; the messages' blocks name them
            doc["blobs"] = exported_blobs(files)
        return doc

    async def import_(self, conn: Connection, params: P.Import) -> R.Created:
        host = self.host
        doc = parse_document(params.document)
        agent = doc.agent
        if agent.thinking_level not in THINKING_LEVELS:
            raise _bad(
                "document.agent.thinking_level",
                f"{agent.thinking_level!r} is not one of {', '.join(THINKING_LEVELS)}",
            )
        level: Any = agent.thinking_level  # checked above: one of THINKING_LEVELS
        spec = ModelSpec(provider=agent.provider, model=agent.model, thinking=level)
        try:
            resolved = resolve_model(spec, catalog=host.sup.pool.catalog)
        except ValueError as e:
            raise _bad("document.agent.provider", str(e)) from None
        warnings = list(resolved.warnings)
        cwd = self._folder(agent.cwd, warnings)
        servers = self._servers(agent.mcp, warnings)
        known = host.sup.deps.permissions.known()
        unknown = [n for n in agent.policy or () if n not in known]
        if unknown:
            warnings.append(
                f"policy {', '.join(unknown)} is not configured here: every tool call of this "
                "agent is asked until it is"
            )
        rows = [
            ImportedRow(r.id, r.kind, r.content, r.data, r.message, r.created_at)
            for r in doc.messages
        ]
        values = {
            "provider": resolved.provider,
            "model": resolved.model,
            "thinking_level": resolved.thinking.level,
            "system_prompt": agent.system_prompt,
            "cwd": cwd,
            "policy": dump_chain(agent.policy),
            "mcp": mcp_select.dump(servers),
            "rows": rows,
        }
        record = await self._import(params.name, agent.name, values)
        await host.sup.start(record)  # live from now on, as a created agent is
        info = await host._described(record)
        shown = model_info(resolved)
        shown["warnings"] = warnings
        return {"agent": info, "model": shown, "turn": None}

    async def _import(self, name: str | None, doc_name: str, values: dict[str, Any]) -> AgentRecord:
        store = self.host.db.store
        chosen = name if name is not None else doc_name
        for attempt in range(2):
            try:
                return await self.host.db.call(store.import_agent, chosen, **values)
            except InvalidEntry as e:
                text = str(e)
                if text.startswith("messages["):
                    field, _, what = text.partition(": ")
                    raise _bad(f"document.{field}", what) from None
                if name is None:  # the document's name is not one an agent can have
                    raise _bad("document.agent.name", text) from None
                raise p.RpcError(p.REFUSED, text) from None
            except NameTaken as e:
                if name is not None or attempt:
                    raise p.RpcError(p.REFUSED, str(e)) from None
                # the document's name is a live agent's: this one gets a suffix, as a fork does
                chosen = f"{doc_name[: _MAX_NAME - _SUFFIX - 1]}-{secrets.token_hex(_SUFFIX // 2)}"
        raise AssertionError("unreachable")

    def _folder(self, cwd: str | None, warnings: list[str]) -> str:
        own = str(self.host.sup.deps.config.cwd)
        if cwd is None:
            return own
        try:
            return working_folder(cwd)
        except ValueError as e:
            warnings.append(f"{e}: its tools run in the daemon's folder {own}")
            return own

    def _servers(self, names: list[str] | None, warnings: list[str]) -> list[str] | None:
        if names is None:
            return None
        hub = self.host.sup.deps.mcp
        known = set(hub.names()) if hub is not None else set()
        dropped = [n for n in names if n not in known]
        if dropped:
            warnings.append(f"MCP server {', '.join(dropped)} is not configured here: left out")
        return [n for n in names if n in known]
