"""config.json: the daemon's settings, validated with msgspec.

A missing file means the defaults. A file that cannot be used is refused
with ConfigError naming the file and the field at fault, e.g.::

    /home/me/.config/ikigai/config.json: providers.openai.read_timeout: Expected number, got str

Every key is documented in docs/configuration.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from agents.permissions import Permissions
from agents.tools import EnvRule, ToolEnv, is_env_name, provider_key_names
from daemon.config.context import ContextConfig, ModelLimitsConfig, apply_limits, context_fault
from daemon.config.mcp import McpServerConfig, mcp_servers_one_by_one
from daemon.config.policy import PolicyConfig, policy_fault
from daemon.config.policy import build_permissions as _build_permissions
from daemon.config.stream import StreamConfig
from protocol.jsontext import json_kind as _json_kind
from protocol.jsontext import text_fault, undecodable_field
from providers.catalog import Catalog, ProviderEntry, WireApi, default_catalog, load_catalog
from providers.modelspec import ModelSpecError, parse_model_spec
from providers.openai import DIALECT_FLAGS, compatible_provider
from providers.secrets import register_secret
from providers.settings import ProviderSettings, settings_for
from providers.types import THINKING_LEVELS

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

ThinkingLevel = Literal["none", "low", "med", "high"]
LogLevel = Literal["debug", "info", "warning", "error"]
Positive = Annotated[float, Meta(gt=0)]
NonNegative = Annotated[float, Meta(ge=0)]
PositiveInt = Annotated[int, Meta(ge=1)]
NonNegativeInt = Annotated[int, Meta(ge=0)]

# the choices of each Literal field, for a readable "must be one of" message
_CHOICES: dict[str, tuple[str, ...]] = {
    "api": ("chat", "responses", "messages", "generate_content"),
    "default_thinking": ("none", "low", "med", "high"),
    "log_level": ("debug", "info", "warning", "error"),
    "action": ("allow", "ask", "deny"),
    "path": ("inside", "outside"),
    "sandbox": ("none", "workdir", "strict"),
    "start": ("lazy", "eager"),
    "mode": ("legacy", "auto"),
}


class ConfigError(ValueError):
    """config.json cannot be used: the message names the file and the field."""


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class ProviderConfig(_Strict):
    """Settings of one provider: overrides of a catalog provider, or a custom
    service on any wire API (a name not in the catalog). ``api`` on a catalog
    provider pins every one of its models to that API."""

    base_url: str | None = None
    api: WireApi | None = None
    # UNSET: the catalog's variables; null or []: the service takes no key
    key_env: str | list[str] | UnsetType | None = UNSET
    default_model: str | None = None  # used when a model text names only this provider
    extra_headers: dict[str, str] = msgspec.field(default_factory=dict)
    connect_timeout: Positive | UnsetType = UNSET
    read_timeout: Positive | UnsetType = UNSET
    max_retries: NonNegativeInt | UnsetType = UNSET
    dialect: list[str] | UnsetType = UNSET
    models: dict[str, ModelLimitsConfig] = msgspec.field(default_factory=dict)

    @property
    def key_env_list(self) -> list[str] | None:
        """The key variables as a list; None when not set (keep the catalog's)."""
        if self.key_env is UNSET:
            return None
        if self.key_env is None:
            return []
        return [self.key_env] if isinstance(self.key_env, str) else list(self.key_env)


class EnvSettings(_Strict):
    """Environment variables tools get beyond the allowlist: ``pass`` names are
    copied from the daemon's environment (when set there), ``set`` are set as
    given."""

    pass_: list[str] = msgspec.field(default_factory=list, name="pass")
    set: dict[str, str] = msgspec.field(default_factory=dict)


class ToolsEnv(EnvSettings):
    """``tools.env``: for every tool, and ``per_tool`` for one tool by name."""

    per_tool: dict[str, EnvSettings] = msgspec.field(default_factory=dict)


class ToolsPolicy(_Strict):
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


class Config(_Strict):
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

    @property
    def tool_folder_paths(self) -> list[Path]:
        return [Path(p) for p in self.tool_folders]


# ------------------------------------------------------------------ loading


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
            f"{where}: expected a JSON object at the top, got {_type_words(_json_kind(data))}"
        )
    fault = text_fault(data)
    if fault is not None:
        raise ConfigError(f"{where}: {fault}")
    data = _tools_env_one_by_one(data, where)

    # Providers one by one, so a message can name the provider (msgspec writes
    # "[...]" for a dict key).
    providers_raw = data.get("providers", {})
    if isinstance(providers_raw, dict):
        providers: dict[str, ProviderConfig] = {}
        for name, value in providers_raw.items():
            prefix = f"providers.{name}"
            if isinstance(value, dict) and isinstance(value.get("extra_headers"), dict):
                for h, hv in value["extra_headers"].items():
                    if not isinstance(hv, str):
                        got = _type_words(_json_kind(hv))
                        raise ConfigError(
                            f"{where}: {prefix}.extra_headers.{h}: Expected str, got {got}"
                        )
            if isinstance(value, dict) and isinstance(value.get("models"), dict):
                models = {  # model by model, so a message names the model
                    m: _convert(v, ModelLimitsConfig, where, f"{prefix}.models.{m}")
                    for m, v in value["models"].items()
                }
                value = {**value, "models": models}
            providers[name] = _convert(value, ProviderConfig, where, prefix)
        data = {**data, "providers": providers}
    # policies one by one too, so a message names the policy
    policies_raw = data.get("policies", {})
    if isinstance(policies_raw, dict):
        data = {
            **data,
            "policies": {
                name: _convert(value, PolicyConfig, where, f"policies.{name}")
                for name, value in policies_raw.items()
            },
        }
    data = mcp_servers_one_by_one(data, where, Path(path).parent, _convert, ConfigError)
    config = _convert(data, Config, where, "")
    config = msgspec.structs.replace(
        config, tool_folders=[_expand(p, Path(path).parent) for p in config.tool_folders]
    )
    _check(config, where)
    return config


