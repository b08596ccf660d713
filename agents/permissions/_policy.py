"""Which tool calls an agent may make: rule matching over its policy chain.

Pure: no I/O, no clock, no filesystem (paths are normalised as text, symlinks
are not followed), so a decision depends on the call, the working directory
and the chain alone, and the gate can ask it as often as it likes.

    perms = Permissions(config_policies, default="default", sandbox_available=True)
    decision = perms.decide(agent.policy, call, agent.cwd)   # allow | ask | deny
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from providers.types import ToolCallBlock

from ._types import SEVERITY, Decision, Policy, Rule, Sandbox

__all__ = [
    "AGENT_TOOLS",
    "BUILTIN_POLICIES",
    "DEFAULT_POLICY",
    "IN_PROCESS_TOOLS",
    "PATH_TOOLS",
    "UNREADABLE",
    "YOLO_POLICY",
    "Permissions",
    "decide",
    "dump_chain",
    "parse_chain",
    "path_place",
]

# The tools whose path argument says where they read or write (all name it
# ``path``; for glob and grep it is optional and means the working directory).
PATH_TOOLS: dict[str, str] = {
    "file_read": "path",
    "file_write": "path",
    "file_edit": "path",
    "glob": "path",
    "grep": "path",
}
AGENT_TOOLS: tuple[str, ...] = ("fork", "kill", "send", "wait")
# Tools that run inside the daemon; every other tool (bash, external tools)
# starts a process, which only the sandbox can confine.
IN_PROCESS_TOOLS: frozenset[str] = frozenset({*PATH_TOOLS, *AGENT_TOOLS})

# Shell syntax that chains or redirects: an allow rule's command glob such as
# ``git status*`` must not also allow ``git status; rm -rf ~``.
_SHELL_CONTROL = (";", "&", "|", "`", "$(", ">", "<", "\n", "\r")

DEFAULT_POLICY = Policy(
    name="default",
    rules=(
        Rule("file_read", "allow", path="inside"),
        Rule("glob", "allow", path="inside"),
        Rule("grep", "allow", path="inside"),
        Rule("file_read", "ask", path="outside"),
        Rule("glob", "ask", path="outside"),
        Rule("grep", "ask", path="outside"),
        # one rule per tool, so "always" on one of them covers that tool alone
        Rule("bash", "ask"),
        Rule("file_write", "ask"),
        Rule("file_edit", "ask"),
        *(Rule(t, "ask") for t in AGENT_TOOLS),
    ),
    sandbox="workdir",
    network=False,
)
YOLO_POLICY = Policy(
    name="yolo", rules=(Rule("*", "allow"),), sandbox="none", network=True, yolo=True
)
BUILTIN_POLICIES: dict[str, Policy] = {p.name: p for p in (DEFAULT_POLICY, YOLO_POLICY)}

# The name a stored chain gets when its text cannot be read: no configured
# policy can have it (names are letters, digits, '_', '-', '.'), so it asks.
UNREADABLE = "<unreadable>"

_SANDBOX_RANK: dict[str, int] = {"none": 0, "workdir": 1, "strict": 2}


# ------------------------------------------------------------------ matching


def path_place(call: ToolCallBlock, cwd: Path) -> str | None:
    """``inside`` / ``outside`` the working directory for a tool with a path
    argument, None for other tools. A path that is not a string, or a glob
    pattern that climbs out (``../*``) or is absolute, counts as outside: the
    rule that asks is the safe reading of what cannot be read."""
    arg = PATH_TOOLS.get(call.name)
    if arg is None:
        return None
    args: Any = call.arguments
    value = args.get(arg) if isinstance(args, dict) else None
    if value is None or value == "":
        value = "."  # glob and grep search the working directory by default
    if not isinstance(value, str):
        return "outside"
    if call.name == "glob":
        pattern = args.get("pattern")
        if isinstance(pattern, str) and (
            pattern.startswith("/") or ".." in pattern.replace("\\", "/").split("/")
        ):
            return "outside"
    return "inside" if _inside(value, cwd) else "outside"


def _inside(text: str, cwd: Path) -> bool:
    """Inside both as written and as the file system resolves it: ``..``
    collapsed as text, and a symlink inside the folder that points out of it
    (``link -> ~/.ssh``) counts as outside."""
    if not _inside_as_text(text, cwd):
        return False
    full = os.path.join(str(cwd), os.path.expanduser(text))
    try:
        real, base = os.path.realpath(full), os.path.realpath(cwd)
    except (OSError, ValueError):
        return False
    return real == base or real.startswith(base.rstrip("/") + "/")


def _inside_as_text(text: str, cwd: Path) -> bool:
    # as the file tools read it: ~ expanded, relative to the agent's folder
    expanded = os.path.expanduser(text)
    if expanded.startswith("~"):  # an unknown user's home: not ours to place
        return False
    base = posixpath.normpath(str(cwd))
    full = posixpath.normpath(posixpath.join(base, expanded))
    if full.startswith("//"):  # POSIX keeps a leading "//"; it is still the root
        full = "/" + full.lstrip("/")
    if base == "/":
        return full.startswith("/")
    return full == base or full.startswith(base + "/")


def _command_matches(rule: Rule, call: ToolCallBlock) -> bool:
    command = call.arguments.get("command") if isinstance(call.arguments, dict) else None
    if not isinstance(command, str) or rule.command is None:
        return False
    if not fnmatchcase(command, rule.command):
        return False
    if rule.action == "allow":
        # chaining or redirection the glob does not spell out is not allowed by it
        return not any(c in command and c not in rule.command for c in _SHELL_CONTROL)
    return True


def _matches(rule: Rule, call: ToolCallBlock, cwd: Path) -> bool:
    if not fnmatchcase(call.name, rule.tool):
        return False
    if rule.command is not None and not _command_matches(rule, call):
        return False
    return rule.path is None or path_place(call, cwd) == rule.path


def _decide_one(policy: Policy, call: ToolCallBlock, cwd: Path) -> Decision:
    if policy.yolo:
        return Decision("allow", "yolo", policy.name)
    for rule in policy.rules:
        if _matches(rule, call, cwd):
            return Decision(rule.action, rule.label, policy.name)
    return Decision("ask", "default", policy.name)


def _strictest_sandbox(chain: Sequence[Policy]) -> tuple[Sandbox, bool]:
    mode: Sandbox = "none"
    for p in chain:
        if _SANDBOX_RANK[p.sandbox] > _SANDBOX_RANK[mode]:
            mode = p.sandbox
    return mode, all(p.network for p in chain)


def decide(
    chain: Sequence[Policy], call: ToolCallBlock, cwd: Path, *, sandbox_available: bool
) -> Decision:
    """Each policy's first matching rule (else its fallback ``ask``); the
    strictest across the chain wins, the earliest policy on a tie. An allowed
    process-running tool (bash, external tools) is asked instead when the
    chain wants a sandbox and the machine has none."""
    if not chain:
        return Decision("ask", "default", "")
    best: Decision | None = None
    for policy in chain:
        d = _decide_one(policy, call, cwd)
        if best is None or SEVERITY[d.action] > SEVERITY[best.action]:
            best = d
    assert best is not None
    if best.action == "allow" and call.name not in IN_PROCESS_TOOLS and not sandbox_available:
        wants = next((p for p in chain if p.sandbox != "none"), None)
        if wants is not None:
            return Decision("ask", "no sandbox available", wants.name)
    return best


# ------------------------------------------------------------------ chains


def parse_chain(text: str | None) -> list[str] | None:
    """An agent row's ``policy`` column: None (the configured default) or a
    JSON list of names. Text that is not such a list reads as one name no
    policy has, so every call of that agent is asked."""
    if text is None:
        return None
    try:
        names = json.loads(text)
    except ValueError:
        return [UNREADABLE]
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return names
    return [UNREADABLE]


def dump_chain(names: Sequence[str] | None) -> str | None:
    """The ``policy`` column text of a chain (None: the configured default)."""
    return None if names is None else json.dumps(list(names))


class Permissions:
    """The named policies (built-ins and the config's), the default name and
    whether a sandbox can run here. Immutable: a reload builds a new one."""

    def __init__(
        self,
        policies: Iterable[Policy] = (),
        *,
        default: str = "default",
        sandbox_available: bool = False,
    ) -> None:
        named = dict(BUILTIN_POLICIES)
        for p in policies:
            named[p.name] = p
        if default not in named:
            raise ValueError(
                f"the default policy {default!r} is not defined (known: {', '.join(sorted(named))})"
            )
        self.policies: dict[str, Policy] = named
        self.default = default
        self.sandbox_available = sandbox_available

    def known(self) -> list[str]:
        return sorted(self.policies)

    def names(self, names: Sequence[str] | None) -> list[str]:
        """The chain's names as shown to people: the default's when None."""
        return [self.default] if names is None else list(names)

    def chain(self, names: Sequence[str] | None) -> list[Policy]:
        """The policies of ``names`` (None: the default). A name no longer
        defined (the config changed) stands for a policy that asks everything
        and runs processes in the strict sandbox: never wider than before."""
        return [
            self.policies.get(n) or Policy(name=n, rules=(), sandbox="strict")
            for n in self.names(names)
        ]

    def decide(self, names: Sequence[str] | None, call: ToolCallBlock, cwd: Path) -> Decision:
        return decide(self.chain(names), call, cwd, sandbox_available=self.sandbox_available)

    def sandbox_of(self, names: Sequence[str] | None) -> tuple[Sandbox, bool]:
        """The strictest sandbox mode of the chain (strict > workdir > none),
        and network only when every policy grants it."""
        return _strictest_sandbox(self.chain(names))

    def fork_isolation(self, names: Sequence[str] | None) -> str:
        """ "worktree" when any policy of the chain requires forks to work in
        a worktree (the strictest decides, as for everything else)."""
        chain = self.chain(names)
        return "worktree" if any(p.fork_isolation == "worktree" for p in chain) else "none"

    def is_yolo(self, names: Sequence[str] | None) -> bool:
        """Does the chain allow everything (shown loudly): every policy of it
        is a yolo one, since any other narrows it."""
        return all(p.yolo for p in self.chain(names))
