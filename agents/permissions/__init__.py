"""Tool permissions: the policy vocabulary (``_types``) and the pure rule
matching over an agent's policy chain (``_policy``). See
docs/configuration.md, "Tool permissions"."""

from ._policy import (
    AGENT_TOOLS,
    BUILTIN_POLICIES,
    DEFAULT_POLICY,
    IN_PROCESS_TOOLS,
    PATH_TOOLS,
    UNREADABLE,
    YOLO_POLICY,
    Permissions,
    decide,
    dump_chain,
    parse_chain,
    path_place,
)
from ._types import SEVERITY, Action, Decision, Policy, Remember, Rule, Sandbox

__all__ = [
    "AGENT_TOOLS",
    "BUILTIN_POLICIES",
    "DEFAULT_POLICY",
    "IN_PROCESS_TOOLS",
    "PATH_TOOLS",
    "SEVERITY",
    "UNREADABLE",
    "YOLO_POLICY",
    "Action",
    "Decision",
    "Permissions",
    "Policy",
    "Remember",
    "Rule",
    "Sandbox",
    "decide",
    "dump_chain",
    "parse_chain",
    "path_place",
]
