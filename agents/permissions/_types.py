"""The vocabulary of tool permissions, shared by the policy (what a call may
do), the gate (asking and remembering) and the sandbox (how a shell runs).

A Policy is an ordered list of Rules; the first rule that matches a call
decides. An agent has a chain of policies — its ancestors' and its own — and
the strictest decision of the chain wins (deny > ask > allow), so a fork can
only narrow what its parent may do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["allow", "ask", "deny"]
Sandbox = Literal["none", "workdir", "strict"]
Remember = Literal["once", "agent", "session"]

SEVERITY: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True)
class Rule:
    """``tool``: a glob on the tool name (``bash``, ``file_*``, ``git__*``, ``*``).
    ``command``: for bash, a glob the whole command must match (``git status*``).
    ``path``: for tools with a path argument, where it must lie relative to the
    agent's working directory (``inside`` / ``outside``)."""

    tool: str
    action: Action
    command: str | None = None
    path: Literal["inside", "outside"] | None = None

    @property
    def label(self) -> str:
        """How the rule is named in decisions, events and history."""
        parts = [self.tool]
        if self.command is not None:
            parts.append(f"command={self.command}")
        if self.path is not None:
            parts.append(f"path={self.path}")
        return f"{self.action} {' '.join(parts)}"


@dataclass(frozen=True)
class Policy:
    name: str
    rules: tuple[Rule, ...]
    sandbox: Sandbox = "workdir"  # how bash and external tools run
    network: bool = False  # may sandboxed processes reach the network
    yolo: bool = False  # "allow everything": explicit, and shown by ls/show
    # "worktree": forks of an agent whose cwd is a repository get a worktree
    fork_isolation: str = "none"


@dataclass(frozen=True)
class Decision:
    action: Action
    rule: str  # the label of the deciding rule ("default" when none matched)
    policy: str  # the name of the policy in the chain that decided
