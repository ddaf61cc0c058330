"""Every reader fixture is a real config with its source recorded, and it loads."""

import json

import pytest

from configurator.model.hf_config import read_model_spec
from tests.model_reader._fixtures import CONFIGS

FILES = sorted(CONFIGS.glob("*.json"))


def test_there_are_fixtures():
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_fixture_has_provenance_and_loads(path):
    data = json.loads(path.read_text())
    source = data["config_source"]
    assert source.startswith(("pypi:", "github:", "search index")), source
    if "hf_quant_config" in data:
        assert data["hf_quant_config_source"].startswith("pypi:")
    m = read_model_spec(data["config"], name=data["hf_id"], hf_quant_config=data.get("hf_quant_config"))
    assert m.layers
