"""``ikictl models --offline`` rows: built by protocol.rows.model_row, exactly
the shape protocol.results declares for ``models.list``, for every provider."""

from __future__ import annotations

import pytest

from ikictl._errors import UsageError
from ikictl.offline import catalog_models
from protocol import results as R
from providers.catalog import default_catalog
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
