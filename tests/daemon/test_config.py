from __future__ import annotations

import json
from pathlib import Path

import pytest

import protocol
from daemon.config import (
    Config,
    ConfigError,
    ProviderConfig,
    ToolsPolicy,
    build_catalog,
    load_config,
    model_text,
    parse_config,
    settings_factory,
)
from daemon.process.logs import REDACTED, _forget_secrets, redact
from providers.catalog import default_catalog
from providers.modelspec import resolve_model
from providers.openai import DIALECT_FLAGS
from providers.types import ProviderFailure

FILE = Path("/home/me/.config/ikigai/config.json")
MYBOX = {"base_url": "http://gpu.lan:8080/v1/", "api": "chat"}


def bad(data: object) -> str:
    raw = data if isinstance(data, str) else json.dumps(data)
    with pytest.raises(ConfigError) as e:
        parse_config(raw, FILE)
    return str(e.value)


@pytest.fixture(autouse=True)
def _no_secrets():
    yield
    _forget_secrets()


# ------------------------------------------------------------------ defaults


def test_missing_file_gives_the_defaults(tmp_path):
    c = load_config(tmp_path / "nope.json")
    assert c == Config()
    assert c.default_model == "claude-sonnet-4-5"
    assert c.default_thinking == "none"
    assert c.providers == {}
    assert c.max_output_tokens == 4096
    assert c.max_tool_turns == 50
    assert c.tool_folders == []
    assert c.tools == ToolsPolicy(enabled=None, disabled=[])
    assert c.fallback_models == []
    assert c.autostart is True
    assert c.database_url is None
    assert c.log_level == "info"
    assert c.shutdown_grace == 10.0
    assert c.max_line_bytes == 1 << 20 == protocol.MAX_LINE


def test_default_model_resolves_with_the_default_catalog():
    assert resolve_model(Config().default_model).provider == "anthropic"


@pytest.mark.parametrize("text", ["", "  \n", "{}"])
def test_empty_file_gives_the_defaults(tmp_path, text):
    path = tmp_path / "config.json"
    path.write_text(text)
    assert load_config(path) == Config()


def test_a_full_file_loads(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {
                "default_model": "gpt-4o/low",
                "default_thinking": "med",
                "providers": {
                    "openai": {"read_timeout": 300, "max_retries": 2},
                    "mybox": {**MYBOX, "dialect": ["reasoning_content"], "default_model": "qwen3"},
                },
                "max_output_tokens": 8192,
                "max_tool_turns": 10,
                "tool_folders": ["/opt/tools"],
                "tools": {"enabled": None, "disabled": ["bash"]},
                "fallback_models": ["mybox/qwen3", "claude-haiku-4-5/none"],
                "autostart": False,
                "database_url": "postgresql://db/ik",
                "log_level": "debug",
                "shutdown_grace": 2.5,
                "max_line_bytes": 65536,
            }
        )
    )
    c = load_config(path)
    assert c.default_thinking == "med"
    assert c.providers["openai"].read_timeout == 300.0
    assert c.providers["openai"].max_retries == 2
    assert c.providers["mybox"].dialect == ["reasoning_content"]
    assert c.fallback_models == ["mybox/qwen3", "claude-haiku-4-5/none"]
    assert c.autostart is False
    assert c.max_line_bytes == 65536


# ------------------------------------------------------------------ refusals, with path and field


