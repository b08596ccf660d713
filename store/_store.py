"""The Store: every agent, message and mail in SQL, behind a synchronous API."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy import exc

from providers.catalog import Catalog, default_catalog
from providers.types import (
    THINKING_LEVELS,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)

from . import _replay, migrate
from ._engine import (
    Synchronous,
    display_url,
    is_memory_sqlite,
    make_engine,
    normalize_url,
    ping,
    resolve_url,
)
from ._errors import (
    AgentNotFound,
    AmbiguousAgent,
    BadForkPoint,
    DatabaseUnreachable,
    InvalidEntry,
    NameTaken,
    NoSuchMark,
    StoreError,
)
from ._ids import uuid7
from ._schema import agents, mail, messages, prompt_queue
from ._turns import TurnsMixin, turn_closed
from ._types import (
    APPENDABLE,
    KINDS,
    MESSAGE_ROLES,
    AgentRecord,
    Entry,
    MailRecord,
    MessageRecord,
    UsageReport,
    UsageTotals,
)
from ._usage import report, usage_by_agent_query, usage_query

_encode = msgspec.json.encode
_HEXISH = re.compile(r"^[0-9a-fA-F-]{4,36}$")
_MAX_NAME = 200
# kind, content, data, message_json, the Message itself
_Prepared = tuple[str, str, dict[str, Any] | None, str | None, Message | None]


_INSERT_MANY = messages.insert().returning(messages.c.id, sort_by_parameter_order=True)


def _now() -> datetime:
    return datetime.now(UTC)


class Store(TurnsMixin):
    """SQL history of every agent: SQLite file (default) or PostgreSQL.

    Synchronous and thread-safe: call it from trio with
    ``trio.to_thread.run_sync``. On SQLite, writes are serialized inside the
    store as well (one writer, ``BEGIN IMMEDIATE``); reads run concurrently.

    Durability: when an append (or any other write) returns, its transaction
    is committed and survives ``kill -9`` of the process. SQLite runs in WAL
    mode with ``synchronous=FULL`` by default, which also survives power loss;
    PostgreSQL follows the server's ``synchronous_commit``.

    ``url`` is used as given; None means ``resolve_url()`` ($IKIGAI_DB_URL, else
    the SQLite file in the user's data folder). With ``upgrade`` (the default)
    the schema is migrated to head on open; without it a database not at head
    raises SchemaOutOfDate. A database that cannot be reached raises
    DatabaseUnreachable.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        upgrade: bool = True,
        catalog: Catalog | None = None,
        sqlite_synchronous: Synchronous = "FULL",
        echo: bool = False,
    ) -> None:
        self.url = resolve_url() if url is None else normalize_url(url)
        self._engine = make_engine(self.url, synchronous=sqlite_synchronous, echo=echo)
        self.dialect: str = self._engine.dialect.name
        self._sqlite = self.dialect == "sqlite"
        self._write_lock: threading.Lock | None = threading.Lock() if self._sqlite else None
        # an in-memory SQLite database is one connection shared by every
        # thread: reads must take turns with writes too
        memory = self._sqlite and is_memory_sqlite(self._engine.url)
        self._read_lock = self._write_lock if memory else None
        self._catalog = catalog
        # lineage ranges never change once an agent exists (parent and fork
        # point are fixed at creation), so they are cached by agent id
        self._ranges: dict[str, tuple[_replay.Range, ...]] = {}
        try:
            ping(self._engine)
            self.revision: str | None = (
                migrate.upgrade(self._engine) if upgrade else migrate.ensure_current(self._engine)
            )
        except BaseException:
            self._engine.dispose()
            raise

    # ------------------------------------------------------------ plumbing

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({display_url(self.url)!r})"

    @property
    def engine(self) -> sa.Engine:
        return self._engine

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = default_catalog()
        return self._catalog

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except exc.OperationalError as e:
            text = " ".join(str(e.orig).split())
            if e.connection_invalidated or "connect" in text.lower() or "unable to open" in text:
                raise DatabaseUnreachable(f"lost database {display_url(self.url)}: {text}") from e
            raise StoreError(f"database {display_url(self.url)}: {text}") from e
        except exc.DBAPIError as e:
            raise StoreError(f"database {display_url(self.url)}: {e.orig}") from e

    @contextmanager
    def _read(self) -> Iterator[sa.Connection]:
        lock = self._read_lock if self._read_lock is not None else nullcontext()
        with self._guard(), lock, self._engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _write(self) -> Iterator[sa.Connection]:
        lock = self._write_lock if self._write_lock is not None else nullcontext()
        with self._guard(), lock, self._engine.connect() as conn:
            if self._sqlite:
                conn.execution_options(ikigai_begin="IMMEDIATE")
            with conn.begin():
                yield conn

    # ------------------------------------------------------------ agents

    def create_agent(
        self,
        name: str,
        *,
        provider: str,
        model: str,
        thinking_level: str = "none",
        system_prompt: str = "",
        parent_uuid: str | None = None,
    ) -> AgentRecord:
        """A new running agent with an empty history. ``parent_uuid`` places it
        in the tree (a spawned child) without inheriting history; see fork()."""
        _check_name(name)
        _check_level(thinking_level)
        with self._write() as conn:
            if parent_uuid is not None:
                self._agent_row(conn, parent_uuid)
            record = self._insert_agent(
                conn,
                name=name,
                parent_uuid=parent_uuid,
                fork_message_id=None,
                provider=provider,
                model=model,
                thinking_level=thinking_level,
                system_prompt=system_prompt,
            )
            if system_prompt:
                self._insert(conn, record.uuid, [("system", system_prompt, None, None, None)])
        self._ranges[record.uuid] = ((record.uuid, None),)
        return record

    def get_agent(self, uuid: str) -> AgentRecord:
        """The agent with exactly this id; AgentNotFound otherwise."""
        with self._read() as conn:
            return _agent(self._agent_row(conn, uuid))

    def find_agents(self, ref: str) -> list[AgentRecord]:
        """Agents ``ref`` may mean: the exact id, live agents of that name, ids
        starting with it, dead agents of that name — in that order, no repeats."""
        ref = ref.strip()
        a = agents.c
        with self._read() as conn:
            found = conn.execute(
                sa.select(agents).where(a.name == ref).order_by(a.uuid.desc())
            ).all()
            live = [r for r in found if r.status != "dead"]
            dead = [r for r in found if r.status == "dead"]
            by_id: list[Any] = []
            if _HEXISH.match(ref):
                prefix = ref.lower()
                by_id = conn.execute(
                    sa.select(agents).where(a.uuid.startswith(prefix)).order_by(a.uuid)
                ).all()
        out: list[AgentRecord] = []
        seen: set[str] = set()
        exact = [r for r in by_id if r.uuid == ref.lower()]
        for r in [*exact, *live, *by_id, *dead]:
            if r.uuid not in seen:
                seen.add(r.uuid)
                out.append(_agent(r))
        return out

    def resolve(self, ref: str) -> AgentRecord:
        """The one agent ``ref`` names: exact id, else the live agent of that
        name, else the only id starting with it, else the newest dead agent of
        that name. AgentNotFound or AmbiguousAgent (listing the candidates)."""
        ref = ref.strip()
        candidates = self.find_agents(ref)
        if not candidates:
            raise AgentNotFound(f"no agent has the id or name {ref!r}")
        exact = [c for c in candidates if c.uuid == ref.lower()]
        if exact:
            return exact[0]
        live = [c for c in candidates if c.name == ref and c.alive]
        if live:
            return live[0]
        prefixed = [c for c in candidates if c.uuid.startswith(ref.lower())]
        if len(prefixed) == 1:
            return prefixed[0]
        if len(prefixed) > 1:
            listed = ", ".join(f"{c.uuid} ({c.name})" for c in prefixed[:10])
            raise AmbiguousAgent(f"{ref!r} is the start of {len(prefixed)} agent ids: {listed}")
        return candidates[0]  # newest dead agent of that name

    def list_agents(
        self, *, include_dead: bool = False, parent_uuid: str | None = None
    ) -> list[AgentRecord]:
        """Agents, oldest first; only live ones unless ``include_dead``; only the
        direct children of ``parent_uuid`` when given."""
        a = agents.c
        q = sa.select(agents).order_by(a.uuid)
        if not include_dead:
            q = q.where(a.status != "dead")
        if parent_uuid is not None:
            q = q.where(a.parent_uuid == parent_uuid)
        with self._read() as conn:
            return [_agent(r) for r in conn.execute(q)]

    def descendants(self, uuid: str, *, include_dead: bool = False) -> list[AgentRecord]:
        """Every agent below ``uuid`` in the tree (not itself), oldest first —
        what a kill must also end."""
        with self._read() as conn:
            self._agent_row(conn, uuid)
            sub = _subtree(uuid)
            q = sa.select(agents).where(
                agents.c.uuid.in_(sa.select(sub.c.uuid)), agents.c.uuid != uuid
            )
            if not include_dead:
                q = q.where(agents.c.status != "dead")
            return [_agent(r) for r in conn.execute(q.order_by(agents.c.uuid))]

    def mark_dead(self, uuid: str, *, reason: str | None = None) -> AgentRecord:
        """End the agent: an agent_killed row, status dead, ended_at set (one
        transaction). Its name becomes free. Already dead: returned unchanged.
        Descendants are the caller's to end (see descendants())."""
        with self._write() as conn:
            row = self._agent_row(conn, uuid)
            if row.status == "dead":
                return _agent(row)
            now = _now()
            self._insert(
                conn,
                uuid,
                [("agent_killed", reason or "killed", {"reason": reason}, None, None)],
                now=now,
            )
            conn.execute(
                agents.update().where(agents.c.uuid == uuid).values(status="dead", ended_at=now)
            )
            # prompts it will never run are kept, set aside
            conn.execute(
                prompt_queue.update()
                .where(prompt_queue.c.agent_uuid == uuid, prompt_queue.c.dropped_at.is_(None))
                .values(dropped_at=now)
            )
            return _agent(self._agent_row(conn, uuid))

    def switch_model(
        self,
        uuid: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        thinking_level: str | None = None,
    ) -> AgentRecord:
        """Change provider, model and/or thinking level: a model_switch row
        (data.from, data.to) and the agent row, in one transaction. No change: no row."""
        if thinking_level is not None:
            _check_level(thinking_level)
        with self._write() as conn:
            row = self._agent_row(conn, uuid)
            before = {
                "provider": row.provider,
                "model": row.model,
                "thinking_level": row.thinking_level,
            }
            after = {
                "provider": provider if provider is not None else row.provider,
                "model": model if model is not None else row.model,
                "thinking_level": thinking_level
                if thinking_level is not None
                else row.thinking_level,
            }
            if after == before:
                return _agent(row)
            text = f"{after['provider']}/{after['model']} thinking={after['thinking_level']}"
            self._insert(
                conn, uuid, [("model_switch", text, {"from": before, "to": after}, None, None)]
            )
            conn.execute(agents.update().where(agents.c.uuid == uuid).values(**after))
            return _agent(self._agent_row(conn, uuid))

    def set_system_prompt(self, uuid: str, prompt: str) -> AgentRecord:
        """Replace the system prompt: a system row and the agent row, one transaction."""
        with self._write() as conn:
            self._agent_row(conn, uuid)
            self._insert(conn, uuid, [("system", prompt, None, None, None)])
            conn.execute(agents.update().where(agents.c.uuid == uuid).values(system_prompt=prompt))
            return _agent(self._agent_row(conn, uuid))

    def fork(
        self,
        parent_uuid: str,
        *,
        at_message_id: int | None = None,
        name: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        thinking_level: str | None = None,
        system_prompt: str | None = None,
    ) -> AgentRecord:
        """A new running agent that inherits the parent's history up to
        ``at_message_id`` (default: the newest row the parent sees). Nothing is
        copied: one agent row and one ``fork`` row, in one transaction, at a cost
        that does not depend on history length. Model settings and system
        prompt are the parent's unless given; the name defaults to
        ``<parent name>-<last 6 characters of the new id>``.

        BadForkPoint if ``at_message_id`` is not in the parent's history."""
        if name is not None:
            _check_name(name)
        if thinking_level is not None:
            _check_level(thinking_level)
        with self._write() as conn:
            parent = self._agent_row(conn, parent_uuid)
            ranges = self._lineage(conn, parent_uuid)
            if at_message_id is None:
                at = _replay.latest_id(conn, ranges)
            else:
                owner = conn.execute(
                    sa.select(messages.c.agent_uuid).where(messages.c.id == at_message_id)
                ).scalar()
                if owner is None or not _replay.in_range(ranges, owner, at_message_id):
                    where = "does not exist" if owner is None else "is not in its history"
                    raise BadForkPoint(
                        f"cannot fork agent {parent.name} ({parent_uuid}) at message "
                        f"{at_message_id}: that message {where}"
                    )
                at = at_message_id
            uuid = uuid7()
            record = self._insert_agent(
                conn,
                uuid=uuid,
                name=name if name is not None else f"{parent.name}-{uuid[-6:]}"[-_MAX_NAME:],
                parent_uuid=parent_uuid,
                fork_message_id=at,
                provider=provider if provider is not None else parent.provider,
                model=model if model is not None else parent.model,
                thinking_level=thinking_level
                if thinking_level is not None
                else parent.thinking_level,
                system_prompt=system_prompt if system_prompt is not None else parent.system_prompt,
            )
            data = {"parent_uuid": parent_uuid, "at_message_id": at}
            text = f"forked from {parent.name} ({parent_uuid}) at message {at}"
            rows: list[_Prepared] = [("fork", text, data, None, None)]
            if system_prompt is not None and system_prompt != parent.system_prompt:
                rows.append(("system", system_prompt, None, None, None))
            self._insert(conn, uuid, rows)
        # the child's lineage: itself, then the parent's ranges capped at the fork point
        inherited = (
            [] if at is None else [(u, at if hi is None else min(hi, at)) for u, hi in ranges]
        )
        self._ranges[uuid] = ((uuid, None), *inherited)
        return record

    # ------------------------------------------------------------ messages

    def append(
        self,
        agent_uuid: str,
        kind: str,
        content: str | None = None,
        data: dict[str, Any] | None = None,
        *,
        message: Message | None = None,
    ) -> MessageRecord:
        """Append one row, committed when this returns. user, assistant and
        tool_result take a ``message``; an assistant message also writes one
        tool_call row per tool call (returned by append_many, not here)."""
        return self.append_many(
            agent_uuid, [Entry(kind=kind, content=content, data=data, message=message)]
        )[0]

    def append_many(
        self, agent_uuid: str, entries: Sequence[Entry], *, end_turn: bool = False
    ) -> list[MessageRecord]:
        """Append rows that land together or not at all (one transaction), e.g.
        a whole batch of tool results. Returns every row written, in order.
        ``end_turn``: these are the running turn's last rows (see _turns.py)."""
        if not entries:
            return []
        with self._write() as conn:
            agent = None
            if any(e.kind in ("assistant", "usage") for e in entries):
                agent = self._agent_row(conn, agent_uuid)
            prepared: list[_Prepared] = []
            for e in entries:
                prepared.extend(self._prepare(conn, agent_uuid, agent, e))
            written = self._insert(conn, agent_uuid, prepared)
            if end_turn:
                turn_closed(conn, agent_uuid)
            return written

    def _prepare_user(self, message: Message, data: dict[str, Any]) -> _Prepared:
        return self._prepare_message(None, Entry(kind="user", message=message), "user", data)[0]

    def append_user(self, agent_uuid: str, message: Message) -> MessageRecord:
        return self.append(agent_uuid, "user", message=message)

    def append_assistant(
        self,
        agent_uuid: str,
        message: Message,
        *,
        usage: Usage | None = None,
        finish_reason: str | None = None,
        data: dict[str, Any] | None = None,
        end_turn: bool = False,
    ) -> list[MessageRecord]:
        """The assistant row (provider, model, thinking level and text,
        finish_reason, usage in data) and one tool_call row per tool call."""
        extra = dict(data or {})
        if usage is not None:
            extra["usage"] = usage
        if finish_reason is not None:
            extra["finish_reason"] = finish_reason
        entry = Entry(kind="assistant", data=extra, message=message)
        return self.append_many(agent_uuid, [entry], end_turn=end_turn)

    def append_tool_results(
        self, agent_uuid: str, message: Message, *, end_turn: bool = False
    ) -> MessageRecord:
        """One tool_result row holding the tool-role Message with every result."""
        entry = Entry(kind="tool_result", message=message)
        return self.append_many(agent_uuid, [entry], end_turn=end_turn)[0]

    def record_usage(
        self,
        agent_uuid: str,
        usage: Usage,
        *,
        provider: str | None = None,
        model: str | None = None,
        note: str = "",
    ) -> MessageRecord:
        """Tokens spent without an assistant message (a cancelled stream...)."""
        data: dict[str, Any] = {"usage": usage}
        if provider is not None:
            data["provider"] = provider
        if model is not None:
            data["model"] = model
        return self.append(agent_uuid, "usage", note, data)

    def clear(self, agent_uuid: str) -> MessageRecord:
        """The context starts empty after this row (history keeps everything)."""
        return self.append(agent_uuid, "clear", "")

    def mark(self, agent_uuid: str, label: str | None = None) -> MessageRecord:
        """A checkpoint rewind() can return to."""
        return self.append(agent_uuid, "mark", label or "", {"label": label})

    def rewind(self, agent_uuid: str, label: str | None = None) -> MessageRecord:
        """Return the context to the newest mark with this label (the newest
        mark when None). NoSuchMark if the current context has none."""
        with self._write() as conn:
            folded = self._fold(conn, agent_uuid)
            mk = _replay.find_mark(folded.marks, label)
            if mk is None:
                what = "no mark" if label is None else f"no mark labelled {label!r}"
                raise NoSuchMark(f"agent {agent_uuid} has {what} in its current context")
            return self._insert(
                conn,
                agent_uuid,
                [("rewind", label or "", {"mark_id": mk.id, "label": label}, None, None)],
            )[0]

    def mark_interrupted(
        self, agent_uuid: str, turn_start: int, *, reason: str | None = None
    ) -> MessageRecord:
        """The turn whose first row is ``turn_start`` was cancelled: its rows
        (from turn_start up to this one) stay in history and leave the context."""
        entry = Entry(
            kind="interrupted", content=reason or "", data={"turn_start": turn_start, "reason": reason}
        )
        return self.append_many(agent_uuid, [entry], end_turn=True)[0]

    def history(
        self,
        agent_uuid: str,
        *,
        limit: int | None = None,
        before: int | None = None,
        after: int | None = None,
    ) -> list[MessageRecord]:
        """Raw rows the agent sees (its own and its ancestors' up to each fork
        point, clears and interrupted turns included), oldest first. With
        ``limit``: the newest ``limit`` rows below ``before``, or the oldest
        ``limit`` rows above ``after``."""
        m = messages.c
        with self._read() as conn:
            ranges = self._lineage(conn, agent_uuid)  # AgentNotFound for an unknown id
            newest_first = limit is not None and after is None
            rows: list[Any] = []
            for part in _replay.chunks(ranges):
                q = sa.select(messages).where(_replay.range_cond(part))
                if before is not None:
                    q = q.where(m.id < before)
                if after is not None:
                    q = q.where(m.id > after)
                q = q.order_by(m.id.desc() if newest_first else m.id)
                if limit is not None:
                    q = q.limit(limit)
                rows.extend(conn.execute(q).all())
        rows.sort(key=lambda r: r.id, reverse=newest_first)
        if limit is not None:
            rows = rows[:limit]
        if newest_first:
            rows.reverse()
        return [_message(r) for r in rows]

    def replay(self, agent_uuid: str) -> list[Message]:
        """The Messages a provider request needs, oldest first, exactly as
        appended (signatures and provider data byte for byte): the lineage from
        the newest clear on, interrupted turns left out, rewinds applied."""
        with self._read() as conn:
            folded = self._fold(conn, agent_uuid)
        return _replay.decode_messages(folded.texts)

    def replay_ids(self, agent_uuid: str) -> list[int]:
        """The row id of each message replay() returns (same order)."""
        with self._read() as conn:
            return self._fold(conn, agent_uuid).ids

    # ------------------------------------------------------------ mail

    def send_mail(self, to_uuid: str, body: str, *, from_uuid: str | None = None) -> MailRecord:
        with self._write() as conn:
            self._agent_row(conn, to_uuid)
            if from_uuid is not None:
                self._agent_row(conn, from_uuid)
            now = _now()
            values = {"from_uuid": from_uuid, "to_uuid": to_uuid, "body": body, "created_at": now}
            new_id = conn.execute(mail.insert(), values).inserted_primary_key[0]  # type: ignore[index]
            return MailRecord(id=new_id, read_at=None, **values)

    def inbox(
        self, uuid: str, *, unread_only: bool = True, limit: int | None = None
    ) -> list[MailRecord]:
        """Mail to the agent, oldest first."""
        c = mail.c
        q = sa.select(mail).where(c.to_uuid == uuid).order_by(c.id)
        if unread_only:
            q = q.where(c.read_at.is_(None))
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            self._agent_row(conn, uuid)
            return [_mail(r) for r in conn.execute(q)]

    def mark_read(self, uuid: str, ids: Iterable[int] | None = None) -> int:
        """Mark mail to the agent read (the given ids, or all); returns how many changed."""
        c = mail.c
        q = mail.update().where(c.to_uuid == uuid, c.read_at.is_(None)).values(read_at=_now())
        if ids is not None:
            wanted = list(ids)
            if not wanted:
                return 0
            q = q.where(c.id.in_(wanted))
        with self._write() as conn:
            self._agent_row(conn, uuid)
            return conn.execute(q).rowcount

    # ------------------------------------------------------------ usage

    def usage_totals(self) -> dict[str, UsageTotals]:
        """Every agent's own totals (tokens and cost), in one query: for
        listings of many agents, where usage() per agent would be a query each."""
        with self._read() as conn:
            rows = conn.execute(usage_by_agent_query()).all()
        per_agent: dict[str, list[Any]] = {}
        for r in rows:
            per_agent.setdefault(r.agent_uuid, []).append(r)
        return {
            uuid: report(uuid, descendants=False, agents=1, rows=group, catalog=self.catalog).total
            for uuid, group in per_agent.items()
        }

    def usage(self, agent_uuid: str, *, descendants: bool = False) -> UsageReport:
        """Tokens and cost of the agent's own turns (not inherited ones), or of
        it and every descendant, per (provider, model as reported) and in total."""
        with self._read() as conn:
            self._agent_row(conn, agent_uuid)
            if descendants:
                sub = _subtree(agent_uuid)
                uuids = list(conn.execute(sa.select(sub.c.uuid)).scalars())
            else:
                uuids = [agent_uuid]
            rows = conn.execute(usage_query(uuids)).all()
        return report(
            agent_uuid, descendants=descendants, agents=len(uuids), rows=rows, catalog=self.catalog
        )

    # ------------------------------------------------------------ internals

    def _agent_row(self, conn: sa.Connection, uuid: str) -> Any:
        row = conn.execute(sa.select(agents).where(agents.c.uuid == uuid)).first()
        if row is None:
            raise AgentNotFound(f"no agent has the id {uuid!r}")
        return row

    def _lineage(self, conn: sa.Connection, uuid: str) -> tuple[_replay.Range, ...]:
        ranges = self._ranges.get(uuid)
        if ranges is None:
            chain = conn.execute(_replay.chain_query(uuid)).all()
            if not chain:
                raise AgentNotFound(f"no agent has the id {uuid!r}")
            ranges = _replay.ranges_from_chain((r.uuid, r.fork_message_id) for r in chain)
            self._ranges[uuid] = ranges
        return ranges

    def _fold(self, conn: sa.Connection, uuid: str) -> _replay.Folded:
        ranges = self._lineage(conn, uuid)
        return _replay.fold(_replay.replay_rows(conn, ranges))

    def _insert_agent(
        self, conn: sa.Connection, *, uuid: str | None = None, **values: Any
    ) -> AgentRecord:
        name = values["name"]
        holder = conn.execute(
            sa.select(agents.c.uuid).where(agents.c.name == name, agents.c.status != "dead")
        ).scalar()
        if holder is not None:
            raise NameTaken(f"the name {name!r} is taken by live agent {holder}")
        row = {
            "uuid": uuid or uuid7(),
            "status": "running",
            "created_at": _now(),
            "ended_at": None,
            **values,
        }
        try:
            conn.execute(agents.insert(), row)
        except exc.IntegrityError as e:  # a concurrent create took the name
            raise NameTaken(f"the name {name!r} is taken by a live agent") from e
        return AgentRecord(**row)

    def _insert(
        self,
        conn: sa.Connection,
        agent_uuid: str,
        rows: Sequence[_Prepared],
        *,
        now: datetime | None = None,
    ) -> list[MessageRecord]:
        now = now or _now()
        params: list[dict[str, Any]] = []
        for kind, text, meta, message_json, _ in rows:
            params.append(
                {
                    "agent_uuid": agent_uuid,
                    "kind": kind,
                    # the readable copies must fit PostgreSQL text and JSONB: no NUL
                    "content": text.replace("\x00", "\ufffd") if "\x00" in text else text,
                    "data": _no_nul(meta) if meta and b"\\u0000" in _encode(meta) else meta,
                    "message_json": message_json,
                    "created_at": now,
                }
            )
        try:
            if len(params) == 1:
                ids = [conn.execute(messages.insert(), params[0]).inserted_primary_key[0]]  # type: ignore[index]
            else:  # one multi-row INSERT ... RETURNING, ids in the order given
                ids = list(conn.execute(_INSERT_MANY, params).scalars())
        except exc.IntegrityError as e:
            raise AgentNotFound(f"no agent has the id {agent_uuid!r}") from e
        return [
            MessageRecord(
                id=new_id,
                agent_uuid=agent_uuid,
                kind=p["kind"],
                content=p["content"],
                data=p["data"],
                message=row[4],
                created_at=now,
            )
            for new_id, p, row in zip(ids, params, rows, strict=True)
        ]

    def _prepare(
        self, conn: sa.Connection, agent_uuid: str, agent: Any, e: Entry
    ) -> list[_Prepared]:
        kind = e.kind
        if kind not in KINDS:
            raise InvalidEntry(
                f"unknown message kind {kind!r}; kinds are {', '.join(sorted(KINDS))}"
            )
        if kind not in APPENDABLE:
            how = "with its assistant message" if kind == "tool_call" else "by its own Store method"
            raise InvalidEntry(f"{kind} rows are written {how}, not by append")
        data = _plain(e.data)
        if kind in MESSAGE_ROLES:
            return self._prepare_message(agent, e, kind, data)
        if e.message is not None:
            raise InvalidEntry(f"a {kind} row takes no message")
        content = e.content if e.content is not None else ""
        if kind == "rewind":
            mark_id = (data or {}).get("mark_id")
            marks = self._fold(conn, agent_uuid).marks
            if not isinstance(mark_id, int) or all(mk.id != mark_id for mk in marks):
                raise NoSuchMark(
                    f"rewind of agent {agent_uuid}: mark {mark_id!r} is not in its current context"
                )
        elif kind == "interrupted":
            start = (data or {}).get("turn_start")
            owner = (
                conn.execute(
                    sa.select(messages.c.agent_uuid).where(messages.c.id == start)
                ).scalar()
                if isinstance(start, int)
                else None
            )
            if owner != agent_uuid:
                raise InvalidEntry(
                    f"interrupted row of agent {agent_uuid}: turn_start {start!r} is not one of its messages"
                )
        elif kind == "usage":
            data = dict(data or {})
            data["usage"] = _usage_dict(data.get("usage"), kind)
            data.setdefault("provider", agent.provider)
            data.setdefault("model", agent.model)
        return [(kind, content, data, None, None)]

    def _prepare_message(
        self, agent: Any, e: Entry, kind: str, data: dict[str, Any] | None
    ) -> list[_Prepared]:
        msg = e.message
        if not isinstance(msg, Message):
            raise InvalidEntry(f"a {kind} row needs a providers.types.Message")
        if msg.role != MESSAGE_ROLES[kind]:
            raise InvalidEntry(
                f"a {kind} row holds a {MESSAGE_ROLES[kind]!r}-role message, not {msg.role!r}"
            )
        content = e.content if e.content is not None else _readable(msg)
        message_json = _encode(msg).decode()
        if kind != "assistant":
            if kind == "tool_result":
                results = [
                    {"tool_call_id": b.tool_call_id, "name": b.name, "is_error": b.is_error}
                    for b in msg.content
                    if isinstance(b, ToolResultBlock)
                ]
                data = {"results": results, **(data or {})}
            return [(kind, content, data, message_json, msg)]
        meta: dict[str, Any] = {
            "provider": msg.provider or agent.provider,
            "model": msg.model or agent.model,
            "thinking_level": msg.thinking_level or agent.thinking_level,
        }
        thinking = "\n\n".join(
            b.text for b in msg.content if isinstance(b, ThinkingBlock) and b.text
        )
        if thinking:
            meta["thinking"] = thinking
        if msg.provider_data:
            meta["provider_data"] = msg.provider_data
        meta.update(data or {})
        if "usage" in meta:
            meta["usage"] = _usage_dict(meta["usage"], kind)
        out: list[_Prepared] = [("assistant", content, meta, message_json, msg)]
        for b in msg.content:
            if isinstance(b, ToolCallBlock):
                args = (
                    b.raw_arguments
                    if b.raw_arguments is not None
                    else _encode(b.arguments).decode()
                )
                out.append(
                    (
                        "tool_call",
                        f"{b.name} {args}",
                        {"tool_call_id": b.id, "name": b.name, "arguments": b.arguments},
                        None,
                        None,
                    )
                )
        return out