def _tools_env_one_by_one(data: dict[str, Any], where: str) -> dict[str, Any]:
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
        converted[name] = _convert(value, EnvSettings, where, prefix)
    return {**data, "tools": {**tools, "env": {**env, "per_tool": converted}}}


def _check_set_values(rule: dict[str, Any], where: str, prefix: str) -> None:
    values = rule.get("set")
    if not isinstance(values, dict):
        return
    for name, value in values.items():
        if not isinstance(value, str):
            got = _type_words(_json_kind(value))
            raise ConfigError(f"{where}: {prefix}.set.{name}: Expected str, got {got}")


# ------------------------------------------------------------------ text


def _expand(folder: str, base: Path) -> str:
    p = Path(os.path.expanduser(folder))
    return str(p if p.is_absolute() else base / p)


_PATH_PART = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_TICKED = re.compile(r"`([^`]*)`")
_TYPE_WORDS = {"float": "number", "int": "integer", "array": "list", "object": "object"}


def _convert(value: Any, type_: type[Any], where: str, prefix: str) -> Any:
    try:
        return msgspec.convert(value, type=type_)
    except msgspec.ValidationError as e:
        raise ConfigError(_message(str(e), where, prefix, type_)) from None


def _message(text: str, where: str, prefix: str, type_: type[Any]) -> str:
    """msgspec's 'Expected `float`, got `str` - at `$.read_timeout`' as
    'FILE: PREFIX.read_timeout: Expected number, got str'."""
    m = _PATH_PART.search(text)
    sub = ""
    if m:
        sub = m.group("path").lstrip(".")
        text = text[: m.start()]
    field = ".".join(p for p in (prefix, sub) if p)
    unknown = re.fullmatch(r"Object contains unknown field `([^`]*)`", text)
    if unknown:
        key = unknown.group(1)
        full = ".".join(p for p in (field, key) if p)
        known = _known_fields(type_, sub)
        hint = f" (known keys: {', '.join(known)})" if known else ""
        return f"{where}: {full}: unknown key{hint}"
    enum = re.fullmatch(r"Invalid enum value (.*)", text)
    last = field.rsplit(".", 1)[-1]
    if enum and last in _CHOICES:
        text = f"must be one of {', '.join(_CHOICES[last])}, not {enum.group(1)[:80]}"
    else:
        text = _TICKED.sub(lambda t: _type_words(t.group(1)), text)
    return f"{where}: {field}: {text}" if field else f"{where}: {text}"


