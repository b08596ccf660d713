"""The daemon's configuration: config.json read, checked and turned into the
objects the daemon runs with. Where each key of the file lives:

- ``file``: the file as a whole and its top-level keys (default_model,
  max_output_tokens, fallback_models, tool_folders, log_level...: the Config
  struct); load_config and parse_config, which check every section;
- ``providers``: ``providers.NAME.*`` (base_url, api, key_env, dialect,
  default_model, timeouts, custom providers, the limiter's max_concurrent
  and rates); the catalog built from them
  (build_catalog), the providers' settings and the model text of a request;
- ``context``: ``context.*`` (compact_at, summary_model, tool_result_share)
  and per-model limits ``providers.NAME.models.MODEL.*``;
- ``tools``: ``tools.*`` (enabled, disabled, env, env.per_tool) and the
  environment tools get (tool_env);
- ``mcp``: ``mcp_servers.*``;
- ``policy``: ``policy`` / ``policies.*`` (permissions);
- ``stream``: ``stream.*`` (subscriber buffers);
- ``budget``: ``budget.*`` (the daemon's daily spend, the default root
  budget); ``daily_limits`` turns them and ``providers.NAME.daily_budget_usd``
  into what the agents check;
- ``cluster``: ``cluster.*`` (the daemon's id, lease, heartbeat, labels,
  drain) among daemons sharing one PostgreSQL database;
- ``traces``: ``traces.*`` (OpenTelemetry traces and metrics: enabled,
  endpoint, content, service_name) and the ``OTEL_*`` variables;
- ``_messages``: msgspec's errors as messages naming the file and the field.

docs/configuration.md documents every key.
"""

from daemon.config._messages import ConfigError
from daemon.config.budget import BudgetConfig, daily_limits
from daemon.config.context import ContextConfig, ModelLimitsConfig
from daemon.config.file import Config, build_permissions, load_config, parse_config
from daemon.config.policy import PolicyConfig
from daemon.config.providers import (
    ProviderConfig,
    build_catalog,
    limiter_configs,
    model_text,
    settings_factory,
)
from daemon.config.tools import EnvSettings, ToolsEnv, ToolsPolicy, tool_env
from protocol.jsontext import text_fault, undecodable_field

__all__ = [
    "BudgetConfig",
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
    "daily_limits",
    "limiter_configs",
    "load_config",
    "model_text",
    "parse_config",
    "settings_factory",
    "text_fault",
    "tool_env",
    "undecodable_field",
]
