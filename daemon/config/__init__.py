"""The daemon's configuration: config.json read, checked and turned into the
objects the daemon runs with. One module per section of the file:

- ``_load``: the file as a whole, top-level keys, ``providers.NAME.*``, the
  model catalog built from them, ``tools.*`` (environment, policy);
- ``context``: ``context.*`` (compact_at, keep...) and per-model limits;
- ``mcp``: ``mcp.servers.*``;
- ``policy``: ``policy`` / ``policies.*`` (permissions);
- ``stream``: ``stream.*`` (subscriber buffers).

docs/configuration.md documents every key.
"""

from daemon.config._load import (
    Config,
    ConfigError,
    ContextConfig,
    EnvSettings,
    ModelLimitsConfig,
    PolicyConfig,
    ProviderConfig,
    ToolsEnv,
    ToolsPolicy,
    build_catalog,
    build_permissions,
    load_config,
    model_text,
    parse_config,
    settings_factory,
    text_fault,
    tool_env,
    undecodable_field,
)

__all__ = [
    "Config",
    "ConfigError",
    "ContextConfig",
    "EnvSettings",
    "ModelLimitsConfig",
    "PolicyConfig",
    "ProviderConfig",
    "ToolsEnv",
    "ToolsPolicy",
    "build_catalog",
    "build_permissions",
    "load_config",
    "model_text",
    "parse_config",
    "settings_factory",
    "text_fault",
    "tool_env",
    "undecodable_field",
]
