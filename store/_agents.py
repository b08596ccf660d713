"""Agents: creation, lookup by id or name, the tree, death, model and system
prompt changes, and forks (a new agent inheriting history without a copy)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc

from . import _replay
from ._base import StoreBase
from ._blobs import put_blobs
from ._errors import AgentNotFound, AmbiguousAgent, BadForkPoint, NameTaken
from ._ids import uuid7
from ._rows import (
    MAX_NAME,
    Prepared,
    agent_record,
    check_level,
    check_name,
    now,
    row_params,
    user_row,
)
from ._schema import agents, messages
from ._turns import drop_pending
from ._types import AgentRecord, AgentRef, ForkChild, MessageRecord, WorktreeSpec

_INSERT_RETURNING = messages.insert().returning(messages.c.id, sort_by_parameter_order=True)
_MARK_OPEN = (
    agents.update()
    .where(agents.c.uuid == sa.bindparam("b_agent"))
    .values(turn_start=sa.bindparam("b_start"))
)
_FIELDS = AgentRecord.__struct_fields__
_LISTING = sa.select(*(agents.c[f] for f in _FIELDS))
_REFS = sa.select(agents.c.uuid, agents.c.name, agents.c.status)
_HEXISH = re.compile(r"^[0-9a-fA-F-]{4,36}$")


class AgentsMixin(StoreBase):
    """Store methods for agents (see the module doc)."""

    def create_agent(
        self,
        name: str,
        *,
        provider: str,
        model: str,
        thinking_level: str = "none",
        system_prompt: str = "",
        parent_uuid: str | None = None,
        cwd: str | None = None,
        policy: str | None = None,
        mcp: str | None = None,
        priority: str | None = None,
        budget: Any = None,
        uuid: str | None = None,
        worktree: WorktreeSpec | None = None,
    ) -> AgentRecord:
        """A new running agent with an empty history. ``parent_uuid`` places it
        in the tree (a spawned child) without inheriting history; see fork().
        ``policy``: its policy chain as JSON text (None: the configured default).
        ``mcp``: its MCP server names as JSON text (None: the configured defaults)."""
        check_name(name)
        check_level(thinking_level)
        with self._write() as conn:
            if parent_uuid is not None:
                self._agent_row(conn, parent_uuid)
            record = self._insert_agent(
                conn,
                uuid=uuid,
                name=name,
                parent_uuid=parent_uuid,
                fork_message_id=None,
                provider=provider,
                model=model,
                thinking_level=thinking_level,
                system_prompt=system_prompt,
                cwd=cwd,
                policy=policy,
                mcp=mcp,
                priority=priority,
            )
            if budget is not None:  # a store.Budget, checked and written in this transaction
                self._put_budget(conn, record.uuid, budget)
            if worktree is not None:
                self._put_worktrees(conn, [(record.uuid, worktree)], record.created_at)
            if system_prompt:
                self._insert(conn, record.uuid, [Prepared("system", system_prompt)])
        self._ranges[record.uuid] = ((record.uuid, None),)
        return record

    def _put_budget(self, conn: sa.Connection, agent_uuid: str, budget: Any) -> None:
        """Check and write a budget (store/_budgets.py, which the Store puts first)."""
        raise NotImplementedError

    def _put_worktrees(
        self, conn: sa.Connection, trees: list[tuple[str, WorktreeSpec]], created: datetime
    ) -> None:
        """Write worktree rows (store/_worktrees.py, which the Store puts first)."""
        raise NotImplementedError

    def get_agent(self, uuid: str) -> AgentRecord:
        """The agent with exactly this id; AgentNotFound otherwise."""
        with self._read() as conn:
            return agent_record(self._agent_row(conn, uuid))

    def find_agents(self, ref: str) -> list[AgentRecord]:
        """Agents ``ref`` may mean: the exact id, live agents of that name, ids
        starting with it, dead agents of that name — in that order, no repeats.
        A removed agent (hidden) is found by its id or a prefix, not by name."""
        ref = ref.strip()
        a = agents.c
        with self._read() as conn:
            found = conn.execute(
                sa.select(agents)
                .where(a.name == ref, a.hidden_at.is_(None))
                .order_by(a.uuid.desc())
            ).all()
            live = [r for r in found if r.status != "dead"]
            dead = [r for r in found if r.status == "dead"]
            by_id: Sequence[Any] = ()
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
                out.append(agent_record(r))
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
        self,
        *,
        include_dead: bool = False,
        parent_uuid: str | None = None,
        include_hidden: bool = True,
    ) -> list[AgentRecord]:
        """Agents, oldest first; only live ones unless ``include_dead``; only the
        direct children of ``parent_uuid`` when given; removed (hidden) dead
        agents too unless ``include_hidden`` is false."""
        a = agents.c
        q = _LISTING.order_by(a.uuid)
        if not include_dead:
            q = q.where(a.status != "dead")
        if not include_hidden:
            q = q.where(a.hidden_at.is_(None))
        if parent_uuid is not None:
            q = q.where(a.parent_uuid == parent_uuid)
        with self._read() as conn:
            # by position, not through each row's mapping: a listing of
            # thousands spent most of its time there
            return [AgentRecord(**dict(zip(_FIELDS, r, strict=True))) for r in conn.execute(q)]

    def agent_refs(self) -> list[AgentRef]:
        """Every agent's uuid, name and whether it lives (dead and removed ones
        too): what short ids are judged against, without the rest of the rows."""
        with self._read() as conn:
            return [AgentRef(r[0], r[1], r[2] != "dead") for r in conn.execute(_REFS)]

    def agent_names(self, uuids: Sequence[str]) -> dict[str, str]:
        """The names of these agents (dead and removed ones too), by uuid."""
        ordered = sorted(set(uuids))
        out: dict[str, str] = {}
        with self._read() as conn:
            for i in range(0, len(ordered), 500):  # within every engine's bound on parameters
                q = sa.select(agents.c.uuid, agents.c.name).where(
                    agents.c.uuid.in_(ordered[i : i + 500])
                )
                out.update((str(u), str(n)) for u, n in conn.execute(q))
        return out

    def descendants(self, uuid: str, *, include_dead: bool = False) -> list[AgentRecord]:
        """Every agent below ``uuid`` in the tree (not itself), oldest first —
        what a kill must also end."""
        with self._read() as conn:
            self._agent_row(conn, uuid)
            sub = subtree(uuid)
            q = sa.select(agents).where(
                agents.c.uuid.in_(sa.select(sub.c.uuid)), agents.c.uuid != uuid
            )
            if not include_dead:
                q = q.where(agents.c.status != "dead")
            return [agent_record(r) for r in conn.execute(q.order_by(agents.c.uuid))]

    def mark_dead(self, uuid: str, *, reason: str | None = None) -> AgentRecord:
        """End the agent: an agent_killed row, status dead, ended_at set (one
        transaction). Its name becomes free. Already dead: returned unchanged.
        Descendants are the caller's to end (see descendants())."""
        with self._write() as conn:
            row = self._agent_row(conn, uuid)
            if row.status == "dead":
                return agent_record(row)
            at = now()
            killed = Prepared("agent_killed", reason or "killed", {"reason": reason})
            self._insert(conn, uuid, [killed], now=at)
            conn.execute(
                agents.update().where(agents.c.uuid == uuid).values(status="dead", ended_at=at)
            )
            # prompts it will never run are kept, set aside
            drop_pending(conn, uuid, at)
            return agent_record(self._agent_row(conn, uuid))

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
            check_level(thinking_level)
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
                return agent_record(row)
            text = f"{after['provider']}/{after['model']} thinking={after['thinking_level']}"
            self._insert(
                conn, uuid, [Prepared("model_switch", text, {"from": before, "to": after})]
            )
            conn.execute(agents.update().where(agents.c.uuid == uuid).values(**after))
            return agent_record(self._agent_row(conn, uuid))

    def set_system_prompt(self, uuid: str, prompt: str) -> AgentRecord:
        """Replace the system prompt: a system row and the agent row, one transaction."""
        with self._write() as conn:
            self._agent_row(conn, uuid)
            self._insert(conn, uuid, [Prepared("system", prompt)])
            conn.execute(agents.update().where(agents.c.uuid == uuid).values(system_prompt=prompt))
            return agent_record(self._agent_row(conn, uuid))

    def set_priority(self, uuid: str, priority: str | None) -> AgentRecord:
        """The agent's own priority in the provider limiter (None: each turn's)."""
        if priority is not None and priority not in ("interactive", "background"):
            raise ValueError(f"priority must be interactive or background, not {priority!r}")
        with self._write() as conn:
            self._agent_row(conn, uuid)
            conn.execute(agents.update().where(agents.c.uuid == uuid).values(priority=priority))
            return agent_record(self._agent_row(conn, uuid))

    def set_policy(self, uuid: str, chain: str | None) -> AgentRecord:
        """The agent's policy chain, as JSON (None: the configured default,
        followed across reloads)."""
        with self._write() as conn:
            self._agent_row(conn, uuid)
            conn.execute(agents.update().where(agents.c.uuid == uuid).values(policy=chain))
            return agent_record(self._agent_row(conn, uuid))

    def fork(
        self,
        parent_uuid: str,
        *,
        at_message_id: int | None = None,
        name: str | None = None,
        **settings: Any,
    ) -> AgentRecord:
        """A new running agent that inherits the parent's history up to
        ``at_message_id`` (default: the newest row the parent sees). Nothing is
        copied: one agent row and one ``fork`` row, in one transaction, at a cost
        that does not depend on history length. Model settings (``provider``,
        ``model``, ``thinking_level``) and ``system_prompt``, ``cwd``,
        ``policy``, ``mcp`` and ``priority`` are the parent's unless given;
        ``budget`` is checked against what the parent has left. The name
        defaults to ``<parent name>-<last 6 characters of the new id>``.

        BadForkPoint if ``at_message_id`` is not in the parent's history."""
        [(record, _)] = self.fork_many(
            parent_uuid, [ForkChild(name=name)], at_message_id=at_message_id, **settings
        )
        return record

    def fork_many(
        self, parent_uuid: str, children: Sequence[ForkChild], **settings: Any
    ) -> list[tuple[AgentRecord, MessageRecord | None]]:
        """Several forks of one parent at one point (see fork), in one
        transaction: all or none. A child with a ``prompt`` (a user Message)
        gets its first turn started in the same transaction (its user row and
        the open-turn mark, as Store.start_turn writes them), so a fan-out of
        N children with their first prompts is one commit. Returns each
        child's record and its first turn's user row (None without a prompt).
        ``settings``: _fork_in's (the fork point, the model, cwd, policy...)."""
        with self._write() as conn:
            out, at, ranges = self._fork_in(conn, parent_uuid, children, **settings)
        self._forked(out, at, ranges)
        return out

    def _fork_in(
        self,
        conn: sa.Connection,
        parent_uuid: str,
        children: Sequence[ForkChild],
        *,
        at_message_id: int | None = None,
        provider: str | None = None,
        model: str | None = None,
        thinking_level: str | None = None,
        system_prompt: str | None = None,
        cwd: str | None = None,
        policy: str | None = None,
        mcp: str | None = None,
        priority: str | None = None,
        budget: Any = None,
    ) -> tuple[list[tuple[AgentRecord, MessageRecord | None]], int | None, Any]:
        """fork_many's writes in the caller's transaction (a scheduled run
        forks in the transaction that claims its due time); the caller calls
        _forked once it has committed."""
        for child in children:
            if child.name is not None:
                check_name(child.name)
        if thinking_level is not None:
            check_level(thinking_level)
        prepared = [
            None if c.prompt is None else user_row(c.prompt, dict(c.meta or {})) for c in children
        ]
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
            _check_fork_point(conn, ranges, at, parent)
        # every statement once for the whole batch: a fan-out of a thousand
        # costs a few statements, not five thousand
        uuids = [c.uuid or uuid7() for c in children]
        names = _names(conn, parent, uuids, [c.name for c in children])
        created = now()
        shared = {
            "status": "running",
            "created_at": created,
            "ended_at": None,
            "parent_uuid": parent_uuid,
            "fork_message_id": at,
            "provider": provider if provider is not None else parent.provider,
            "model": model if model is not None else parent.model,
            "thinking_level": thinking_level
            if thinking_level is not None
            else parent.thinking_level,
            "system_prompt": system_prompt if system_prompt is not None else parent.system_prompt,
            "cwd": cwd if cwd is not None else parent.cwd,
            "policy": policy if policy is not None else parent.policy,
            "mcp": mcp if mcp is not None else parent.mcp,
            "priority": priority if priority is not None else parent.priority,
            "daemon": self.daemon_id,
        }
        rows = [
            {"uuid": u, "name": n, **shared} | ({} if c.cwd is None else {"cwd": c.cwd})
            for u, n, c in zip(uuids, names, children, strict=True)
        ]
        try:
            conn.execute(agents.insert(), rows)
        except exc.IntegrityError as e:  # a concurrent create took a name
            raise NameTaken(f"a name of {names[:3]}... is taken by a live agent") from e
        data = {"parent_uuid": parent_uuid, "at_message_id": at}
        text = f"forked from {parent.name} ({parent_uuid}) at message {at}"
        own = [Prepared("fork", text, data)]
        if system_prompt is not None and system_prompt != parent.system_prompt:
            own.append(Prepared("system", system_prompt))
        conn.execute(messages.insert(), [row_params(u, r, created) for u in uuids for r in own])
        if budget is not None:  # a store.Budget: no more than the parent has left
            for uuid in uuids:
                self._put_budget(conn, uuid, budget)
        trees = [(u, c.worktree) for u, c in zip(uuids, children, strict=True) if c.worktree]
        if trees:
            self._put_worktrees(conn, trees, created)
        firsts = _first_turns(self, conn, uuids, prepared, created)
        out = [(AgentRecord(**row), firsts.get(row["uuid"])) for row in rows]
        return out, at, ranges

    def _forked(
        self, out: list[tuple[AgentRecord, MessageRecord | None]], at: int | None, ranges: Any
    ) -> None:
        """After a fork committed: each child's lineage is itself, then the
        parent's ranges capped at the fork point."""
        inherited = (
            [] if at is None else [(u, at if hi is None else min(hi, at)) for u, hi in ranges]
        )
        for record, _ in out:
            self._ranges[record.uuid] = ((record.uuid, None), *inherited)

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
            "created_at": now(),
            "ended_at": None,
            "daemon": self.daemon_id,
            **values,
        }
        try:
            conn.execute(agents.insert(), row)
        except exc.IntegrityError as e:  # a concurrent create took the name
            raise NameTaken(f"the name {name!r} is taken by a live agent") from e
        return AgentRecord(**row)


