"""config.json for context compaction: the ``context`` section and per-model
limits (``providers.NAME.models.MODEL``), checked strictly, applied to the
catalog (source "config"), handed to the agents and renewed by a reload."""

from __future__ import annotations

import gc
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import AgentConfig
from daemon.config import Config, ConfigError, ContextConfig, build_catalog, parse_config
from daemon.process.service import GC_THRESHOLDS, Daemon
from protocol.paths import resolve_paths
from providers.catalog import default_catalog
from providers.limits import output_cap
from providers.modelspec import resolve_model
from tests.daemon.conftest import write_home
from tests.fakes.server import FakeProvider

FILE = Path("/home/me/.config/ikigai/config.json")


def bad(data: object) -> str:
    with pytest.raises(ConfigError) as e:
        parse_config(json.dumps(data), FILE)
    message = str(e.value)
    assert message.startswith(f"{FILE}: ")
    return message


def limits_config(models: dict[str, object], provider: str = "anthropic") -> dict[str, object]:
    return {"providers": {provider: {"models": models}}}


# ------------------------------------------------------------------ context


def test_context_defaults():
    c = parse_config("{}", FILE)
    assert c.context == ContextConfig()
    assert (c.context.compact_at, c.context.summary_model, c.context.tool_result_share) == (0.8, None, 0.25)
    # the agents' own defaults are the same figures
    a = AgentConfig()
    assert (a.compact_at, a.summary_model, a.tool_result_share) == (0.8, None, 0.25)


def test_context_good_values():
    c = parse_config(
        json.dumps({"context": {"compact_at": 0.5, "summary_model": "claude-haiku-4-5/low", "tool_result_share": 1}}),
        FILE,
    )
    assert c.context == ContextConfig(compact_at=0.5, summary_model="claude-haiku-4-5/low", tool_result_share=1.0)
    for edge in (0.1, 0.95):
        assert parse_config(json.dumps({"context": {"compact_at": edge}}), FILE).context.compact_at == edge
    assert parse_config(json.dumps({"context": {"tool_result_share": 0.01}}), FILE).context.tool_result_share == 0.01


@pytest.mark.parametrize(
    ("context", "field", "says"),
    [
        ({"compact_at": 0.05}, "context.compact_at", ">= 0.1"),
        ({"compact_at": 0.99}, "context.compact_at", "<= 0.95"),
        ({"compact_at": 1}, "context.compact_at", "<= 0.95"),
        ({"compact_at": "80%"}, "context.compact_at", "Expected number, got str"),
        ({"compact_at": None}, "context.compact_at", "Expected number, got null"),
        ({"compact_at": True}, "context.compact_at", "Expected number, got bool"),
        ({"tool_result_share": 0}, "context.tool_result_share", ">= 0.01"),
        ({"tool_result_share": 1.5}, "context.tool_result_share", "<= 1.0"),
        ({"summary_model": 3}, "context.summary_model", "Expected str | null, got integer"),
        ({"summary_model": "a/b/c/d"}, "context.summary_model", "too many parts"),
        ({"summary_model": ""}, "context.summary_model", "empty"),
        ({"summary_model": "no-such-family-xyz"}, "context.summary_model", "cannot tell which provider"),
        ({"compact": 0.5}, "context.compact", "unknown key (known keys: compact_at, summary_model, tool_result_share)"),
    ],
)
def test_context_bad_values_name_the_field(context, field, says):
    message = bad({"context": context})
    assert f": {field}: " in message
    assert says in message


def test_context_must_be_an_object():
    assert "context: Expected object, got list" in bad({"context": [0.8]})
    assert "compact_at: Expected number >= 0.1" in parse_error('{"context": {"compact_at": NaN}}')


def parse_error(raw: str) -> str:
    with pytest.raises(ConfigError) as e:
        parse_config(raw, FILE)
    return str(e.value)


@settings(max_examples=200, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.text(max_size=5) | st.none())
def test_any_compact_at_is_accepted_in_range_or_refused_naming_it(value):
    raw = json.dumps({"context": {"compact_at": value}})
    in_range = isinstance(value, int | float) and 0.1 <= value <= 0.95
    if in_range:
        assert parse_config(raw, FILE).context.compact_at == value
    else:
        assert ": context.compact_at: " in parse_error(raw)


# ------------------------------------------------------------------ model limits


def test_limits_of_a_catalog_model_without_config():
    catalog = build_catalog(Config())
    limits = catalog.limits("anthropic", "claude-sonnet-4-5")
    entry = default_catalog().lookup("anthropic", "claude-sonnet-4-5")
    assert entry is not None
    assert limits == (entry.context_window, entry.max_output_tokens, "catalog")
    unknown = catalog.limits("anthropic", "claude-from-the-future")
    default, known = catalog.entry_or_default("anthropic", "claude-from-the-future")
    assert not known
    assert unknown == (default.context_window, default.max_output_tokens, "default")