def _type_words(types: str) -> str:
    return " | ".join(_TYPE_WORDS.get(t.strip(), t.strip()) for t in types.split("|"))


def _known_fields(type_: type[Any], sub: str) -> list[str]:
    """The field names of the struct at ``sub`` (a msgspec path below ``type_``)."""
    t: Any = type_
    for part in filter(None, sub.split(".")):
        name, _, index = part.partition("[")
        hints = msgspec.structs.fields(t) if isinstance(t, type) else ()
        nxt = next((f.type for f in hints if f.encode_name == name), None)
        if index and typing.get_origin(nxt) is dict:
            nxt = typing.get_args(nxt)[1]  # "per_tool[...]": an entry of the dict
        elif index and typing.get_origin(nxt) is list:
            nxt = typing.get_args(nxt)[0]  # "rules[0]": an item of the list
        if not (isinstance(nxt, type) and issubclass(nxt, msgspec.Struct)):
            return []
        t = nxt
    if isinstance(t, type) and issubclass(t, msgspec.Struct):
        return list(t.__struct_encode_fields__)
    return []


# ------------------------------------------------------------------ meaning


def _check(config: Config, where: str) -> None:
    """What the types cannot say: custom providers, dialect flags, model texts."""
    base = default_catalog()  # only read: which names are catalog providers
    for name, pc in config.providers.items():
        at = f"{where}: providers.{name}"
        if not name or "/" in name:
            raise ConfigError(f"{at}: a provider name must be non-empty and contain no '/'")
        if pc.base_url is not None and not pc.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{at}.base_url: must start with http:// or https://")
        if pc.dialect is not UNSET:
            unknown = sorted(set(pc.dialect) - DIALECT_FLAGS)
            if unknown:
                raise ConfigError(
                    f"{at}.dialect: unknown flag(s) {', '.join(unknown)} "
                    f"(known: {', '.join(sorted(DIALECT_FLAGS))})"
                )
        if name not in base.providers and (pc.base_url is None or pc.api is None):
            raise ConfigError(
                f"{at}: {name!r} is not a catalog provider, so it needs base_url and "
                f"api ({', '.join(_CHOICES['api'])}) to be a custom one "
                f"(catalog providers: {', '.join(base.providers)})"
            )
    catalog = build_catalog(config)
    for name, pc in config.providers.items():
        if pc.default_model is not None:
            _check_model(
                f"{name}/{pc.default_model}", catalog, f"{where}: providers.{name}.default_model"
            )
    _check_model(config.default_model, catalog, f"{where}: default_model")
    for i, text in enumerate(config.fallback_models):
        _check_model(text, catalog, f"{where}: fallback_models[{i}]")
    _check_tools_env(config.tools.env, _key_names(catalog), where)
    fault = policy_fault(config.policies, config.policy) or context_fault(
        config.context, config.providers, catalog
    )
    if fault is not None:
        raise ConfigError(f"{where}: {fault}")


def build_permissions(config: Config, *, sandbox_available: bool) -> Permissions:
    """The built-in policies and the config's, with the configured default."""
    return _build_permissions(config.policies, config.policy, sandbox_available=sandbox_available)


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _key_names(catalog: Catalog) -> frozenset[str]:
    """Every provider key variable: the shipped catalog's and the config's."""
    return provider_key_names() | {v for p in catalog.providers.values() for v in p.key_env}


def _check_tools_env(env: ToolsEnv, keys: frozenset[str], where: str) -> None:
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


def _check_model(text: str, catalog: Catalog, at: str) -> None:
    try:
        parse_model_spec(text, catalog)
    except ModelSpecError as e:
        raise ConfigError(f"{at}: {e}") from None


