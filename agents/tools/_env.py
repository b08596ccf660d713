"""The environment a tool's process gets: built from an allowlist, never a copy
of the daemon's.

The daemon's environment holds the providers' API keys (OPENAI_API_KEY...) and
ikigai's own settings; a tool that could print them would send them to the
provider and store them in history. So a tool process gets only what a shell
command legitimately needs (PATH, HOME, locale, terminal, temporary and XDG
folders), plus what the user's config passes through or sets, plus what the
tool itself adds (IKIGAI_AGENT_UUID). Then, whatever the source:

- a provider's key variable (from the catalog and the config) is dropped;
- IKIGAI_* variables of the daemon are dropped;
- a value that holds a configured key, under any name, is dropped.

Names that look secret (*_KEY, *_TOKEN, *PASSWORD*...) never come through the
allowlist; a config ``pass`` may name one on purpose (e.g. WEATHER_API_KEY for
the one tool that needs it): that is the user's decision, so it is kept.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from providers.catalog import default_catalog

__all__ = ["EnvRule", "ToolEnv", "is_env_name", "provider_key_names"]

# What a shell command needs to behave as in the user's terminal.
SAFE_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "TZ",
        "TMPDIR",
        "TMP",
        "TEMP",
        "HOSTNAME",
        "EDITOR",
        "VISUAL",
        "PAGER",
    }
)
SAFE_PREFIXES = ("LC_", "XDG_")

# A name that says its value is a secret; such a name never comes through the allowlist.
_SECRET_NAME = re.compile(
    r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|PRIVATE)"
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OUR_PREFIX = "IKIGAI_"
# Shorter "keys" would drop ordinary values (the same floor as the log redactor).
MIN_SECRET = 8


def is_env_name(name: str) -> bool:
    """A name a process environment can hold and a shell can expand."""
    return _ENV_NAME.fullmatch(name) is not None


def looks_secret(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


@functools.cache
def provider_key_names() -> frozenset[str]:
    """Every key variable of the shipped catalog's providers."""
    return frozenset(v for p in default_catalog().providers.values() for v in p.key_env)


def _no_secrets() -> Iterable[str]:
    return ()


@dataclass(frozen=True)
class EnvRule:
    """What the config adds: ``passed`` names are copied from the daemon's
    environment when set there; ``values`` are set as given."""

    passed: tuple[str, ...] = ()
    values: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolEnv:
    """How to build the environment of a tool's process.

    ``rule`` applies to every tool, ``per_tool`` to the tool of that name (after
    ``rule``). ``key_names`` are the providers' key variables beyond the shipped
    catalog's (the config's custom providers). ``secrets`` returns the configured
    key values now (it is called per process: a reload may change them).
    ``source`` is the daemon's environment (``os.environ`` when None).
    """

    rule: EnvRule = field(default_factory=EnvRule)
    per_tool: Mapping[str, EnvRule] = field(default_factory=dict)
    key_names: frozenset[str] = frozenset()
    secrets: Callable[[], Iterable[str]] = _no_secrets
    source: Mapping[str, str] | None = None

    def build(self, tool: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for one process of ``tool``; ``extra`` is what the
        tool itself sets (IKIGAI_AGENT_UUID, the agent's extra variables)."""
        source = os.environ if self.source is None else self.source
        blocked = provider_key_names() | self.key_names
        env: dict[str, str] = {}
        for name, value in source.items():
            if (name in SAFE_NAMES or name.startswith(SAFE_PREFIXES)) and not looks_secret(name):
                env[name] = value
        rules = [self.rule]
        if tool in self.per_tool:
            rules.append(self.per_tool[tool])
        for rule in rules:
            for name in rule.passed:
                if name in source:
                    env[name] = source[name]
        # the daemon's own settings stay with it; what the tool sets (extra) may be ours
        env = {n: v for n, v in env.items() if not n.startswith(OUR_PREFIX)}
        for rule in rules:
            env.update(rule.values)
        env.update(extra or {})
        return self._without_secrets({n: v for n, v in env.items() if n not in blocked})

    def _without_secrets(self, env: dict[str, str]) -> dict[str, str]:
        keys = [k for k in dict.fromkeys(self.secrets()) if k and len(k) >= MIN_SECRET]
        if not keys:
            return env
        return {n: v for n, v in env.items() if not any(k in v for k in keys)}