def test_wrong_type_names_file_and_dotted_field():
    assert bad({"providers": {"openai": {"read_timeout": "slow"}}}) == (
        f"{FILE}: providers.openai.read_timeout: Expected number, got str"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"max_output_tokens": "big"}, "max_output_tokens: Expected integer, got str"),
        ({"max_output_tokens": 0}, "max_output_tokens: Expected integer >= 1"),
        ({"max_tool_turns": 1.5}, "max_tool_turns: Expected integer, got number"),
        ({"autostart": "yes"}, "autostart: Expected bool, got str"),
        ({"shutdown_grace": -1}, "shutdown_grace: Expected number >= 0.0"),
        ({"max_line_bytes": 10}, "max_line_bytes: Expected integer >= 1024"),
        ({"tool_folders": "/opt/tools"}, "tool_folders: Expected list, got str"),
        ({"tools": {"enabled": ["bash", 3]}}, "tools.enabled[1]: Expected str, got integer"),
        ({"fallback_models": [None]}, "fallback_models[0]: Expected str, got null"),
        ({"providers": []}, "providers: Expected object, got list"),
        ({"providers": {"openai": 3}}, "providers.openai: Expected object, got integer"),
        (
            {"providers": {"openai": {"connect_timeout": 0}}},
            "providers.openai.connect_timeout: Expected number > 0.0",
        ),
        (
            {"providers": {"openai": {"max_retries": -1}}},
            "providers.openai.max_retries: Expected integer >= 0",
        ),
        (
            {"providers": {"openai": {"extra_headers": {"X-Title": 3}}}},
            "providers.openai.extra_headers.X-Title: Expected str, got integer",
        ),
        (
            {"default_thinking": "medium"},
            "default_thinking: must be one of none, low, med, high, not 'medium'",
        ),
        (
            {"log_level": "loud"},
            "log_level: must be one of debug, info, warning, error, not 'loud'",
        ),
        (
            {"providers": {"openai": {"api": "completions"}}},
            "providers.openai.api: must be one of chat, responses, messages, generate_content, "
            "not 'completions'",
        ),
    ],
)
def test_type_errors(data, message):
    assert bad(data) == f"{FILE}: {message}"


def test_cluster_section_faults_are_named():
    assert bad({"cluster": {"lease": 4, "heartbeat": 3}}) == (
        f"{FILE}: cluster.heartbeat (3 s) must be at most half of cluster.lease (4 s): "
        "one missed heartbeat must not lose the lease"
    )
    assert bad({"cluster": {"lease": 0.5}}).startswith(f"{FILE}: cluster.lease: ")
    assert bad({"cluster": {"id": "has space"}}).startswith(f"{FILE}: cluster.id: ")
    assert bad({"cluster": {"listen": "nowhere"}}).startswith(f"{FILE}: cluster.listen: ")
    assert "unknown key" in bad({"cluster": {"leases": 3}})


def test_unknown_top_level_key_is_named():
    assert bad({"default_modle": "gpt-4o"}) == (
        f"{FILE}: default_modle: unknown key (known keys: default_model, default_thinking, "
        "providers, max_output_tokens, max_tool_turns, tool_folders, tools, fallback_models, "
        "autostart, database_url, log_level, shutdown_grace, max_line_bytes, policy, policies, "
        "approval_timeout, context, mcp_servers, stream, budget, cluster, traces, provider_limiter)"
    )


def test_unknown_provider_key_is_named_with_its_provider():
    assert bad({"providers": {"openai": {"timeout": 3}}}) == (
        f"{FILE}: providers.openai.timeout: unknown key (known keys: base_url, api, key_env, "
        "default_model, extra_headers, connect_timeout, read_timeout, max_retries, dialect, models, "
        "max_concurrent, requests_per_minute, input_tokens_per_minute, output_tokens_per_minute, "
        "daily_budget_usd)"
    )


def test_unknown_tools_key_is_named():
    assert bad({"tools": {"allowed": []}}) == (
        f"{FILE}: tools.allowed: unknown key (known keys: enabled, disabled, env)"
    )


def test_json_syntax_error_gives_line_and_column():
    text = '{\n  "default_model": "gpt-4o",\n  "autostart": false,\n}\n'
    assert bad(text) == (
        f"{FILE}: line 4 column 1: not valid JSON: Expecting property name enclosed in double quotes"
    )


def test_top_level_must_be_an_object():
    assert bad("[]") == f"{FILE}: expected a JSON object at the top, got list"


def test_not_utf8(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b'{"default_model": "\xe9"}')
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value) == f"{path}: default_model: not UTF-8 text (byte 19)"


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path)
    assert str(e.value) == f"{tmp_path}: is a folder, not a file"


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


# ------------------------------------------------------------------ models


def test_bad_default_model_is_refused_with_the_modelspec_reason():
    msg = bad({"default_model": "gpt-4o/extreme"})
    assert msg.startswith(
        f"{FILE}: default_model: 'gpt-4o/extreme': 'extreme' is not a thinking level"
    )


def test_unknown_model_family_is_refused():
    msg = bad({"default_model": "mystery-7b"})
    assert msg.startswith(f"{FILE}: default_model: cannot tell which provider serves 'mystery-7b'")


def test_bad_fallback_model_names_its_index():
    msg = bad({"fallback_models": ["gpt-4o", "nobody/x/y/z"]})
    assert msg.startswith(f"{FILE}: fallback_models[1]: ")