def build_catalog(config: Config) -> Catalog:
    """A fresh catalog (never the cached default one) with the config's
    provider overrides applied and its custom providers added."""
    catalog = load_catalog()
    for name, pc in config.providers.items():
        entry = catalog.providers.get(name)
        if entry is None:
            catalog.add_provider(_custom_provider(name, pc))
            continue
        changes: dict[str, Any] = {}
        if pc.base_url is not None:
            changes["base_url"] = pc.base_url.rstrip("/")
        if pc.key_env_list is not None:
            changes["key_env"] = pc.key_env_list
        if pc.dialect is not UNSET:
            changes["dialect"] = list(dict.fromkeys(pc.dialect))
        if changes:
            catalog.add_provider(msgspec.structs.replace(entry, **changes))
        if pc.api is not None:
            # a pin wins over the catalog's per-model choice (gpt-5 is "responses")
            catalog.pin_api(name, pc.api)
    for name, pc in config.providers.items():
        if pc.default_model is not None:
            with contextlib.suppress(ModelSpecError):  # _check names the fault
                spec = parse_model_spec(f"{name}/{pc.default_model}", catalog)
                catalog.add_model(spec.provider, spec.model)
    apply_limits(config.providers, catalog)
    return catalog


def _custom_provider(name: str, pc: ProviderConfig) -> ProviderEntry:
    """A provider the catalog does not know, on any wire API: the codec of that
    API sends its own auth header (Authorization, x-api-key, x-goog-api-key)
    and appends its own paths to base_url, as for the catalog's providers."""
    api = pc.api or "chat"
    dialect = pc.dialect if pc.dialect is not UNSET else ()
    keys = pc.key_env_list
    if api in ("chat", "responses"):
        return compatible_provider(
            name, pc.base_url or "", api=api, key_env=keys or None, dialect=dialect
        )
    return ProviderEntry(
        name=name,
        label=name,
        api=api,
        base_url=(pc.base_url or "").rstrip("/"),
        key_env=keys or [],
        dialect=list(dict.fromkeys(dialect)),
        slash_models=True,
    )


def tool_env(
    config: Config,
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
        key_names=_key_names(catalog),
        secrets=secrets,
        source=env,
    )


def model_text(config: Config, text: str | None = None) -> str:
    """The model text to resolve for a request: the config's ``default_model``
    when none is given; ``PROVIDER`` or ``PROVIDER/THINKING`` alone become
    ``PROVIDER/<that provider's default_model>[/THINKING]`` when the config
    sets one; anything else is returned as is (for ``resolve_model``)."""
    if text is None or not text.strip():
        return config.default_model
    text = text.strip()
    provider, _, rest = text.partition("/")
    pc = config.providers.get(provider)
    if pc is None or pc.default_model is None or "/" in rest:
        return text
    if not rest:
        return f"{provider}/{pc.default_model}"
    level = {"medium": "med", "off": "none"}.get(rest.lower(), rest.lower())
    if level in THINKING_LEVELS:
        return f"{provider}/{pc.default_model}/{level}"
    return text


def settings_factory(
    config: Config,
    credentials: Mapping[str, str],
    env: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
) -> Callable[[str], ProviderSettings]:
    """provider name -> ProviderSettings, for agents.pool.ProviderPool.

    base_url, api, key_env and dialect come from ``catalog`` (which must be
    ``build_catalog(config)``; built here when None), extra headers and timeouts
    from the config. The key: the provider's environment variables first, then
    credentials.json by provider name, then by variable name. A provider's
    ``base_url_env`` variable (e.g. XAI_BASE_URL) wins over the config's base_url.
    Every key handed out is registered with the log redactor.
    """
    env = os.environ if env is None else env
    catalog = catalog if catalog is not None else build_catalog(config)
    creds = dict(credentials)

    def make(name: str) -> ProviderSettings:
        pc = config.providers.get(name) or ProviderConfig()
        settings = settings_for(
            name,
            catalog=catalog,
            env=env,
            credentials=creds,
            extra_headers=pc.extra_headers,
            connect_timeout=None if pc.connect_timeout is UNSET else pc.connect_timeout,
            read_timeout=None if pc.read_timeout is UNSET else pc.read_timeout,
            api=pc.api,
        )
        if pc.dialect is not UNSET:
            settings = replace(settings, dialect=frozenset(pc.dialect))
        register_secret(settings.api_key)
        return settings

    return make