def _names(
    conn: sa.Connection, parent: Any, uuids: list[str], wanted: list[str | None]
) -> list[str]:
    """Each child's name: the one given, else ``<parent>-<last 6 of its id>``,
    longer when a live agent (or a sibling) has it: ids made in one
    millisecond differ only in random bits, and among a thousand forks two
    share their last 6 characters a few times in a hundred. NameTaken for a
    given name a live agent or a sibling holds."""
    live: set[str] = set()
    candidates = {
        f"{parent.name}-{u[-size:]}"[-MAX_NAME:] for u in uuids for size in (6, 8, 12)
    } | {w for w in wanted if w is not None}
    ordered = sorted(candidates)
    for i in range(0, len(ordered), 500):  # within every engine's bound on parameters
        live.update(
            conn.execute(
                sa.select(agents.c.name).where(
                    agents.c.name.in_(ordered[i : i + 500]), agents.c.status != "dead"
                )
            ).scalars()
        )
    names: list[str] = []
    for uuid, name in zip(uuids, wanted, strict=True):
        if name is None:
            name = next(
                (
                    n
                    for n in (f"{parent.name}-{uuid[-size:]}"[-MAX_NAME:] for size in (6, 8, 12))
                    if n not in live
                ),
                f"{parent.name}-{uuid}"[-MAX_NAME:],
            )
        elif name in live:
            holder = "a sibling in this fork" if name in names else "a live agent"
            raise NameTaken(f"the name {name!r} is taken by {holder}")
        live.add(name)
        names.append(name)
    return names


