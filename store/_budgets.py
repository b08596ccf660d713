"""Budgets over agent trees, and the spend they are checked against.

A budget is a row of ``budgets`` on one agent: ``max_cost_usd``,
``max_tokens`` (input + output, thinking included), ``max_turns``, each
optional. It applies to the agent and every descendant, so a budget on a
root is a tree budget. Spend is never stored beside it: it is summed from the
usage the ``messages`` rows already hold (assistant and usage rows, as
``usage()`` reads them), so after a restart or a ``kill -9`` it is exactly
what was committed, each call once (an assistant row is written once; a
call cut before its usage came back has nothing to count).

Costs follow the one pricing rule of _usage.py. A model without a price is
counted as unknown, never as $0: ``Spent.unpriced`` names it, and a cost
budget refuses such a model unless it was set with ``allow_unpriced`` (its
calls then count toward the tokens and turns only).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import msgspec
import sqlalchemy as sa

from ._errors import StoreError
from ._rows import now
from ._schema import agents, budgets, message_usage
from ._types import UsageTotals
from ._usage import TOKEN_FIELDS, UsageMixin, attribute, report
from ._usage import cost as priced

# bounds of what a budget may say: beyond them a number is a typo, not a plan
MAX_COST_USD = 1_000_000.0
MAX_COUNT = 2**53


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """Limits on an agent and its descendants; None: no limit of that kind."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_turns: int | None = None
    allow_unpriced: bool = False  # a cost limit on a model with no price: tokens/turns only

    @property
    def empty(self) -> bool:
        return self.max_cost_usd is None and self.max_tokens is None and self.max_turns is None


class Spent(msgspec.Struct, frozen=True, kw_only=True):
    """What some agents spent: ``cost_usd`` sums the priced calls only, and
    ``unpriced`` names the models whose calls have no price (so the whole cost
    is unknown when it is not empty)."""

    cost_usd: float = 0.0
    unpriced: list[str] = msgspec.field(default_factory=list)
    tokens: int = 0  # input + output (thinking included)
    turns: int = 0  # prompts that made a model call
    calls: int = 0
    agents: int = 0


class BudgetState(msgspec.Struct, frozen=True, kw_only=True):
    """A budget in force on an agent: whose it is, its limits, the spend of
    that agent's subtree against them."""

    agent_uuid: str  # the agent the budget was set on (the checked agent or an ancestor)
    name: str
    budget: Budget
    spent: Spent
    set_at: datetime
    root: bool  # set on a root agent: a tree budget

    def left_usd(self) -> float | None:
        if self.budget.max_cost_usd is None:
            return None
        return self.budget.max_cost_usd - self.spent.cost_usd

    def left_tokens(self) -> int | None:
        m = self.budget.max_tokens
        return None if m is None else m - self.spent.tokens

    def left_turns(self) -> int | None:
        m = self.budget.max_turns
        return None if m is None else m - self.spent.turns


class InvalidBudget(StoreError, ValueError):
    """A budget's value is not a limit (negative, zero, not a finite number):
    the message names the field."""


class BudgetRefused(StoreError):
    """A budget that cannot be given: more than an ancestor has left, or a
    cost limit on a model with no price."""


def check_budget(b: Budget) -> None:
    """InvalidBudget naming the first field that is not a limit."""
    c = b.max_cost_usd
    if c is not None:
        if isinstance(c, bool) or not isinstance(c, int | float):
            raise InvalidBudget("max_cost_usd: must be a number of US dollars")
        if not math.isfinite(c) or c <= 0:
            raise InvalidBudget(f"max_cost_usd: must be a positive amount of US dollars, not {c}")
        if c > MAX_COST_USD:
            raise InvalidBudget(f"max_cost_usd: must be at most {MAX_COST_USD:.0f}")
    for field in ("max_tokens", "max_turns"):
        v = getattr(b, field)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidBudget(f"{field}: must be a whole number")
        if v < 1 or v > MAX_COUNT:
            raise InvalidBudget(f"{field}: must be from 1 to {MAX_COUNT}, not {v}")


