"""Branch names: git's rules (git check-ref-format --branch), checked here so
that a bad name is refused by name before anything runs, and the default
branch name made from an agent's name."""

from __future__ import annotations

import re

PREFIX = "ikigai/"  # default branches: ikigai/<agent name>
MAX_BRANCH = 250
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
_SLUG_BAD = re.compile(r"[^A-Za-z0-9._-]+")


def branch_problem(name: str) -> str | None:
    """Why ``name`` cannot be a branch, or None. git's rules for
    refs/heads/<name> (git-check-ref-format(1)), and no leading '-'."""
    if not name:
        return "it is empty"
    if len(name) > MAX_BRANCH:
        return f"it is longer than {MAX_BRANCH} characters"
    if name.startswith("-"):
        return "it starts with '-'"
    if name == "@" or name == "HEAD":
        return f"{name!r} is reserved by git"
    if m := _BAD_CHARS.search(name):
        return f"it contains {m.group()!r} (no spaces, control characters or ~^:?*[\\)"
    if "@{" in name:
        return "it contains '@{'"
    if ".." in name:
        return "it contains '..'"
    if name.startswith("/") or name.endswith("/") or "//" in name:
        return "it has an empty part between slashes"
    if name.endswith("."):
        return "it ends with '.'"
    for part in name.split("/"):
        if part.startswith("."):
            return f"a part starts with '.' ({part!r})"
        if part.endswith(".lock"):
            return f"a part ends with '.lock' ({part!r})"
    return None


def slug(name: str) -> str:
    """A folder and branch name made of an agent name: runs of other
    characters become '-'; never empty, never a dot name."""
    text = _SLUG_BAD.sub("-", name).strip("-.")
    text = re.sub(r"\.{2,}", ".", text)
    text = re.sub(r"(\.lock)+$", "", text).strip("-.")
    text = text[:100].strip("-.") or "agent"
    return f"agent-{text}" if text == "HEAD" else text


def default_branch(agent_name: str) -> str:
    return PREFIX + slug(agent_name)
