"""The agent operations the model's own tools (fork, kill, send, wait) call,
answered by the supervisor."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from store import Budget, StoreError

from ._forks import numbered
from .errors import AgentError
from .tools import AgentOpError


@contextmanager
def _refused() -> Iterator[None]:
    """A refusal the model should read (unknown agent, bad model, name taken...)
    becomes AgentOpError; anything else is a bug and propagates (the tool
    runner logs it with its traceback)."""
    try:
        yield
    except (AgentError, StoreError) as e:
        raise AgentOpError(str(e)) from None


class SupervisorOps:
    """The AgentOps the model's agent tools (fork, kill, send, wait) call."""

    def __init__(self, sup: Any) -> None:
        """``sup``: the Supervisor (not imported: it imports this module)."""
        self.sup = sup

    async def fork(
        self,
        parent: str,
        *,
        prompt: str | None,
        model: str | None,
        name: str | None,
        budget: dict[str, Any] | None = None,
        worktree: bool | None = None,
    ) -> str:
        with _refused():
            # the model's budget: refused (InvalidBudget, BudgetRefused) as a tool error
            limits = None if budget is None else Budget(**budget)
            # started by a model, not a person: background unless its tree says otherwise
            child, _, _ = await self.sup.fork(
                parent,
                model=model,
                name=name,
                prompt=prompt,
                origin="background",
                budget=limits,
                worktree=worktree,
            )
        return child.uuid

    async def fork_many(
        self,
        parent: str,
        prompts: list[str],
        *,
        model: str | None,
        name: str | None,
        budget: dict[str, Any] | None = None,
        worktree: bool | None = None,
    ) -> list[str]:
        names = numbered(name, len(prompts))
        with _refused():
            limits = None if budget is None else Budget(**budget)
            forked = await self.sup.fork_many(
                parent,
                list(prompts),
                names=names,
                model=model,
                origin="background",
                budget=limits,
                worktree=worktree,
            )
        return [child.uuid for child, _, _ in forked]

    async def kill(self, caller: str, target: str) -> list[str]:
        with _refused():
            record = await self.sup.resolve(target)
            if record.uuid == caller or record.uuid not in await self.sup.db.descendants(
                caller, live_only=True
            ):
                raise AgentOpError(
                    f"{target} is not a descendant of this agent: "
                    "an agent may only kill its own sub-agents"
                )
            return await self.sup.kill(record.uuid, reason=f"killed by {caller}")

    async def send(self, sender: str, to: str, text: str) -> int:
        with _refused():
            return await self.sup.send_mail(sender, to, text)

    async def wait(
        self,
        caller: str,
        agents: list[str],
        timeout: float | None,  # noqa: ASYNC109 - the model's own wait limit, part of the tool
    ) -> list[dict[str, Any]]:
        with _refused():
            return await self.sup.wait_for(caller, agents, timeout)