def _tree(conn: sa.Connection, top: str) -> dict[str, str | None]:
    """uuid -> parent of ``top`` and every agent below it (one recursive query)."""
    a = agents.c
    base = sa.select(a.uuid, a.parent_uuid).where(a.uuid == top).cte("btree", recursive=True)
    child = agents.alias("bchild")
    tree = base.union_all(
        sa.select(child.c.uuid, child.c.parent_uuid).where(child.c.parent_uuid == base.c.uuid)
    )
    return {r.uuid: r.parent_uuid for r in conn.execute(sa.select(tree.c.uuid, tree.c.parent_uuid))}


def _ancestry(conn: sa.Connection, uuid: str) -> list[Any]:
    """The agent and each ancestor (nearest first), with its budget row's
    columns (NULL: none), in one recursive query up the parent links."""
    a, b = agents.c, budgets.c
    up = (
        sa.select(a.uuid, a.parent_uuid, sa.literal(0).label("depth"))
        .where(a.uuid == uuid)
        .cte("bup", recursive=True)
    )
    parent = agents.alias("bparent")
    up = up.union_all(
        sa.select(parent.c.uuid, parent.c.parent_uuid, up.c.depth + 1).where(
            parent.c.uuid == up.c.parent_uuid
        )
    )
    q = (
        sa.select(
            up.c.uuid,
            up.c.parent_uuid,
            up.c.depth,
            a.name,
            a.provider,
            a.model,
            b.max_cost_usd,
            b.max_tokens,
            b.max_turns,
            b.allow_unpriced,
            b.set_at,
        )
        .join(agents, a.uuid == up.c.uuid)
        .outerjoin(budgets, b.agent_uuid == up.c.uuid)
        .order_by(up.c.depth)
    )
    return list(conn.execute(q))


def _budget_of(row: Any) -> Budget | None:
    if row.set_at is None:
        return None
    return Budget(
        max_cost_usd=row.max_cost_usd,
        max_tokens=row.max_tokens,
        max_turns=row.max_turns,
        allow_unpriced=bool(row.allow_unpriced),
    )


def _add(spent: Iterable[Spent]) -> Spent:
    items = list(spent)
    return Spent(
        cost_usd=sum(s.cost_usd for s in items),
        unpriced=sorted({m for s in items for m in s.unpriced}),
        tokens=sum(s.tokens for s in items),
        turns=sum(s.turns for s in items),
        calls=sum(s.calls for s in items),
        agents=sum(s.agents for s in items),
    )


def _money(x: float) -> str:
    return f"${x:.2f}" if x >= 0.01 or x <= 0 else f"${x:.4f}"