def test_models_of_custom_providers_are_valid_only_when_configured():
    assert bad({"default_model": "mybox/qwen3"}).startswith(f"{FILE}: default_model: ")
    c = parse_config(
        json.dumps({"default_model": "mybox/qwen3/high", "providers": {"mybox": MYBOX}})
    )
    assert c.default_model == "mybox/qwen3/high"


def test_provider_default_model_is_checked():
    msg = bad({"providers": {"openai": {"default_model": "gpt-4o/x/y"}}})
    assert msg.startswith(f"{FILE}: providers.openai.default_model: ")


# ------------------------------------------------------------------ providers


def test_custom_provider_needs_base_url_and_api():
    names = ", ".join(default_catalog().providers)
    expected = (
        f"{FILE}: providers.mybox: 'mybox' is not a catalog provider, so it needs base_url "
        f"and api (chat, responses, messages, generate_content) to be a custom one "
        f"(catalog providers: {names})"
    )
    assert bad({"providers": {"mybox": {"base_url": "http://x/v1"}}}) == expected
    assert bad({"providers": {"mybox": {"api": "chat"}}}) == expected


@pytest.mark.parametrize("api", ["chat", "responses", "messages", "generate_content"])
def test_custom_provider_speaks_every_wire_api(api):
    # llama.cpp and proxies serve the Anthropic API too
    config = parse_config(json.dumps({"providers": {"mybox": {**MYBOX, "api": api}}}), FILE)
    catalog = build_catalog(config)
    assert catalog.providers["mybox"].api == api
    assert catalog.providers["mybox"].base_url == "http://gpu.lan:8080/v1"
    assert catalog.wire_api("mybox", "any-model") == api
    settings = settings_factory(config, {"mybox": "k-mybox"}, env={})("mybox")
    assert (settings.api, settings.api_key) == (api, "k-mybox")
    assert bad({"providers": {"mybox": {**MYBOX, "api": "grpc"}}}) == (
        f"{FILE}: providers.mybox.api: must be one of chat, responses, messages, "
        "generate_content, not 'grpc'"
    )


@pytest.mark.parametrize("pin", ["chat", "responses"])
def test_an_api_pin_wins_over_each_models_own(pin):
    """gpt-5 is "responses" in the catalog, gpt-4o the provider's "chat": a pin
    sends both (and a model the catalog does not know) through it."""
    catalog = build_catalog(parse_config(json.dumps({"providers": {"openai": {"api": pin}}})))
    for model in ("gpt-5", "gpt-4o", "gpt-unknown"):
        assert catalog.wire_api("openai", model) == pin
    assert {m.api for m in catalog.models_of("openai")} == {None}  # rows show the provider's
    assert default_catalog().wire_api("openai", "gpt-5") == "responses"  # shared one untouched


def test_a_configured_default_model_is_listed_for_its_provider():
    config = parse_config(
        json.dumps({"providers": {"mybox": {**MYBOX, "default_model": "qwen/low"}}}), FILE
    )
    catalog = build_catalog(config)
    assert [(m.provider, m.id) for m in catalog.models_of("mybox")] == [("mybox", "qwen")]
    assert catalog.lookup("mybox", "qwen") is not None
    assert default_catalog().models_of("mybox") == []


@pytest.mark.parametrize("name", ["mybox", "openai"])
def test_unknown_dialect_flags_are_refused_naming_the_known_ones(name):
    data = {"providers": {name: {**MYBOX, "dialect": ["reasoning_content", "nope", "alsono"]}}}
    assert bad(data) == (
        f"{FILE}: providers.{name}.dialect: unknown flag(s) alsono, nope "
        f"(known: {', '.join(sorted(DIALECT_FLAGS))})"
    )


def test_base_url_must_be_http():
    assert bad({"providers": {"openai": {"base_url": "api.openai.com"}}}) == (
        f"{FILE}: providers.openai.base_url: must start with http:// or https://"
    )


def test_provider_name_with_slash_is_refused():
    assert bad({"providers": {"my/box": MYBOX}}) == (
        f"{FILE}: providers.my/box: a provider name must be non-empty and contain no '/'"
    )


def test_key_env_forms():
    assert ProviderConfig().key_env_list is None
    assert ProviderConfig(key_env=None).key_env_list == []
    assert ProviderConfig(key_env="K").key_env_list == ["K"]
    assert ProviderConfig(key_env=["A", "B"]).key_env_list == ["A", "B"]