def test_overrides_reach_the_catalog_with_source_config():
    c = parse_config(
        json.dumps(
            {
                "providers": {
                    "anthropic": {"models": {"claude-sonnet-4-5": {"context_window": 100_000}}},
                    "openai": {"models": {"my-finetune": {"context_window": 16_384, "max_output_tokens": 2048}}},
                    "lbox": {
                        "base_url": "http://gpu.lan:8080/v1",
                        "api": "chat",
                        "key_env": None,
                        "default_model": "served.gguf",
                        "models": {"served.gguf": {"context_window": 8192, "max_output_tokens": 1024}},
                    },
                }
            }
        ),
        FILE,
    )
    catalog = build_catalog(c)
    base = default_catalog().lookup("anthropic", "claude-sonnet-4-5")
    assert base is not None
    # the window is the config's, the output limit still the catalog's
    assert catalog.limits("anthropic", "claude-sonnet-4-5") == (100_000, base.max_output_tokens, "config")
    # a dated snapshot of the family shares the family's limits
    assert catalog.limits("anthropic", "claude-sonnet-4-5-20250929").source == "config"
    # an unknown model named in the config is known from now on, with its limits
    assert catalog.limits("openai", "my-finetune") == (16_384, 2048, "config")
    assert resolve_model("openai/my-finetune", catalog=catalog).known
    assert catalog.limits("lbox", "served.gguf") == (8192, 1024, "config")
    # what the codecs read (entry_or_default) agrees
    assert catalog.entry_or_default("openai", "my-finetune")[0].context_window == 16_384
    # others are untouched, and so is the shared default catalog
    assert catalog.limits("anthropic", "claude-opus-4-5").source == "catalog"
    assert default_catalog().limits("anthropic", "claude-sonnet-4-5").source == "catalog"


def test_an_empty_entry_changes_nothing():
    catalog = build_catalog(parse_config(json.dumps(limits_config({"claude-sonnet-4-5": {}})), FILE))
    assert catalog.limits("anthropic", "claude-sonnet-4-5").source == "catalog"


def test_set_limits_directly():
    catalog = build_catalog(Config())
    catalog.set_limits("google", "gemini-2.5-flash", max_output_tokens=1000)
    limits = catalog.limits("google", "gemini-2.5-flash")
    assert (limits.max_output_tokens, limits.source) == (1000, "config")
    assert limits.context_window == default_catalog().limits("google", "gemini-2.5-flash").context_window
    catalog.set_limits("google", "gemini-private", context_window=4096, max_output_tokens=512)
    assert catalog.limits("google", "gemini-private") == (4096, 512, "config")
    assert [m.id for m in catalog.models_of("google")].count("gemini-private") == 1
    # a pin of the provider's api afterwards keeps the limits
    catalog.pin_api("google", "generate_content")
    assert catalog.limits("google", "gemini-2.5-flash") == (limits.context_window, 1000, "config")


@pytest.mark.parametrize(
    ("models", "field", "says"),
    [
        ({"m": {"context_window": 255}}, "providers.anthropic.models.m.context_window", ">= 256"),
        ({"m": {"context_window": 1 << 31}}, "providers.anthropic.models.m.context_window", "<= 1073741824"),
        ({"m": {"context_window": 1e6}}, "providers.anthropic.models.m.context_window", "got number"),
        ({"m": {"context_window": "1M"}}, "providers.anthropic.models.m.context_window", "got str"),
        ({"m": {"max_output_tokens": 0}}, "providers.anthropic.models.m.max_output_tokens", ">= 1"),
        ({"m": {"max_output_tokens": True}}, "providers.anthropic.models.m.max_output_tokens", "got bool"),
        ({"m": {"window": 1000}}, "providers.anthropic.models.m.window", "known keys: context_window, max_output_tokens"),
        ({"m": 200_000}, "providers.anthropic.models.m", "Expected object, got integer"),
        ({"m/high": {"context_window": 300_000}}, "providers.anthropic.models.m/high", "without a thinking level"),
        ({"a/b": {"context_window": 300_000}}, "providers.anthropic.models.a/b", "not a thinking level"),
        (
            {"m": {"context_window": 1000}},
            "providers.anthropic.models.m",
            "max_output_tokens (4,096, from the top-level max_output_tokens) must be below context_window (1,000)",
        ),
    ],
)
def test_bad_limits_name_the_model_and_field(models, field, says):
    message = bad(limits_config(models))
    assert f" {field}: " in message
    assert says in message


def test_models_must_be_an_object():
    assert "providers.anthropic.models: Expected object, got list" in bad(limits_config([]))  # type: ignore[arg-type]


# ------------------------------------------------------------------ the daemon