def _first_turns(
    store: StoreBase,
    conn: sa.Connection,
    uuids: list[str],
    prepared: list[Prepared | None],
    at: datetime,
) -> dict[str, MessageRecord]:
    """The user rows of the children's first turns, and their open-turn marks."""
    todo = [(u, p) for u, p in zip(uuids, prepared, strict=True) if p is not None]
    if not todo:
        return {}
    params = []
    for uuid, row in todo:
        # a turn id like Actor.new_turn_id's
        row = row._replace(data={**(row.data or {}), "turn": f"{uuid[-8:]}-{secrets.token_hex(4)}"})
        params.append(row_params(uuid, row, at))
    put_blobs(conn, [b for _, row in todo for b in row.blobs])
    ids = list(conn.execute(_INSERT_RETURNING, params).scalars())
    conn.execute(
        _MARK_OPEN, [{"b_agent": u, "b_start": i} for (u, _), i in zip(todo, ids, strict=True)]
    )
    return {
        u: MessageRecord(
            id=i,
            agent_uuid=u,
            kind=p["kind"],
            content=p["content"],
            data=p["data"],
            message=row.message,
            created_at=at,
        )
        for (u, row), i, p in zip(todo, ids, params, strict=True)
    }


def _check_fork_point(conn: sa.Connection, ranges: Any, at: int, parent: Any) -> None:
    """A fork must not end its inherited history on tool calls without their
    results: every API refuses such a history (and the child's first turn
    would start inside the parent's). BadForkPoint names the points near it
    that are valid."""
    m = messages.c
    cond = _replay.range_cond(ranges)
    row = conn.execute(sa.select(m.kind, m.message_json).where(m.id == at)).one()
    calls_at: int | None = at
    if row.kind == "tool_call":  # one of the rows that follow its assistant row
        calls_at = conn.execute(
            sa.select(sa.func.max(m.id)).where(cond, m.id < at, m.kind == "assistant")
        ).scalar()
    elif not (
        row.kind == "assistant"
        and row.message_json
        and _replay.decode_message(row.message_json).tool_calls
    ):
        return
    after = conn.execute(
        sa.select(m.id, m.kind)
        .where(cond, m.id > at, m.kind.notin_(("tool_call", "permission")))
        .order_by(m.id)
        .limit(1)
    ).first()
    before = conn.execute(
        sa.select(sa.func.max(m.id)).where(cond, m.id < (calls_at if calls_at is not None else at))
    ).scalar()
    options = []
    if after is not None and after.kind == "tool_result":
        options.append(f"at {after.id} (with the results)")
    if before is not None:
        options.append(f"at {before} (before the calls)")
    hint = f": fork {' or '.join(options)}" if options else ""
    raise BadForkPoint(
        f"cannot fork agent {parent.name} ({parent.uuid}) at message {at}: it holds tool calls, "
        f"and a history cannot end on calls without their results{hint}"
    )


def subtree(uuid: str) -> sa.CTE:
    """The agent and every agent below it in the tree (uuid column)."""
    base = sa.select(agents.c.uuid).where(agents.c.uuid == uuid).cte("subtree", recursive=True)
    child = agents.alias("child")
    return base.union_all(sa.select(child.c.uuid).where(child.c.parent_uuid == base.c.uuid))