def test_tool_folders_are_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", "/home/me")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"tool_folders": ["~/tools", "/opt/t", "rel/t"]}))
    c = load_config(path)
    assert c.tool_folders == ["/home/me/tools", "/opt/t", str(tmp_path / "rel/t")]
    assert c.tool_folder_paths == [Path("/home/me/tools"), Path("/opt/t"), tmp_path / "rel/t"]


def test_tools_policy():
    every = ToolsPolicy()
    assert every.allows("bash") and every.allows("read_file")
    some = ToolsPolicy(enabled=["bash", "read_file"], disabled=["bash"])
    assert not some.allows("bash")
    assert some.allows("read_file")
    assert not some.allows("write_file")
    assert not ToolsPolicy(disabled=["bash"]).allows("bash")


# ------------------------------------------------------------------ catalog and settings


def config(**providers: dict) -> Config:
    return parse_config(json.dumps({"providers": providers}), FILE)


def test_build_catalog_adds_custom_providers_without_touching_the_default():
    c = config(
        mybox={**MYBOX, "key_env": "MYBOX_KEY", "dialect": ["max_tokens_field"]},
        openai={"base_url": "https://proxy.example/v1", "api": "chat", "key_env": ["K1", "K2"]},
    )
    cat = build_catalog(c)
    box = cat.providers["mybox"]
    assert (box.api, box.base_url, box.key_env, box.dialect) == (
        "chat",
        "http://gpu.lan:8080/v1",
        ["MYBOX_KEY"],
        ["max_tokens_field"],
    )
    oa = cat.providers["openai"]
    assert (oa.base_url, oa.api, oa.key_env) == ("https://proxy.example/v1", "chat", ["K1", "K2"])
    d = default_catalog()
    assert cat is not d
    assert "mybox" not in d.providers
    assert d.providers["openai"].base_url == "https://api.openai.com/v1"
    assert d.providers["openai"].key_env == ["OPENAI_API_KEY"]
    assert "mybox" in cat.providers and "mybox" not in build_catalog(Config()).providers


def test_custom_provider_without_key_env_takes_no_key():
    c = config(mybox=MYBOX)
    s = settings_factory(c, {}, {}, build_catalog(c))("mybox")
    assert s.key_env == ()
    assert s.require_key() == ""


def test_settings_carry_config_over_catalog():
    c = config(
        openai={
            "base_url": "https://proxy.example/v1/",
            "api": "chat",
            "extra_headers": {"X-Team": "a"},
            "connect_timeout": 3,
            "read_timeout": 600,
            "dialect": ["max_tokens_field"],
        }
    )
    s = settings_factory(c, {}, {"OPENAI_API_KEY": "sk-env"}, build_catalog(c))("openai")
    assert s.base_url == "https://proxy.example/v1"
    assert s.api == "chat"
    assert dict(s.extra_headers) == {"X-Team": "a"}
    assert (s.connect_timeout, s.read_timeout) == (3.0, 600.0)
    assert s.dialect == frozenset({"max_tokens_field"})
    assert s.key_env == ("OPENAI_API_KEY",)
    plain = settings_factory(Config(), {}, {}, build_catalog(Config()))("openai")
    assert (plain.base_url, plain.connect_timeout, plain.read_timeout) == (
        "https://api.openai.com/v1",
        10.0,
        120.0,
    )


def test_base_url_precedence_env_then_config_then_catalog():
    c = config(xai={"base_url": "https://cfg.example/v1"})
    make = settings_factory(c, {}, {"XAI_BASE_URL": "https://env.example/v1"})
    assert make("xai").base_url == "https://env.example/v1"
    assert settings_factory(c, {}, {})("xai").base_url == "https://cfg.example/v1"
    assert settings_factory(Config(), {}, {})("xai").base_url == "https://api.x.ai/v1"


@pytest.mark.parametrize(
    ("env", "creds", "expected"),
    [
        # the environment first...
        (
            {"ANTHROPIC_API_KEY": "from-env"},
            {"anthropic": "by-name", "ANTHROPIC_API_KEY": "by-var"},
            "from-env",
        ),
        # ...then credentials.json by provider name...
        ({}, {"anthropic": "by-name", "ANTHROPIC_API_KEY": "by-var"}, "by-name"),
        # ...then by variable name
        ({}, {"ANTHROPIC_API_KEY": "by-var"}, "by-var"),
        ({"ANTHROPIC_API_KEY": ""}, {"ANTHROPIC_API_KEY": "by-var"}, "by-var"),
    ],
)
def test_key_precedence(env, creds, expected):
    assert settings_factory(Config(), creds, env)("anthropic").api_key == expected


