"""An agent's whole lineage out, as stored; and back in as a new agent.

``lineage_rows`` gives every row an agent sees, inherited ones included, with
its message as the exact JSON text stored. ``import_agent`` makes a new root
agent (not a fork: it inherits nothing) whose own rows are those rows, in
order, in one transaction. The ids change, so the data keys naming another
row (a compaction's ``upto``, an interrupted turn's ``turn_start``, a
rewind's ``mark_id``) are pointed at the new ids; ``fork`` rows are left out
(the new agent has no parent). Its replay equals the exported agent's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa

from providers.types import Message

from . import _replay
from ._agents import AgentsMixin
from ._blobs import Blob, BlobRecord, load_blobs, put_blobs, refs_in, stored_message
from ._errors import InvalidEntry
from ._rows import check_level, check_name, no_nul, usage_dict
from ._schema import messages
from ._types import KINDS, MESSAGE_ROLES, AgentRecord

# the data key of each kind that names another row of the history
REFERENCES = {"compaction": "upto", "interrupted": "turn_start", "rewind": "mark_id"}
# the kind of row each must name (replay ignores a compaction whose upto left the context)
_TARGETS = {"interrupted": "user", "rewind": "mark"}
_INSERT = messages.insert().returning(messages.c.id, sort_by_parameter_order=True)
_MAX_COUNT = (1 << 53) - 1


class StoredRow(NamedTuple):
    """A lineage row as stored: ``message_json`` is the exact text."""

    id: int
    agent_uuid: str
    kind: str
    content: str
    data: dict[str, Any] | None
    message_json: str | None
    created_at: datetime


class ImportedRow(NamedTuple):
    """One row for ``import_agent``: ``id`` is its id in the exported history."""

    id: int
    kind: str
    content: str
    data: dict[str, Any] | None
    message: Message | None
    created_at: datetime


class TransferMixin(AgentsMixin):
    """Store methods for export and import (see the module doc)."""

    def lineage_rows(self, agent_uuid: str) -> list[StoredRow]:
        """Every row the agent sees (as history() without a limit), stored text and all."""
        m = messages.c
        rows: list[Any] = []
        with self._read() as conn:
            ranges = self._lineage(conn, agent_uuid)
            for part in _replay.chunks(ranges):
                q = sa.select(
                    m.id, m.agent_uuid, m.kind, m.content, m.data, m.message_json, m.created_at
                )
                rows.extend(conn.execute(q.where(_replay.range_cond(part)).order_by(m.id)))
        rows.sort(key=lambda r: r.id)
        return [StoredRow(*r) for r in rows]

    def lineage_blobs(self, rows: Sequence[StoredRow]) -> dict[str, BlobRecord]:
        """The blobs the messages of ``rows`` refer to (_blobs.py), by sha256."""
        shas = {sha for r in rows if r.message_json for sha in refs_in(r.message_json)}
        if not shas:
            return {}
        with self._read() as conn:
            return load_blobs(conn, shas)

    def import_agent(
        self,
        name: str,
        *,
        provider: str,
        model: str,
        thinking_level: str,
        system_prompt: str,
        cwd: str | None,
        policy: str | None,
        mcp: str | None,
        rows: Sequence[ImportedRow],
    ) -> AgentRecord:
        """A new running root agent holding ``rows`` as its own history (see
        the module doc). InvalidEntry, with nothing written, names the first
        row that cannot be taken as ``messages[i]...``."""
        check_name(name)
        check_level(thinking_level)
        files: list[Blob] = []
        prepared = _checked(rows, files)
        with self._write() as conn:
            put_blobs(conn, files)
            record = self._insert_agent(
                conn,
                name=name,
                parent_uuid=None,
                fork_message_id=None,
                provider=provider,
                model=model,
                thinking_level=thinking_level,
                system_prompt=system_prompt,
                cwd=cwd,
                policy=policy,
                mcp=mcp,
            )
            new_ids: dict[int, int] = {}
            kinds: dict[int, str] = {}
            batch: list[tuple[int, dict[str, Any]]] = []

            def flush() -> None:
                if batch:
                    ids = conn.execute(_INSERT, [p for _, p in batch]).scalars().all()
                    new_ids.update((old, new) for (old, _), new in zip(batch, ids, strict=True))
                    batch.clear()

            for i, (old, params) in enumerate(prepared):
                key = REFERENCES.get(params["kind"])
                if key is not None:
                    flush()  # it names an earlier row: that row's new id must be known
                    target = params["data"][key]
                    want = _TARGETS.get(params["kind"])
                    if target not in new_ids or (want is not None and kinds[target] != want):
                        what = "an earlier row" if want is None else f"an earlier {want} row"
                        raise InvalidEntry(
                            f"messages[{i}].data.{key}: {target!r} is not the id of "
                            f"{what} of the document"
                        )
                    params["data"] = {**params["data"], key: new_ids[target]}
                params["agent_uuid"] = record.uuid
                kinds[old] = params["kind"]
                batch.append((old, params))
            flush()
        self._ranges[record.uuid] = ((record.uuid, None),)
        return record


def _checked(rows: Sequence[ImportedRow], files: list[Blob]) -> list[tuple[int, dict[str, Any]]]:
    """Each row's insert params (agent_uuid left to fill), checked; fork rows left out;
    the bytes of the messages' files added to ``files``. The index in errors is
    the row's position in ``rows``."""
    out: list[tuple[int, dict[str, Any]]] = []
    last: int | None = None
    for i, row in enumerate(rows):
        where = f"messages[{i}]"
        if last is not None and row.id <= last:
            raise InvalidEntry(f"{where}.id: {row.id} does not follow {last}: ids must increase")
        last = row.id
        if row.kind not in KINDS:
            raise InvalidEntry(
                f"{where}.kind: unknown kind {row.kind!r}; kinds are {', '.join(sorted(KINDS))}"
            )
        if row.created_at.tzinfo is None:
            raise InvalidEntry(f"{where}.created_at: needs a time zone (e.g. Z for UTC)")
        if row.kind == "fork":
            continue  # the new agent has no parent: what it inherited is its own
        role = MESSAGE_ROLES.get(row.kind)
        if role is not None and (row.message is None or row.message.role != role):
            got = "none" if row.message is None else f"a {row.message.role!r}-role one"
            raise InvalidEntry(
                f"{where}.message: a {row.kind} row needs a {role!r}-role message, not {got}"
            )
        if role is None and row.message is not None and row.kind != "compaction":
            raise InvalidEntry(f"{where}.message: a {row.kind} row takes no message")
        if row.kind == "compaction" and (row.message is None or row.message.role != "user"):
            raise InvalidEntry(f"{where}.message: a compaction row needs its user-role summary")
        key = REFERENCES.get(row.kind)
        if key is not None and type((row.data or {}).get(key)) is not int:
            raise InvalidEntry(f"{where}.data.{key}: a {row.kind} row needs the id of a row")
        try:
            message_json = None
            if row.message is not None:
                message_json, found, _ = stored_message(row.message)
                files.extend(found)
        except UnicodeEncodeError:
            raise InvalidEntry(f"{where}.message: not valid unicode") from None
        data = row.data
        if row.kind in ("assistant", "usage") and data and "usage" in data:
            # the usage view casts each count to a bigint: a bad one would break every report
            try:
                counts = usage_dict(data["usage"], row.kind)
            except InvalidEntry as e:
                raise InvalidEntry(f"{where}.data.usage: {e}") from None
            if any(not 0 <= v <= _MAX_COUNT for v in counts.values()):
                raise InvalidEntry(f"{where}.data.usage: token counts must be 0 to {_MAX_COUNT}")
            data = {**data, "usage": counts}
        out.append(
            (
                row.id,
                {
                    "kind": row.kind,
                    "content": row.content.replace("\x00", "\ufffd"),
                    # the readable copies must fit PostgreSQL text and JSONB: no NUL
                    "data": no_nul(data) if data else data,
                    "message_json": message_json,
                    "created_at": row.created_at,
                },
            )
        )
    return out
