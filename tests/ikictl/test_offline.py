"""``ikictl models --offline`` rows: built by protocol.rows.model_row, exactly
the shape protocol.results declares for ``models.list``, for every provider,
from the catalog the daemon builds of the same config.json (one builder,
providers.configured.configured_catalog), tolerant of what the daemon refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ikictl._errors import UsageError
from ikictl.offline import catalog_models, configured_catalog
from protocol import results as R
from protocol.rows import model_row
from providers.catalog import Catalog, default_catalog, load_catalog
from tests.daemon.test_results import check


def test_every_offline_row_has_the_declared_shape() -> None:
    rows = check("models.list", catalog_models())
    assert {(r["provider"], r["model"]) for r in rows} == {
        (m.provider, m.id) for m in default_catalog().models_of(None)
    }
    for provider in default_catalog().providers:
        mine = check("models.list", catalog_models(provider), list[R.ModelRow])
        assert mine == [r for r in rows if r["provider"] == provider]


def test_rows_are_copies_the_catalog_keeps_its_own() -> None:
    rows = catalog_models("anthropic")
    with_aliases = next(r for r in rows if r["aliases"])
    with_aliases["aliases"].append("changed")
    assert "changed" not in catalog_models("anthropic")[rows.index(with_aliases)]["aliases"]


def test_an_unknown_provider_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"unknown provider 'nope' \(providers: anthropic, "):
        catalog_models("nope")


# ------------------------------------------------------------------ one builder for both


CONFIGS: dict[str, dict[str, Any]] = {
    "custom chat, no key, dialect, default model and its limits": {
        "lbox": {
            "base_url": "http://gpu.lan:8080/v1/",
            "api": "chat",
            "key_env": None,
            "dialect": ["reasoning_content", "max_tokens_field", "reasoning_content"],
            "default_model": "served.gguf",
            "models": {"served.gguf": {"context_window": 8192, "max_output_tokens": 1024}},
        }
    },
    "custom messages with one key variable": {
        "lanth": {
            "base_url": "https://proxy.example/anthropic",
            "api": "messages",
            "key_env": "PROXY_KEY",
            "default_model": "claude-proxy/high",
        }
    },
    "custom responses and generate_content with key lists": {
        "resp": {"base_url": "http://127.0.0.1:9", "api": "responses", "key_env": ["A_KEY", "B_KEY"]},
        "gem": {"base_url": "http://127.0.0.1:9/g", "api": "generate_content", "key_env": []},
    },
    "api pins": {"openai": {"api": "chat"}, "google": {"api": "chat", "base_url": "http://g.lan/v1"}},
    "catalog provider overrides": {
        "ollama": {"base_url": "http://gpu.lan:11434/v1/", "key_env": ["OLLAMA_KEY"], "dialect": ["no_stream_usage"]},
        "deepseek": {"key_env": None},
        "xai": {"key_env": "MY_XAI"},
        "anthropic": {"extra_headers": {"x-a": "b"}, "read_timeout": 30},
    },
    "default models and per-model limits on catalog providers": {
        "openai": {
            "default_model": "my-ft",
            "models": {"my-ft": {"context_window": 16_384, "max_output_tokens": 2048}, "gpt-4o": {}},
        },
        "openrouter": {"default_model": "vendor/model-x", "models": {"vendor/model-y": {"context_window": 9000}}},
        "anthropic": {"models": {"claude-sonnet-4-5": {"context_window": 100_000}}},
        "google": {"models": {"gemini-2.5-flash": {"max_output_tokens": 1000}}},
    },
}


def _rows(catalog: Catalog) -> list[R.ModelRow]:
    return [model_row(m, catalog) for m in catalog.models_of(None)]


@pytest.mark.parametrize("section", CONFIGS.values(), ids=list(CONFIGS))
def test_offline_builds_the_catalog_the_daemon_builds(section, tmp_path, monkeypatch):
    from daemon.config import build_catalog, parse_config

    text = json.dumps({"providers": section})
    (tmp_path / "config.json").write_text(text)
    daemon = build_catalog(parse_config(text, tmp_path / "config.json"))
    offline = configured_catalog(tmp_path / "config.json")
    assert offline.providers == daemon.providers
    assert _rows(offline) == _rows(daemon)
    # each case changes the catalog, so an entry either side left out shows
    shipped = load_catalog()
    assert (daemon.providers, _rows(daemon)) != (shipped.providers, _rows(shipped))
    # what ikictl models --offline prints is those rows
    monkeypatch.setenv("IKIGAI_HOME", str(tmp_path))
    for var in ("IKIGAI_CONFIG", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    assert catalog_models() == _rows(daemon)


def test_both_read_every_setting_of_the_section():
    section = {**CONFIGS["custom chat, no key, dialect, default model and its limits"], **CONFIGS["api pins"]}
    for catalog in (configured_catalog_of(section), _daemon_catalog(section)):
        lbox = catalog.providers["lbox"]
        assert (lbox.api, lbox.base_url, lbox.key_env, lbox.dialect, lbox.slash_models) == (
            "chat", "http://gpu.lan:8080/v1", [], ["reasoning_content", "max_tokens_field"], True
        )
        assert catalog.limits("lbox", "served.gguf") == (8192, 1024, "config")
        assert catalog.wire_api("openai", "gpt-5") == "chat"  # the catalog's is responses
        assert catalog.providers["google"].base_url == "http://g.lan/v1"


def configured_catalog_of(section: dict[str, Any]) -> Catalog:
    from providers.configured import configured_catalog as build

    return build(section)


def _daemon_catalog(section: dict[str, Any]) -> Catalog:
    from daemon.config import build_catalog, parse_config

    return build_catalog(parse_config(json.dumps({"providers": section})))


def test_offline_skips_what_it_cannot_use_and_keeps_the_rest(tmp_path):
    section = {
        "ok": {"base_url": "http://ok.lan/v1", "api": "chat", "default_model": "m"},
        "no-api": {"base_url": "http://x.lan/v1"},
        "no-url": {"api": "chat"},
        "ftp": {"base_url": "ftp://x.lan", "api": "chat"},
        "bad-api": {"base_url": "http://x.lan", "api": "soap"},
        "a/b": {"base_url": "http://x.lan", "api": "chat"},
        "": {"base_url": "http://x.lan", "api": "chat"},
        "text": "http://x.lan",
        "openai": {
            "api": ["chat"],
            "base_url": 3,
            "key_env": [1, "K"],
            "dialect": "no_stream_usage",
            "default_model": 5,
            "models": {"gpt-4o": {"context_window": True, "max_output_tokens": "many"}, "x": 7, "gpt-4o-mini/high": {"context_window": 9000}},
        },
        "anthropic": {"models": [1, 2], "default_model": "a//b"},
        "google": {"models": {"gemini-2.5-flash": {"context_window": 0, "max_output_tokens": -5}}},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"providers": section}))
    catalog = configured_catalog(path)
    shipped = load_catalog()
    assert set(catalog.providers) == {*shipped.providers, "ok"}
    assert [m.id for m in catalog.models_of("ok")] == ["m"]
    assert {p: e for p, e in catalog.providers.items() if p != "ok"} == shipped.providers
    assert [r for r in _rows(catalog) if r["provider"] != "ok"] == _rows(shipped)


@pytest.mark.parametrize(
    "text", [b"", b"   ", b"{not json", b"[1, 2]", b'"text"', b'{"providers": [1]}', b'{"providers": null}', b"\xff\xfe{", b"[" * 100_000]
)
def test_offline_reads_any_file_as_the_shipped_catalog(text, tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(text)
    assert _rows(configured_catalog(path)) == _rows(load_catalog())
    assert _rows(configured_catalog(tmp_path / "missing.json")) == _rows(load_catalog())
    assert _rows(configured_catalog(tmp_path)) == _rows(load_catalog())  # a folder


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 1 << 40) | st.floats() | st.text(max_size=12)
    | st.sampled_from(["chat", "messages", "http://h.lan/v1", "no_stream_usage", "m/high", "a/b/c"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(
        st.sampled_from(
            ["api", "base_url", "key_env", "dialect", "default_model", "models", "context_window", "max_output_tokens", "x"]
        )
        | st.text(max_size=6),
        inner,
        max_size=6,
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(section=st.dictionaries(st.sampled_from(["openai", "anthropic", "openrouter", "own", "a/b", ""]) | st.text(max_size=6), _JSON, max_size=5))
def test_any_providers_section_builds_a_catalog(section):
    catalog = configured_catalog_of(section)
    assert set(load_catalog().providers) <= set(catalog.providers)
    for row in _rows(catalog):
        assert row["context_window"] >= 1 and row["max_output_tokens"] >= 1