def test_custom_key_env_is_looked_up_in_env_then_credentials():
    c = config(mybox={**MYBOX, "key_env": "MYBOX_KEY"})
    assert settings_factory(c, {"mybox": "file"}, {"MYBOX_KEY": "env"})("mybox").api_key == "env"
    assert settings_factory(c, {"MYBOX_KEY": "file"}, {})("mybox").api_key == "file"


def test_missing_key_fails_on_first_use_naming_the_variable():
    s = settings_factory(Config(), {}, {})("anthropic")
    with pytest.raises(ProviderFailure) as e:
        s.require_key()
    assert e.value.error.message == (
        'no API key for anthropic: set ANTHROPIC_API_KEY or add "anthropic" to credentials.json'
    )


def test_keys_handed_out_are_registered_for_redaction():
    odd = "my odd key: 12 34 56 78"
    assert redact(f"x {odd} y") == f"x {odd} y"
    settings_factory(Config(), {"openai": odd}, {})("openai")
    assert redact(f"x {odd} y") == f"x {REDACTED} y"


def test_unknown_provider_is_a_value_error():
    with pytest.raises(ValueError, match="unknown provider 'nobody'"):
        settings_factory(Config(), {}, {})("nobody")


def test_model_text():
    c = parse_config(
        json.dumps(
            {
                "default_model": "gpt-4o/low",
                "providers": {"mybox": {**MYBOX, "default_model": "qwen3"}},
            }
        )
    )
    assert model_text(c) == "gpt-4o/low"
    assert model_text(c, "  ") == "gpt-4o/low"
    assert model_text(c, "mybox") == "mybox/qwen3"
    assert model_text(c, "mybox/medium") == "mybox/qwen3/med"
    assert model_text(c, "mybox/llama3") == "mybox/llama3"
    assert model_text(c, "openai") == "openai"  # no default_model configured for it
    assert model_text(c, "claude-opus-4-1/high") == "claude-opus-4-1/high"


# ------------------------------------------------------------------ the documentation

DOC = Path(__file__).parents[2] / "docs" / "configuration.md"


def _doc_examples() -> list[str]:
    parts = DOC.read_text().split("<!-- example: config -->")[1:]
    return [p.split("```json\n", 1)[1].split("```", 1)[0] for p in parts]


def test_the_documented_examples_are_valid():
    examples = _doc_examples()
    assert len(examples) == 4
    for text in examples:
        parse_config(text, DOC)


def test_every_key_is_documented():
    text = DOC.read_text()
    for struct in (Config, ProviderConfig):
        for name in struct.__struct_fields__:
            assert f"| `{name}` |" in text, name
    for flag in DIALECT_FLAGS:
        assert f"| `{flag}` |" in text, flag


# ------------------------------------------------------------------ tools.env (issue 13, item 8)


