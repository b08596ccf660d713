"""The ``policy``, ``policies`` part of config.json: named tool-permission
policies, checked beyond their types (names, which rules can ever match), and
the Permissions the daemon builds from them. file.py owns the file; this is
its policy section, kept apart so each stays small."""

from __future__ import annotations

import fnmatch
import re
from typing import Literal

import msgspec

from agents.permissions import BUILTIN_POLICIES, PATH_TOOLS, Permissions, Policy, Rule

__all__ = ["PolicyConfig", "RuleConfig", "build_permissions", "policy_fault"]


class RuleConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One rule of a policy: the first rule matching a call decides it."""

    tool: str
    action: Literal["allow", "ask", "deny"]
    command: str | None = None  # bash only: a glob the whole command must match
    path: Literal["inside", "outside"] | None = None  # tools with a path argument


class PolicyConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A named tool-permission policy (``policies.NAME``)."""

    rules: list[RuleConfig] = msgspec.field(default_factory=list)
    sandbox: Literal["none", "workdir", "strict"] = "workdir"
    network: bool = False
    yolo: bool = False  # allow everything: no rules, shown loudly by ls/show
    # "worktree": every fork of an agent under this policy whose cwd is in a
    # git repository gets a worktree of its own (agent.fork {worktree})
    fork_isolation: Literal["none", "worktree"] = "none"


_POLICY_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def policy_fault(policies: dict[str, PolicyConfig], default: str) -> str | None:
    """What is wrong with the policies and the default name, as
    ``FIELD: why``; None when nothing is."""
    for name, pc in policies.items():
        at = f"policies.{name}"
        if name in BUILTIN_POLICIES:
            return (
                f"{at}: {name!r} is a built-in policy; give yours another name "
                '(and set "policy" to it to make it the default)'
            )
        if not _POLICY_NAME.fullmatch(name):
            return f"{at}: a policy name is 1-64 letters, digits, '_', '-' or '.'"
        if pc.yolo and pc.rules:
            return f"{at}.rules: a yolo policy allows everything; it takes no rules"
        for i, rule in enumerate(pc.rules):
            fault = _rule_fault(rule, f"{at}.rules[{i}]")
            if fault is not None:
                return fault
    known = sorted({*BUILTIN_POLICIES, *policies})
    if default not in known:
        return f"policy: no policy is named {default!r} (known: {', '.join(known)})"
    return None


def _rule_fault(rule: RuleConfig, at: str) -> str | None:
    # a rule that can never match is a mistake the user wants to hear about
    if not rule.tool or len(rule.tool) > 256 or "\0" in rule.tool:
        return f"{at}.tool: a tool name or glob of 1-256 characters"
    if rule.command is not None:
        if not rule.command or "\0" in rule.command:
            return f"{at}.command: a glob the whole bash command must match"
        if not fnmatch.fnmatchcase("bash", rule.tool):
            return (
                f"{at}.command: only bash calls have a command, and tool {rule.tool!r} "
                "does not match bash"
            )
    if rule.path is not None and not any(fnmatch.fnmatchcase(t, rule.tool) for t in PATH_TOOLS):
        return (
            f"{at}.path: tool {rule.tool!r} matches no tool with a path argument "
            f"({', '.join(PATH_TOOLS)})"
        )
    return None


def build_permissions(
    policies: dict[str, PolicyConfig], default: str, *, sandbox_available: bool
) -> Permissions:
    """The built-in policies and the config's, with the configured default."""
    return Permissions(
        [
            Policy(
                name=name,
                rules=tuple(Rule(r.tool, r.action, r.command, r.path) for r in pc.rules),
                sandbox=pc.sandbox,
                network=pc.network,
                yolo=pc.yolo,
                fork_isolation=pc.fork_isolation,
            )
            for name, pc in policies.items()
        ],
        default=default,
        sandbox_available=sandbox_available,
    )
