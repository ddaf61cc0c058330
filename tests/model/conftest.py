"""Fixtures of the model tests: the catalog with a fixture part in place of profiles/models/catalog/."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "data" / "catalog"


@pytest.fixture
def fixture_catalog(monkeypatch):
    """The built-in profiles plus tests/model/data/catalog/families-test.json (entries copied from the cata
    branch's families-a.json with their config_source, and one built-in id repeated on purpose)."""
    from configurator.model import catalog, derivatives

    monkeypatch.setattr(catalog, "catalog_dir", lambda: FIXTURE)
    catalog.clear_cache()
    derivatives._bases.cache_clear()
    yield
    catalog.clear_cache()
    derivatives._bases.cache_clear()