def test_tools_env_loads_and_builds_the_tool_environment():
    from daemon.config import EnvSettings, ToolsEnv, tool_env

    raw = {
        "providers": {"mybox": {**MYBOX, "key_env": "MYBOX_TOKEN"}},
        "tools": {
            "env": {
                "pass": ["AWS_PROFILE"],
                "set": {"PAGER": "cat"},
                "per_tool": {"weather": {"pass": ["WEATHER_API_KEY"], "set": {"UNITS": "metric"}}},
            }
        },
    }
    c = parse_config(json.dumps(raw), FILE)
    assert c.tools.env == ToolsEnv(
        pass_=["AWS_PROFILE"],
        set={"PAGER": "cat"},
        per_tool={"weather": EnvSettings(pass_=["WEATHER_API_KEY"], set={"UNITS": "metric"})},
    )
    assert Config().tools.env == ToolsEnv()
    source = {
        "PATH": "/bin",
        "AWS_PROFILE": "dev",
        "WEATHER_API_KEY": "w-key",
        "MYBOX_TOKEN": "the-custom-key",
        "IKIGAI_HOME": "/h",
        "OPENAI_API_KEY": "sk-openai-0123456789",
    }
    env = tool_env(c, source, lambda: ["sk-openai-0123456789"])
    assert "MYBOX_TOKEN" in env.key_names and "OPENAI_API_KEY" in env.key_names
    assert env.build("bash", {"IKIGAI_AGENT_UUID": "u"}) == {
        "PATH": "/bin",
        "AWS_PROFILE": "dev",
        "PAGER": "cat",
        "IKIGAI_AGENT_UUID": "u",
    }
    assert env.build("weather") == {
        "PATH": "/bin",
        "AWS_PROFILE": "dev",
        "PAGER": "cat",
        "WEATHER_API_KEY": "w-key",
        "UNITS": "metric",
    }


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"pass": "AWS_PROFILE"}, "tools.env.pass: Expected list, got str"),
        ({"pass": ["A", 3]}, "tools.env.pass[1]: Expected str, got integer"),
        ({"set": {"PAGER": 1}}, "tools.env.set.PAGER: Expected str, got integer"),
        ({"set": []}, "tools.env.set: Expected object, got list"),
        ({"bogus": 1}, "tools.env.bogus: unknown key (known keys: pass, set, per_tool)"),
        (
            {"per_tool": {"bash": {"bogus": 1}}},
            "tools.env.per_tool.bash.bogus: unknown key (known keys: pass, set)",
        ),
        ({"per_tool": {"bash": {"set": {"X": None}}}}, "tools.env.per_tool.bash.set.X: Expected str, got null"),
        ({"per_tool": {"bash": {"pass": [1]}}}, "tools.env.per_tool.bash.pass[0]: Expected str, got integer"),
        (
            {"pass": ["HOME", "A B"]},
            "tools.env.pass[1]: 'A B' is not a variable name (letters, digits and '_', not starting with a digit)",
        ),
        (
            {"set": {"1X": "v"}},
            "tools.env.set.1X: '1X' is not a variable name (letters, digits and '_', not starting with a digit)",
        ),
        ({"pass": ["OPENAI_API_KEY"]}, "tools.env.pass[0]: OPENAI_API_KEY holds a provider's API key; tools never get it"),
        (
            {"per_tool": {"x": {"set": {"GEMINI_API_KEY": "v"}}}},
            "tools.env.per_tool.x.set.GEMINI_API_KEY: GEMINI_API_KEY holds a provider's API key; tools never get it",
        ),
        (
            {"pass": ["IKIGAI_DB_URL"]},
            "tools.env.pass[0]: IKIGAI_DB_URL is one of ikigai's own variables; tools never get it",
        ),
        ({"set": {"FOO": "a\u0000b"}}, "tools.env.set.FOO: a value may not hold a NUL character"),
        (
            {"per_tool": {"has space": {}}},
            "tools.env.per_tool.has space: a tool name is 1-64 letters, digits, '_' or '-'",
        ),
    ],
)
def test_tools_env_errors_name_the_field(env, message):
    assert bad({"tools": {"env": env}}) == f"{FILE}: {message}"


def test_a_custom_providers_key_variable_cannot_be_passed_to_tools():
    raw = {"providers": {"mybox": {**MYBOX, "key_env": ["MYBOX_TOKEN"]}}, "tools": {"env": {"pass": ["MYBOX_TOKEN"]}}}
    assert bad(raw) == (
        f"{FILE}: tools.env.pass[0]: MYBOX_TOKEN holds a provider's API key; tools never get it"
    )


def test_every_tools_env_key_is_documented():
    from daemon.config import EnvSettings, ToolsEnv

    text = DOC.read_text()
    for struct in (ToolsPolicy, ToolsEnv, EnvSettings):
        for name in struct.__struct_encode_fields__:
            assert f"| `{name}` |" in text or name in ("enabled", "disabled", "env"), name
    assert "(#tool-environment)" in text and "### Tool environment" in text


# ------------------------------------------------------------------ text that is not Unicode


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"default_model": "gpt\\ud800"}', "default_model: a lone surrogate (\\ud800) is not Unicode text"),
        # an unknown key: msgspec raised UnicodeEncodeError on it
        ('{"x\\udc00y": 1}', "x\\udc00y: a lone surrogate (\\udc00) is not Unicode text"),
        (
            '{"providers": {"openai": {"extra_headers": {"X-Title": "a\\udfff"}}}}',
            "providers.openai.extra_headers.X-Title: a lone surrogate (\\udfff) is not Unicode text",
        ),
        (
            '{"fallback_models": ["gpt-4o", "\\ud83d"]}',
            "fallback_models[1]: a lone surrogate (\\ud83d) is not Unicode text",
        ),
        (
            '{"tools": {"env": {"set": {"K": "\\udbff"}}}}',
            "tools.env.set.K: a lone surrogate (\\udbff) is not Unicode text",
        ),
    ],
)
def test_a_lone_surrogate_is_refused_naming_the_field(text, message):
    assert bad(text) == f"{FILE}: {message}"