async def test_the_daemon_hands_context_to_agents_and_a_reload_renews_it(fake_provider: FakeProvider):
    home = Path(tempfile.mkdtemp(prefix="ikc-", dir="/tmp"))  # short: socket paths are limited
    write_home(
        home,
        fake_provider,
        context={"compact_at": 0.6, "summary_model": "claude-haiku-4-5", "tool_result_share": 0.3},
    )
    cfg_file = home / "config.json"
    env = {"IKIGAI_HOME": str(home)}
    daemon = Daemon(resolve_paths(env), env)
    try:
        await _run_and_reload(daemon, cfg_file)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data))


async def _run_and_reload(daemon: Daemon, cfg_file: Path) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(daemon.run)
            assert daemon.sup is not None and daemon.pool is not None
            c = daemon.sup.config
            assert (c.compact_at, c.summary_model, c.tool_result_share) == (0.6, "claude-haiku-4-5", 0.3)
            assert daemon.pool.catalog.limits("anthropic", "claude-sonnet-4-5").source == "catalog"

            # start-up's objects are out of the collector's sight (a full
            # collection of them stalled every stream for ~100 ms)
            assert gc.get_freeze_count() > 10_000
            assert gc.get_threshold() == GC_THRESHOLDS
            assert daemon.server is not None and daemon.server.flush_interval == 0

            cfg = _read(cfg_file)
            cfg["stream"] = {"flush_interval": 0.05}
            cfg["context"] = {"compact_at": 0.9}
            cfg["providers"]["anthropic"]["models"] = {"claude-sonnet-4-5": {"context_window": 50_000, "max_output_tokens": 8192}}
            _write(cfg_file, cfg)
            assert daemon.reload() is None
            assert (c.compact_at, c.summary_model, c.tool_result_share) == (0.9, None, 0.25)
            assert daemon.server.flush_interval == 0.05
            assert daemon.pool.catalog.limits("anthropic", "claude-sonnet-4-5") == (50_000, 8192, "config")

            cfg["context"] = {"compact_at": 2}
            _write(cfg_file, cfg)
            refused = daemon.reload()
            assert refused is not None and "context.compact_at" in refused
            assert c.compact_at == 0.9  # the running config is kept
            daemon.request_shutdown()


# ------------------------------------------------------------------ the output cap sent (issue 28, defect 2)


def test_a_window_the_cap_sent_fits_is_accepted():
    # the model's own output limit (32,000: Anthropic's default for a model
    # the catalog does not know) is above the window, but every request asks
    # for at most the top-level 500 (agents/turn.py sends the smaller)
    c = parse_config(
        json.dumps({"max_output_tokens": 500, **limits_config({"m": {"context_window": 4000}})}), FILE
    )
    assert build_catalog(c).limits("anthropic", "m") == (4000, 32_000, "config")


@pytest.mark.parametrize(
    ("top", "models", "says"),
    [
        (
            5000,
            {"m": {"context_window": 4000}},
            "providers.anthropic.models.m: max_output_tokens (5,000, from the top-level max_output_tokens) "
            "must be below context_window (4,000)",
        ),
        (
            300_000,
            {"claude-sonnet-4-5": {"max_output_tokens": 250_000}},
            "providers.anthropic.models.claude-sonnet-4-5: max_output_tokens (250,000, from "
            "providers.anthropic.models.claude-sonnet-4-5.max_output_tokens) must be below context_window (200,000)",
        ),
        (
            300_000,
            {"m": {"context_window": 4000}},
            "providers.anthropic.models.m: max_output_tokens (32,000, from the model's own output limit) "
            "must be below context_window (4,000)",
        ),
    ],
)
def test_a_cap_sent_that_fills_the_window_is_refused_naming_its_field(top, models, says):
    assert says in bad({"max_output_tokens": top, **limits_config(models)})


@settings(max_examples=150, deadline=None)
@given(
    top=st.integers(1, 400_000),
    window=st.none() | st.integers(256, 300_000),
    output=st.none() | st.integers(1, 400_000),
    model=st.sampled_from(["anthropic/m", "anthropic/claude-sonnet-4-5", "openai/gpt-5", "openai/ft"]),
)
def test_a_config_is_refused_exactly_when_the_cap_sent_fills_the_window(top, window, output, model):
    provider, name = model.split("/")
    limits = {k: v for k, v in (("context_window", window), ("max_output_tokens", output)) if v is not None}
    data = {"max_output_tokens": top, **limits_config({name: limits}, provider)}
    # what agents/turn.py sends: the smaller cap, raised to the API's minimum
    own = default_catalog().limits(provider, name)
    api = default_catalog().wire_api(provider, name)
    cap = output_cap(api, min(top, output if output is not None else own.max_output_tokens))
    fits = cap < (window if window is not None else own.context_window)
    if fits:
        parse_config(json.dumps(data), FILE)
    else:
        assert f"providers.{provider}.models.{name}: max_output_tokens ({cap:,}, from " in bad(data)
