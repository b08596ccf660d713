"""config.json as a whole: its top-level keys (the Config struct), reading
the file and checking it section by section (load_config, parse_config).

A missing file means the defaults. A file that cannot be used is refused
with ConfigError naming the file and the field at fault, e.g.::

    /home/me/.config/ikigai/config.json: providers.openai.read_timeout: Expected number, got str

Every key is documented in docs/configuration.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from agents.permissions import Permissions
from daemon.config._messages import ConfigError, convert, type_words
from daemon.config.budget import BudgetConfig
from daemon.config.cluster import ClusterConfig, cluster_fault
from daemon.config.context import ContextConfig, context_fault
from daemon.config.mcp import McpServerConfig, mcp_servers_one_by_one
from daemon.config.policy import PolicyConfig, policy_fault
from daemon.config.policy import build_permissions as _build_permissions
from daemon.config.providers import (
    ProviderConfig,
    build_catalog,
    check_model,
    check_providers,
    providers_one_by_one,
)
from daemon.config.stream import StreamConfig
from daemon.config.tools import ToolsPolicy, check_tools_env, key_names, tools_env_one_by_one
from daemon.config.traces import TracesConfig, traces_fault
from protocol.jsontext import json_kind, text_fault, undecodable_field

__all__ = ["Config", "build_permissions", "load_config", "parse_config"]

ThinkingLevel = Literal["none", "low", "med", "high"]
LogLevel = Literal["debug", "info", "warning", "error"]
Positive = Annotated[float, Meta(gt=0)]
NonNegative = Annotated[float, Meta(ge=0)]
PositiveInt = Annotated[int, Meta(ge=1)]
NonNegativeInt = Annotated[int, Meta(ge=0)]


class Config(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    default_model: str = "claude-sonnet-4-5"
    default_thinking: ThinkingLevel = "none"
    providers: dict[str, ProviderConfig] = msgspec.field(default_factory=dict)
    max_output_tokens: PositiveInt = 4096
    max_tool_turns: NonNegativeInt = 50
    tool_folders: list[str] = msgspec.field(default_factory=list)  # ~ expanded on load
    tools: ToolsPolicy = msgspec.field(default_factory=ToolsPolicy)
    fallback_models: list[str] = msgspec.field(default_factory=list)
    autostart: bool = True  # read by ikictl (protocol.paths.read_autostart)
    database_url: str | None = None  # IKIGAI_DB_URL wins
    log_level: LogLevel = "info"
    shutdown_grace: NonNegative = 10.0  # seconds
    # each connection may hold 16 lines of this in its backlog: bounded, so memory is
    max_line_bytes: Annotated[int, Meta(ge=1024, le=64 << 20)] = 1 << 20
    policy: str = "default"  # the policy of agents created without one
    policies: dict[str, PolicyConfig] = msgspec.field(default_factory=dict)
    approval_timeout: Positive | None = None  # seconds; null: an approval waits forever
    context: ContextConfig = msgspec.field(default_factory=ContextConfig)
    mcp_servers: dict[str, McpServerConfig] = msgspec.field(default_factory=dict)
    stream: StreamConfig = msgspec.field(default_factory=StreamConfig)
    budget: BudgetConfig = msgspec.field(default_factory=BudgetConfig)
    cluster: ClusterConfig = msgspec.field(default_factory=ClusterConfig)
    traces: TracesConfig = msgspec.field(default_factory=TracesConfig)
    # false: no provider limiter at all (the benchmarks' baseline); read at start
    provider_limiter: bool = True

    @property
    def tool_folder_paths(self) -> list[Path]:
        return [Path(p) for p in self.tool_folders]


def load_config(path: Path) -> Config:
    """Read and check ``path``; a missing (or empty) file gives the defaults."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder, not a file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it: {e.strerror or e}") from None
    return parse_config(raw, path)


def parse_config(raw: bytes | str, path: Path | str = "config.json") -> Config:
    """Check the text of a config file; ``path`` is only used in messages
    and to resolve relative tool folders."""
    where = str(path)
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            field = undecodable_field(raw)
            at = f"{where}: {field}" if field else where
            raise ConfigError(f"{at}: not UTF-8 text (byte {e.start})") from None
    if not raw.strip():
        return Config()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{where}: line {e.lineno} column {e.colno}: not valid JSON: {e.msg}"
        ) from None
    except RecursionError:
        raise ConfigError(f"{where}: not valid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: expected a JSON object at the top, got {type_words(json_kind(data))}"
        )
    fault = text_fault(data)
    if fault is not None:
        raise ConfigError(f"{where}: {fault}")
    # the sections keyed by name are converted entry by entry, so a message
    # can name the entry (msgspec writes "[...]" for a dict key)
    data = tools_env_one_by_one(data, where)
    data = providers_one_by_one(data, where)
    policies_raw = data.get("policies", {})
    if isinstance(policies_raw, dict):
        data = {
            **data,
            "policies": {
                name: convert(value, PolicyConfig, where, f"policies.{name}")
                for name, value in policies_raw.items()
            },
        }
    data = mcp_servers_one_by_one(data, where, Path(path).parent, convert, ConfigError)
    config = convert(data, Config, where, "")
    config = msgspec.structs.replace(
        config, tool_folders=[_expand(p, Path(path).parent) for p in config.tool_folders]
    )
    _check(config, where)
    return config


def _expand(folder: str, base: Path) -> str:
    p = Path(os.path.expanduser(folder))
    return str(p if p.is_absolute() else base / p)


def _check(config: Config, where: str) -> None:
    """What the types cannot say, section by section, in the catalog the
    config makes (custom providers and their models are known to it)."""
    catalog = build_catalog(config)
    check_providers(config.providers, catalog, where)
    check_model(config.default_model, catalog, f"{where}: default_model")
    for i, text in enumerate(config.fallback_models):
        check_model(text, catalog, f"{where}: fallback_models[{i}]")
    check_tools_env(config.tools.env, key_names(catalog), where)
    fault = (
        policy_fault(config.policies, config.policy)
        or context_fault(
            config.context, config.providers, catalog, max_output_tokens=config.max_output_tokens
        )
        or cluster_fault(config.cluster)
        or traces_fault(config.traces)
    )
    if fault is not None:
        raise ConfigError(f"{where}: {fault}")


def build_permissions(config: Config, *, sandbox_available: bool) -> Permissions:
    """The built-in policies and the config's, with the configured default."""
    return _build_permissions(config.policies, config.policy, sandbox_available=sandbox_available)