def test_a_surrogate_pair_is_text():
    c = parse_config('{"providers": {"openai": {"extra_headers": {"X-Title": "\\ud83d\\ude00"}}}}', FILE)
    assert c.providers["openai"].extra_headers == {"X-Title": "\U0001f600"}


def test_invalid_utf8_names_the_field(tmp_path):
    path = tmp_path / "config.json"
    raw = b'{"providers": {"openai": {"extra_headers": {"X-Title": "caf\xe9"}}}}'
    path.write_bytes(raw)
    with pytest.raises(ConfigError) as e:
        load_config(path)
    at = raw.index(b"\xe9")
    assert str(e.value) == f"{path}: providers.openai.extra_headers.X-Title: not UTF-8 text (byte {at})"
    # outside any string: the file and the byte
    path.write_bytes(b'{"autostart": true\xff}')
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value) == f"{path}: not UTF-8 text (byte 18)"


@pytest.mark.parametrize("depth", [2000, 100_000])
def test_deeply_nested_config_is_a_config_error(tmp_path, depth):
    path = tmp_path / "config.json"
    path.write_text('{"tools": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value) == f"{path}: not valid JSON: nested too deeply"


def test_text_fault_for_credentials_never_quotes_the_value():
    from daemon.config import text_fault

    secret = "sk-ant-0123456789abcdef\udc80"
    assert text_fault({"anthropic": secret}) == "anthropic: a lone surrogate (\\udc80) is not Unicode text"
    assert text_fault({"anthropic": "sk-ant-fine"}) is None
    assert text_fault({"a": [{"b": ["ok", "x\ud800"]}]}) == "a[0].b[1]: a lone surrogate (\\ud800) is not Unicode text"


def test_max_line_bytes_is_bounded(tmp_path):
    from daemon.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match="max_line_bytes"):
        parse_config(b'{"max_line_bytes": 1099511627776}', tmp_path / "config.json")
    assert parse_config(b'{"max_line_bytes": 67108864}', tmp_path / "config.json").max_line_bytes == 1 << 26


# ------------------------------------------------------------------ the provider limiter


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_concurrent", 0, "Expected integer >= 1"),
        ("max_concurrent", -3, "Expected integer >= 1"),
        ("max_concurrent", 2.5, "Expected integer, got number"),
        ("max_concurrent", "8", "Expected integer, got str"),
        ("max_concurrent", True, "Expected integer, got bool"),
        ("requests_per_minute", 0, "Expected number > 0.0"),
        ("requests_per_minute", -50, "Expected number > 0.0"),
        ("requests_per_minute", "fast", "Expected number, got str"),
        ("input_tokens_per_minute", 0, "Expected number > 0.0"),
        ("input_tokens_per_minute", None, "Expected number, got null"),
        ("output_tokens_per_minute", -1.5, "Expected number > 0.0"),
        ("output_tokens_per_minute", [8000], "Expected number, got list"),
    ],
)
def test_a_bad_limit_is_refused_naming_its_field(field, value, message):
    assert bad({"providers": {"anthropic": {field: value}}}) == (
        f"{FILE}: providers.anthropic.{field}: {message}"
    )


def test_an_infinite_rate_is_refused_naming_its_field():
    # msgspec reads 1e999 as inf, which its bound lets through
    raw = '{"providers": {"openai": {"requests_per_minute": 1e999}}}'
    assert bad(raw) == f"{FILE}: providers.openai.requests_per_minute must be above 0, not inf"


def test_limits_reach_the_limiter_config():
    from agents.limiter import LimiterConfig
    from daemon.config import limiter_configs

    cfg = config(
        anthropic={"max_concurrent": 3, "requests_per_minute": 50, "input_tokens_per_minute": 30000},
        openai={"output_tokens_per_minute": 8000.5},
        google={},
    )
    assert limiter_configs(cfg) == {
        "anthropic": LimiterConfig(
            max_concurrent=3, requests_per_minute=50, input_tokens_per_minute=30000
        ),
        "openai": LimiterConfig(output_tokens_per_minute=8000.5),
        "google": LimiterConfig(),
    }
