"""``tools.*`` of config.json: which tools agents get (``tools.enabled``,
``tools.disabled``) and the environment their processes get beyond the
allowlist (``tools.env``, ``tools.env.per_tool.TOOL``), checked beyond their
types, and the ToolEnv the daemon hands the tools (tool_env). The tool
folders (``tool_folders``) are a top-level key, in file.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import msgspec

from agents.tools import EnvRule, ToolEnv, is_env_name, provider_key_names
from daemon.config._messages import ConfigError, convert, type_words
from daemon.config.providers import HasProviders, build_catalog
from protocol.jsontext import json_kind
from providers.catalog import Catalog

__all__ = [
    "EnvSettings",
    "ToolsEnv",
    "ToolsPolicy",
    "check_tools_env",
    "key_names",
    "tool_env",
    "tools_env_one_by_one",
]

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class EnvSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Environment variables tools get beyond the allowlist: ``pass`` names are
    copied from the daemon's environment (when set there), ``set`` are set as
    given."""

    pass_: list[str] = msgspec.field(default_factory=list, name="pass")
    set: dict[str, str] = msgspec.field(default_factory=dict)


class ToolsEnv(EnvSettings, frozen=True, kw_only=True):
    """``tools.env``: for every tool, and ``per_tool`` for one tool by name."""

    per_tool: dict[str, EnvSettings] = msgspec.field(default_factory=dict)


class ToolsPolicy(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which tools agents get: ``enabled`` null means every tool; a list means
    only those. ``disabled`` is taken away either way. ``env``: what their
    processes get beyond the allowlist."""

    enabled: list[str] | None = None
    disabled: list[str] = msgspec.field(default_factory=list)
    env: ToolsEnv = msgspec.field(default_factory=ToolsEnv)

    def allows(self, name: str) -> bool:
        if name in self.disabled:
            return False
        return self.enabled is None or name in self.enabled


class HasTools(HasProviders, Protocol):
    """What of a Config tool_env reads (file.py's Config imports this module)."""

    @property
    def tools(self) -> ToolsPolicy: ...


def tools_env_one_by_one(data: dict[str, Any], where: str) -> dict[str, Any]:
    """tools.env with its per_tool entries converted one by one, so a message
    can name the tool and the variable (msgspec writes "[...]" for a dict key)."""
    tools = data.get("tools")
    if not isinstance(tools, dict) or not isinstance(tools.get("env"), dict):
        return data
    env = tools["env"]
    _check_set_values(env, where, "tools.env")
    per_tool = env.get("per_tool")
    if not isinstance(per_tool, dict):
        return data
    converted: dict[str, EnvSettings] = {}
    for name, value in per_tool.items():
        prefix = f"tools.env.per_tool.{name}"
        if isinstance(value, dict):
            _check_set_values(value, where, prefix)
        converted[name] = convert(value, EnvSettings, where, prefix)
    return {**data, "tools": {**tools, "env": {**env, "per_tool": converted}}}


def _check_set_values(rule: dict[str, Any], where: str, prefix: str) -> None:
    values = rule.get("set")
    if not isinstance(values, dict):
        return
    for name, value in values.items():
        if not isinstance(value, str):
            got = type_words(json_kind(value))
            raise ConfigError(f"{where}: {prefix}.set.{name}: Expected str, got {got}")


def key_names(catalog: Catalog) -> frozenset[str]:
    """Every provider key variable: the shipped catalog's and the config's."""
    return provider_key_names() | {v for p in catalog.providers.values() for v in p.key_env}


def check_tools_env(env: ToolsEnv, keys: frozenset[str], where: str) -> None:
    """What the types cannot say of ``tools.env``: tool and variable names, and
    that no provider key (``keys``) nor ikigai's own variable is handed out."""
    rules: list[tuple[str, EnvSettings]] = [("tools.env", env)]
    for tool, rule in env.per_tool.items():
        if not _TOOL_NAME.fullmatch(tool):
            raise ConfigError(
                f"{where}: tools.env.per_tool.{tool}: a tool name is 1-64 letters, digits, "
                "'_' or '-'"
            )
        rules.append((f"tools.env.per_tool.{tool}", rule))
    for prefix, rule in rules:
        for i, name in enumerate(rule.pass_):
            _check_env_name(name, keys, f"{where}: {prefix}.pass[{i}]")
        for name, value in rule.set.items():
            at = f"{where}: {prefix}.set.{name}"
            _check_env_name(name, keys, at)
            if "\0" in value:
                raise ConfigError(f"{at}: a value may not hold a NUL character")


def _check_env_name(name: str, keys: frozenset[str], at: str) -> None:
    if not is_env_name(name):
        raise ConfigError(
            f"{at}: {name!r} is not a variable name (letters, digits and '_', "
            "not starting with a digit)"
        )
    if name in keys:
        raise ConfigError(f"{at}: {name} holds a provider's API key; tools never get it")
    if name.startswith("IKIGAI_"):
        raise ConfigError(f"{at}: {name} is one of ikigai's own variables; tools never get it")


def tool_env(
    config: HasTools,
    env: Mapping[str, str] | None = None,
    secrets: Callable[[], Iterable[str]] = tuple,
    catalog: Catalog | None = None,
) -> ToolEnv:
    """How tool processes get their environment: the allowlist of ``env`` (the
    daemon's; os.environ when None) plus the config's ``tools.env``, never a
    provider key variable (the catalog's and the config's) nor a value among
    ``secrets()`` (the configured keys, asked at every process start)."""
    catalog = catalog if catalog is not None else build_catalog(config)
    e = config.tools.env
    return ToolEnv(
        rule=EnvRule(passed=tuple(e.pass_), values=dict(e.set)),
        per_tool={
            name: EnvRule(passed=tuple(r.pass_), values=dict(r.set))
            for name, r in e.per_tool.items()
        },
        key_names=key_names(catalog),
        secrets=secrets,
        source=env,
    )
