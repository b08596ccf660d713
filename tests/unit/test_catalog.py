from __future__ import annotations

import json
from pathlib import Path

import pytest

from providers.catalog import CatalogError, default_catalog, load_catalog
from providers.catalog._schema import CatalogFile

CATALOG = default_catalog()


def test_every_shipped_file_decodes_and_cites_its_sources():
    for path in sorted(Path("providers/catalog").glob("*.json")):
        data = json.loads(path.read_text())
        assert data["sources"], path
        for model in data["models"]:
            assert model.get("source") in data["sources"], (path.name, model["id"])


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-sonnet-4-5", "anthropic"),
        ("claude-some-future-model", "anthropic"),
        ("gpt-4o", "openai"),
        ("gpt-9-turbo", "openai"),
        ("o1-preview", "openai"),
        ("o3", "openai"),
        ("o4-mini", "openai"),
        ("chatgpt-4o-latest", "openai"),
        ("gemini-2.5-flash", "google"),
        ("grok-3-mini", "xai"),
        ("deepseek-chat", "deepseek"),
        ("llama-4-maverick", "meta"),
        ("llama-3.3-70b-versatile", "groq"),  # in the catalog under Groq
        ("some-unheard-of-model", None),
    ],
)
def test_provider_inference(model, provider):
    assert CATALOG.infer_provider(model) == provider


def test_lookup_by_alias_and_dated_snapshot():
    assert CATALOG.lookup("anthropic", "claude-sonnet-4-5-20250929").id == "claude-sonnet-4-5"
    assert CATALOG.lookup("openai", "gpt-4o-2099-01-01").id == "gpt-4o"  # unknown snapshot: its family
    assert CATALOG.lookup("openai", "claude-sonnet-4-5") is None


def test_unknown_model_gets_provider_default():
    entry, known = CATALOG.entry_or_default("anthropic", "claude-brand-new")
    assert not known
    assert (entry.id, entry.provider) == ("claude-brand-new", "anthropic")
    assert entry.max_output_tokens > 0 and entry.context_window > 0


def test_wire_api_per_model():
    assert CATALOG.wire_api("openai", "gpt-4o") == "chat"
    assert CATALOG.wire_api("openai", "o3") == "responses"
    assert CATALOG.wire_api("anthropic", "claude-sonnet-4-5") == "messages"
    assert CATALOG.wire_api("google", "gemini-2.5-pro") == "generate_content"
    assert CATALOG.wire_api("deepseek", "deepseek-chat") == "chat"


def test_prices_present_for_seeded_families():
    for model in ("gpt-4o", "claude-sonnet-4-5", "gemini-2.5-pro"):
        entry = CATALOG.lookup(CATALOG.infer_provider(model), model)
        assert entry.prices is not None and entry.prices.input > 0 and entry.prices.output > 0


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "bad.json"
    p.write_text(text)
    return p


def test_catalog_file_that_fails_to_parse(tmp_path):
    with pytest.raises(CatalogError, match=r"bad\.json is not valid"):
        load_catalog([_write(tmp_path, "{not json")])


def test_catalog_file_with_wrong_field(tmp_path):
    body = {"retrieved": "x", "sources": {}, "models": [{"id": "m", "context_window": "big"}]}
    with pytest.raises(CatalogError, match=r"context_window"):
        load_catalog([_write(tmp_path, json.dumps(body))])


def test_catalog_model_with_unknown_source(tmp_path):
    body = {
        "retrieved": "x",
        "sources": {"a": "docs"},
        "provider": "p",
        "providers": [{"name": "p", "label": "P", "api": "chat", "base_url": "http://x"}],
        "models": [{"id": "m", "context_window": 1, "max_output_tokens": 1, "source": "zzz"}],
    }
    with pytest.raises(CatalogError, match=r"unknown source 'zzz'"):
        load_catalog([_write(tmp_path, json.dumps(body))])


def test_schema_is_strict():
    import msgspec

    with pytest.raises(msgspec.ValidationError, match="unknown field `surprise`"):
        msgspec.json.decode(b'{"retrieved": "x", "sources": {}, "surprise": 1}', type=CatalogFile)