class BudgetsMixin(UsageMixin):
    """Store methods for budgets (see the module doc)."""

    # whether any agent has a budget: read once, then kept true by every
    # budget written through this store. Most daemons have none, and then a
    # model call's budget check costs no query at all.
    _any_budget: bool | None = None

    def budgets_known(self) -> bool | None:
        """Whether any budget exists, if already read (no I/O); None: not yet."""
        return self._any_budget

    def any_budget(self) -> bool:
        """Whether any agent has a budget (one query the first time)."""
        if self._any_budget is None:
            with self._read() as conn:
                row = conn.execute(sa.select(budgets.c.agent_uuid).limit(1)).first()
            self._any_budget = row is not None
        return self._any_budget

    def _spent_per_agent(self, conn: sa.Connection, uuids: Sequence[str]) -> dict[str, Spent]:
        """Each agent's own spend, by the same queries and rule as usage()."""
        rows, turns, requested = self._usage_rows(conn, uuids)
        per_agent: dict[str, list[Any]] = {}
        for r in rows:
            per_agent.setdefault(r.agent_uuid, []).append(r)
        out: dict[str, Spent] = {}
        for uuid in uuids:
            rep = report(
                uuid,
                descendants=False,
                agents=1,
                rows=per_agent.get(uuid, ()),
                turns=turns.get(uuid, 0),
                requested=requested,
                catalog=self.catalog,
            )
            t = rep.total
            out[uuid] = Spent(
                cost_usd=sum(m.cost_usd or 0.0 for m in rep.by_model),
                unpriced=list(rep.unpriced),
                tokens=t.input_tokens + t.output_tokens,
                turns=t.turns,
                calls=t.calls,
                agents=1,
            )
        return out

    def _subtree_spent(self, conn: sa.Connection, top: str, of: Sequence[str]) -> dict[str, Spent]:
        """The spend of each agent of ``of`` (all in ``top``'s subtree) and
        every agent below it: the tree is read once, then summed upwards."""
        parents = _tree(conn, top)
        own = self._spent_per_agent(conn, list(parents))
        children: dict[str | None, list[str]] = {}
        for uuid, parent in parents.items():
            children.setdefault(parent, []).append(uuid)
        out = {}
        for uuid in of:
            below, todo = [], [uuid]
            while todo:
                u = todo.pop()
                below.append(u)
                todo.extend(children.get(u, ()))
            out[uuid] = _add(own[u] for u in below)
        return out

    def _states(
        self, conn: sa.Connection, chain: list[Any], also: str | None = None
    ) -> tuple[list[BudgetState], Spent]:
        """The budgets along ``chain`` (an _ancestry), each with its subtree's
        spend; and the spend of ``also``'s subtree (one agent in the chain)."""
        budgeted = [(r, b) for r in chain if (b := _budget_of(r)) is not None]
        if not budgeted:
            return [], Spent()
        # every budgeted agent's subtree is inside the topmost one's
        wanted = [r.uuid for r, _ in budgeted] + ([also] if also else [])
        spent = self._subtree_spent(conn, budgeted[-1][0].uuid, wanted)
        states = [
            BudgetState(
                agent_uuid=row.uuid,
                name=row.name,
                budget=b,
                spent=spent[row.uuid],
                set_at=row.set_at,
                root=row.parent_uuid is None,
            )
            for row, b in budgeted
        ]
        return states, spent[also] if also else Spent()

    def budgets_of(self, agent_uuid: str) -> list[BudgetState]:
        """Every budget in force on the agent: its own, then each ancestor's
        (nearest first), each with the spend of its agent's whole subtree."""
        with self._read() as conn:
            self._agent_row(conn, agent_uuid)
            return self._states(conn, _ancestry(conn, agent_uuid))[0]

    def set_budget(self, agent_uuid: str, budget: Budget | None) -> list[BudgetState]:
        """Set (or, with None or an empty Budget, clear) the agent's own
        budget, committed when this returns; the budgets now in force."""
        with self._write() as conn:
            self._agent_row(conn, agent_uuid)
            self._put_budget(conn, agent_uuid, budget)
            return self._states(conn, _ancestry(conn, agent_uuid))[0]

    def _put_budget(self, conn: sa.Connection, agent_uuid: str, budget: Budget | None) -> None:
        """Check and write the agent's budget inside the caller's transaction
        (create_agent and fork give a new agent its budget in theirs)."""
        conn.execute(budgets.delete().where(budgets.c.agent_uuid == agent_uuid))
        if budget is None or budget.empty:
            return
        check_budget(budget)
        self._any_budget = True  # before the write: a rollback only costs a query later
        chain = _ancestry(conn, agent_uuid)
        me = chain[0]
        if budget.max_cost_usd is not None and not budget.allow_unpriced:
            entry = self.catalog.lookup(me.provider, me.model)
            if entry is None or entry.prices is None:
                raise BudgetRefused(
                    f"model {me.provider}/{me.model} has no price in the catalog, so a cost "
                    "budget cannot be checked against it: set a price for it in config.json, "
                    "or allow it (--allow-unpriced, allow_unpriced: true) to count its tokens "
                    "and turns only"
                )
        # what it (and its subtree) spent so far is inside each ancestor's spend
        states, mine = self._states(conn, chain[1:], also=me.uuid)
        for state in states:
            _check_room(state, budget, mine)
        self._insert_budget(conn, agent_uuid, budget)

    def _insert_budget(self, conn: sa.Connection, agent_uuid: str, budget: Budget) -> None:
        conn.execute(
            budgets.insert().values(
                agent_uuid=agent_uuid,
                max_cost_usd=budget.max_cost_usd,
                max_tokens=budget.max_tokens,
                max_turns=budget.max_turns,
                allow_unpriced=budget.allow_unpriced,
                set_at=now(),
            )
        )

    def spend_since(self, since: datetime, *, provider: str | None = None) -> Spent:
        """Every agent's spend since ``since`` (a day's budgets: since UTC
        midnight), on one provider or all; priced as usage() prices, with the
        agent's model now as the requested one."""
        v, a = message_usage.c, agents.c
        q = (
            sa.select(
                v.provider,
                v.model,
                a.provider.label("asked_provider"),
                a.model.label("asked_model"),
                sa.func.count().label("calls"),
                *(sa.func.sum(v[f]).label(f) for f in TOKEN_FIELDS),
            )
            .join(agents, a.uuid == v.agent_uuid)
            .where(v.created_at >= since)
            .group_by(v.provider, v.model, a.provider, a.model)
        )
        if provider is not None:
            q = q.where(v.provider == provider)
        with self._read() as conn:
            rows = conn.execute(q).all()
        dollars, unpriced, tokens, calls = 0.0, set(), 0, 0
        for r in rows:
            key, entry = attribute(
                (r.asked_provider, r.asked_model),
                r.provider or "unknown",
                r.model or "unknown",
                self.catalog,
            )
            counts = {f: int(getattr(r, f) or 0) for f in TOKEN_FIELDS}
            tokens += counts["input_tokens"] + counts["output_tokens"]
            calls += int(r.calls or 0)
            if entry is not None and entry.prices is not None:
                dollars += priced(
                    entry.prices, UsageTotals(provider=key[0], model=key[1], **counts)
                )
            elif counts["input_tokens"] or counts["output_tokens"]:
                unpriced.add(f"{key[0]}/{key[1]}")
        return Spent(cost_usd=dollars, unpriced=sorted(unpriced), tokens=tokens, calls=calls)


