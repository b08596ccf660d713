"""The contract between the turn loop and the tools.

A tool is a JSON-Schema definition with an async handler. The registry
validates arguments, applies the tool's timeout and output cap, and turns every
failure into an error result the model can read; it never raises to the turn
loop (cancellation excepted: a cancelled turn cancels its tools).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from providers.types import ImageBlock

from ._env import ToolEnv
from ._guard import Guard, Protected

if TYPE_CHECKING:  # at run time: the permissions package may import tools' names
    from agents.permissions._types import Sandbox
    from agents.tracing import Tracer


@dataclass(frozen=True)
class ToolOutput:
    content: str
    is_error: bool = False
    # pictures a tool returns (MCP), sent where the API takes them
    images: tuple[ImageBlock, ...] = ()


class AgentOps(Protocol):
    """What the agent tools (fork, kill, send, wait) ask of the supervisor.

    Agents are named by uuid, unique uuid prefix or name; errors are raised as
    AgentOpError with a message for the model.
    """

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
        """Fork ``parent`` at its last completed message; start ``prompt`` at
        once. Returns the child uuid. ``budget``: max_cost_usd, max_tokens,
        max_turns (never more than the parent has left). ``worktree``: the
        child in a git worktree of its own (None: as the policy says)."""
        ...

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
        """One child per prompt, as fork makes one, in one transaction (names
        NAME-1, NAME-2...). Returns the children's uuids in order."""
        ...

    async def kill(self, caller: str, target: str) -> list[str]:
        """End ``target`` and its descendants (only the caller's own
        descendants). Returns the uuids ended."""
        ...

    async def send(self, sender: str, to: str, text: str) -> int:
        """Put ``text`` in ``to``'s mailbox. Returns the mail id."""
        ...

    async def wait(
        self,
        caller: str,
        agents: list[str],
        timeout: float | None,  # noqa: ASYNC109
    ) -> list[dict[str, Any]]:
        """Block until each of ``agents`` has answered (mailed the caller) or finished its turn
        or died; return one dict per agent: {"agent", "status", "reply"}; on timeout the
        ones still running say status "running"."""
        ...


class AgentOpError(Exception):
    """A refused agent operation; the message goes to the model as an error result."""


@dataclass
class ToolContext:
    agent_uuid: str
    cwd: Path
    ops: AgentOps | None = None  # None where agent tools are not offered
    env: dict[str, str] = field(default_factory=dict)  # extra environment for processes
    # How processes get their environment, and which files the file tools refuse.
    # None: the registry's (ToolRegistry fills them in), else the safe defaults.
    tool_env: ToolEnv | None = None
    guard: Guard | None = None
    # How bash and external tools are confined (see _sandbox), from the policy.
    sandbox: Sandbox = "none"
    network: bool = False
    # the daemon's worktrees folder: an agent whose cwd is a worktree there
    # may also write the git folders a commit needs (_gitmounts.py)
    worktrees: Path | None = None
    worktree_branch: str | None = None  # its worktree's branch, from the daemon's record
    # the id of the call being run (the registry sets it per call), and where
    # a long tool reports progress: (call_id, progress, total, message)
    call_id: str = ""
    progress: Callable[[str, float, float | None, str | None], None] | None = None
    # each call run in its own span (agents/tracing); None: traces off
    tracer: Tracer | None = None

    def process_env(self, tool: str) -> dict[str, str]:
        """The environment of a process run by ``tool`` for this agent."""
        extra = {"IKIGAI_AGENT_UUID": self.agent_uuid, **self.env}
        return (self.tool_env or ToolEnv()).build(tool, extra)

    @property
    def files(self) -> Guard:
        return self.guard if self.guard is not None else Guard()

    @property
    def writable_files(self) -> Guard:
        """``files``, and for an agent in a worktree the worktree's ``.git``
        file: rewritten, it would point the daemon's own git commands at a
        repository (and a config) the agent made. Its sandbox pins it too."""
        guard = self.files
        if self.worktrees is None or not self.cwd.is_relative_to(self.worktrees):
            return guard
        pinned = Protected(self.cwd / ".git", "tells git where this worktree's repository is")
        return Guard([*guard.files, pinned])


Handler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolOutput]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object
    handler: Handler
    timeout: float = 120.0  # seconds
    server: str | None = None  # the MCP server whose tool it is (traces say so)
    max_output: int = 64 * 1024  # characters kept of the output; the rest is cut with a note