# ---------------------------------------------------------------- helpers


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise InvalidEntry(f"agent name {name!r} must be non-empty without surrounding spaces")
    if len(name) > _MAX_NAME or any(ch.isspace() or not ch.isprintable() for ch in name):
        raise InvalidEntry(
            f"agent name {name!r} must be at most {_MAX_NAME} printable characters, no spaces"
        )


def _check_level(level: str) -> None:
    if level not in THINKING_LEVELS:
        raise InvalidEntry(f"thinking level {level!r} is not one of {', '.join(THINKING_LEVELS)}")


def _plain(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """Caller data as plain JSON values (Structs and the like converted)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise InvalidEntry(f"row data must be a dict, not {type(data).__name__}")
    try:
        return msgspec.to_builtins(data, str_keys=True)
    except (TypeError, msgspec.EncodeError) as e:
        raise InvalidEntry(f"row data is not JSON-able: {e}") from None


def _usage_dict(value: Any, kind: str) -> dict[str, int]:
    if value is None:
        raise InvalidEntry(f"a {kind} row's usage is missing")
    try:
        usage = value if isinstance(value, Usage) else msgspec.convert(value, Usage)
    except msgspec.ValidationError as e:
        raise InvalidEntry(f"a {kind} row's usage is not valid: {e}") from None
    return msgspec.to_builtins(usage)


def _no_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nul(v) for v in value]
    return value


def _readable(msg: Message) -> str:
    parts: list[str] = []
    for b in msg.content:
        if isinstance(b, TextBlock):
            parts.append(b.text)
        elif isinstance(b, ToolResultBlock):
            parts.append(("[error] " if b.is_error else "") + b.content)
        elif isinstance(b, ImageBlock):
            parts.append(f"[image {b.media_type}]")
    return "\n".join(p for p in parts if p)


def _subtree(uuid: str) -> sa.CTE:
    base = sa.select(agents.c.uuid).where(agents.c.uuid == uuid).cte("subtree", recursive=True)
    child = agents.alias("child")
    return base.union_all(sa.select(child.c.uuid).where(child.c.parent_uuid == base.c.uuid))


def _agent(r: Any) -> AgentRecord:
    return AgentRecord(
        uuid=r.uuid,
        name=r.name,
        parent_uuid=r.parent_uuid,
        fork_message_id=r.fork_message_id,
        provider=r.provider,
        model=r.model,
        thinking_level=r.thinking_level,
        system_prompt=r.system_prompt,
        status=r.status,
        created_at=r.created_at,
        ended_at=r.ended_at,
    )


def _message(r: Any) -> MessageRecord:
    return MessageRecord(
        id=r.id,
        agent_uuid=r.agent_uuid,
        kind=r.kind,
        content=r.content,
        data=r.data,
        message=_replay.decode_message(r.message_json) if r.message_json else None,
        created_at=r.created_at,
    )


def _mail(r: Any) -> MailRecord:
    return MailRecord(
        id=r.id,
        from_uuid=r.from_uuid,
        to_uuid=r.to_uuid,
        body=r.body,
        created_at=r.created_at,
        read_at=r.read_at,
    )