def _check_room(state: BudgetState, wanted: Budget, mine: Spent) -> None:
    """BudgetRefused when ``wanted`` gives the agent more than the ancestor
    budget ``state`` has left (what the agent already spent is inside both)."""
    who = f"{state.name} ({state.agent_uuid})"
    left = state.left_usd()
    if wanted.max_cost_usd is not None and left is not None:
        if state.spent.unpriced and not state.budget.allow_unpriced:
            raise BudgetRefused(
                f"agent {who} has spent an unknown amount (no price for "
                f"{', '.join(state.spent.unpriced)}): a cost budget cannot be carved from it"
            )
        room = max(0.0, left) + mine.cost_usd
        if wanted.max_cost_usd > room + 1e-9:
            raise BudgetRefused(
                f"max_cost_usd: {_money(wanted.max_cost_usd)} is more than agent {who} has left: "
                f"{_money(max(0.0, left))} of its {_money(state.budget.max_cost_usd or 0)} budget "
                f"(a child may be given at most {_money(room)})"
            )
    for field, what, left_n, spent_n in (
        ("max_tokens", "tokens", state.left_tokens(), mine.tokens),
        ("max_turns", "turns", state.left_turns(), mine.turns),
    ):
        asked = getattr(wanted, field)
        if asked is None or left_n is None:
            continue
        room_n = max(0, left_n) + spent_n
        if asked > room_n:
            limit = getattr(state.budget, field)
            raise BudgetRefused(
                f"{field}: {asked} is more than agent {who} has left: {max(0, left_n)} {what} "
                f"of its {limit} (a child may be given at most {room_n})"
            )
