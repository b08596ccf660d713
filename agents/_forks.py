"""Forks: one or many children of one parent, in one transaction.

``agent.fork {count}`` / ``{prompts}`` and the model's fork tool with a list
of prompts make N children at one fork point, each with its first turn's user
row and open-turn mark written in the same transaction as the agent rows
(store.fork_many): a fan-out of N is one commit instead of 2N. The children
inherit the same rows, so one replay gives every one its context (the Message
objects are shared, immutable), instead of N replays of the parent's history.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from providers.modelspec import ResolvedModel
from providers.types import Message, TextBlock, ThinkingLevel
from store import MAX_NAME, Budget, ForkChild, StoreError

from . import _mcp_select as mcp_select
from . import worktrees
from ._isolate import isolated
from .errors import AgentError
from .limited import PRIORITIES
from .permissions import dump_chain, parse_chain
from .tracing import caused_here
from .workdir import working_folder


def checked_folder(text: str) -> str:
    try:
        return working_folder(text)
    except ValueError as e:
        raise AgentError(str(e)) from None


def numbered(name: str | None, count: int) -> list[str | None]:
    """The names of ``count`` children asked to be called ``name``: the name
    itself for one, NAME-1, NAME-2... for more (names of live agents are
    unique), each cut to the longest name allowed, keeping its number."""
    if name is None:
        return [None] * count
    if count == 1:
        return [name]
    return [f"{name}-{i}"[-MAX_NAME:] for i in range(1, count + 1)]


def checked_priority(priority: str | None) -> str | None:
    if priority is not None and priority not in PRIORITIES:
        raise AgentError(f"priority must be one of {', '.join(PRIORITIES)}, not {priority!r}")
    return priority


async def fork_many(
    sup: Any,
    ref: str,
    prompts: list[str | None],
    *,
    names: list[str | None] | None = None,
    model: str | None = None,
    at_message: int | None = None,
    cwd: str | None = None,
    policy: str | None = None,
    mcp: list[str] | None = None,
    priority: str | None = None,
    origin: str = "interactive",
    budget: Budget | None = None,
    hold: list[Callable[[], None]] | None = None,
    worktree: worktrees.Wish | bool | None = None,
) -> list[tuple[Any, ResolvedModel, str | None]]:
    """One child per entry of ``prompts`` (see fork), all at one fork point
    and in one transaction with their first turns' user rows: a fan-out of
    N is one commit, and the children share one replay of what they
    inherit. (record, resolved model, first turn id) of each, in order.
    ``hold``: the children's first turns are appended to it as callables
    that begin them, for the caller to call once it has answered.
    ``worktree``: each child in a git worktree of its own (a Wish, or True
    for the defaults); None: as the parent's policy says (fork_isolation);
    False: none, unless the policy requires one (refused)."""
    if any(p is not None and not p.strip() for p in prompts):
        raise AgentError("a prompt is empty")
    names = names if names is not None else [None] * len(prompts)
    folder = checked_folder(cwd) if cwd is not None else None
    own = None if policy is None else sup._policy_name(policy)
    parent = await sup.resolve(ref)
    actor = sup.actors.get(parent.uuid)
    # its own priority, else its parent's (None: each turn's)
    priority = checked_priority(priority) or (actor.priority if actor else parent.priority)
    servers = (
        mcp_select.checked(sup.deps.mcp, mcp)
        if mcp is not None
        else actor.mcp
        if actor
        else mcp_select.parse(getattr(parent, "mcp", None))
    )
    inherited = actor.policy if actor else parse_chain(parent.policy)
    # the configured default is written down once the chain grows, so the
    # child keeps the parent's rules and its own
    chain = inherited if own is None else [*sup.deps.permissions.names(inherited), own]
    provider, model_name = parent.provider, parent.model
    level: ThinkingLevel = actor.thinking_level if actor else parent.thinking_level
    spec = model or f"{provider}/{model_name}"
    try:
        resolved = sup.resolve_model(spec, current_thinking=level)
    except ValueError as e:
        raise AgentError(str(e)) from None
    settings: dict[str, Any] = {
        "resolved": resolved,
        "at_message": at_message,
        "folder": folder,
        "chain": chain,
        "servers": servers,
        "priority": priority,
        "origin": origin,
        "budget": budget,
        "hold": hold,
    }
    where = folder or (str(actor.cwd) if actor else parent.cwd) or str(sup.deps.config.cwd)
    wish = await isolation(sup, worktree, chain, where)
    if wish is None:
        return await _fork(sup, parent, actor, prompts, names, [None] * len(prompts), **settings)
    async with isolated(sup, where, names, wish, parent_name=parent.name) as planned:
        return await _fork(sup, parent, actor, prompts, names, planned, **settings)


async def _fork(
    sup: Any,
    parent: Any,
    actor: Any,
    prompts: list[str | None],
    names: list[str | None],
    planned: list[Any],
    *,
    resolved: ResolvedModel,
    at_message: int | None,
    folder: str | None,
    chain: list[str],
    servers: list[str] | None,
    priority: str | None,
    origin: str,
    budget: Budget | None,
    hold: list[Callable[[], None]] | None,
) -> list[tuple[Any, ResolvedModel, str | None]]:
    if at_message is None and actor is not None and actor.turn_first_row is not None:
        # a busy agent forks from its last completed message, not mid-turn
        at_message = await sup.db.last_row_before(parent.uuid, actor.turn_first_row)
        if at_message is None:  # its first turn: nothing settled to inherit
            return [
                await sup._create(
                    model=f"{resolved.provider}/{resolved.model}/{resolved.thinking.level}",
                    name=plan.name if plan else name,
                    system=parent.system_prompt,
                    prompt=prompt,
                    parent=parent.uuid,
                    thinking="none",
                    cwd=plan.spec.path
                    if plan
                    else folder or str(actor.cwd if actor else parent.cwd),
                    chain=chain,
                    servers=servers,
                    priority=priority,
                    origin=origin,
                    budget=budget,
                    uuid=plan.uuid if plan else None,
                    worktree=plan.spec if plan else None,
                )
                for prompt, name, plan in zip(prompts, names, planned, strict=True)
            ]
    children = [
        ForkChild(
            name=plan.name if plan else name,
            prompt=None if p is None else Message(role="user", content=[TextBlock(text=p)]),
            uuid=plan.uuid if plan else None,
            cwd=plan.spec.path if plan else None,
            worktree=plan.spec if plan else None,
        )
        for p, name, plan in zip(prompts, names, planned, strict=True)
    ]
    try:
        forked = await sup.db.fork_many(
            parent.uuid,
            children,
            at_message_id=at_message,
            provider=resolved.provider,
            model=resolved.model,
            thinking_level=resolved.thinking.level,
            cwd=folder,
            policy=dump_chain(chain),
            mcp=mcp_select.dump(servers),
            priority=priority,
            budget=budget,  # no more than the parent has left (store.BudgetRefused)
        )
    except (StoreError, ValueError) as e:
        raise AgentError(str(e)) from None
    for (child, _), plan in zip(forked, planned, strict=True):
        if plan is not None:
            sup.note_worktree(child.uuid, plan.spec)
    prefix: list[Message] | None = None
    prompted = [
        (child, first, spec.prompt)
        for (child, first), spec in zip(forked, children, strict=True)
        if first is not None and spec.prompt is not None
    ]
    if len(prompted) > 1:
        # every child inherits the same rows: one replay serves them all
        prefix = await _inherited(sup, prompted[0][0].uuid, prompted[0][2])
    # No checkpoint from here on: every child is adopted before the first of
    # their turns can take the loop, and with ``hold`` the turns begin only
    # when the caller has its answer (a fan-out of 1,000 answers at once,
    # not after 1,000 turns' first steps).
    out: list[tuple[Any, ResolvedModel, str | None]] = []
    begins: list[Callable[[], None]] = []
    # made by a tool call: each child's first turn continues its span's trace
    causes = caused_here(sup.deps.tracer, "fork")
    for (child, first), child_spec, text in zip(forked, children, prompts, strict=True):
        child_actor = sup._adopt(child)
        turn = None
        if first is not None and child_spec.prompt is not None and text is not None:
            turn = str((first.data or {})["turn"])
            context = None if prefix is None else [*prefix, child_spec.prompt]
            begins.append(
                functools.partial(
                    child_actor.begin_stored,
                    turn,
                    text,
                    first.id,
                    priority=origin,
                    context=context,
                    causes=causes,
                )
            )
        out.append((child, resolved, turn))
    if hold is not None:
        hold.extend(begins)
    else:
        for begin in begins:
            begin()
    return out


async def isolation(
    sup: Any, asked: worktrees.Wish | bool | None, chain: list[str], where: str
) -> worktrees.Wish | None:
    """The worktree each child gets: the one asked for, else the one the
    parent's policy chain requires (fork_isolation: worktree) when ``where``
    is in a git repository."""
    required = sup.deps.permissions.fork_isolation(chain) == "worktree"
    if asked is True:
        return worktrees.Wish()
    if isinstance(asked, worktrees.Wish):
        return asked
    if not required:
        return None
    try:
        await worktrees.repo_of(where)
    except (worktrees.WorktreeError, worktrees.GitError):
        return None  # not a repository: nothing to isolate
    if asked is False:
        raise AgentError(
            "worktree: the policy requires forks of this agent to work in a worktree "
            "(fork_isolation: worktree); leave worktree out or set it true"
        )
    return worktrees.Wish()


async def _inherited(sup: Any, uuid: str, prompt: Message) -> list[Message] | None:
    """What a fork inherited: its replay without its own first prompt."""
    replayed = await sup.db.replay(uuid)
    if not replayed or replayed[-1] != prompt:
        return None  # not the shape expected: each child replays its own
    return replayed[:-1]
