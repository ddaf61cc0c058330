"""Cohere2 (Command R7B, Command A): interleaved sliding-window attention.

transformers 4.57.1 models/cohere2/configuration_cohere2.py::Cohere2Config builds `layer_types` from
`sliding_window_pattern` (default 4) when a config has none: layer i is "full_attention" when
(i + 1) % pattern == 0, "sliding_attention" otherwise. vLLM 0.25.0 model_executor/models/commandr.py::CohereAttention
gives a cohere2 layer the sliding window only where `config.layer_types[layer_idx] == "sliding_attention"`.
"""

from __future__ import annotations

import pytest

from configurator.model import catalog
from configurator.model.hf_config import read_model_spec

# A small cohere2 config in the shape of the catalog's Command R7B copy (a pattern, no layer_types).
BASE = {
    "architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "hidden_size": 1024, "intermediate_size": 2048,
    "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 8192,
    "sliding_window": 512,
}


def _kinds(config: dict) -> list[str]:
    return [g.kind for g in read_model_spec(config, name="test/cohere2").layers]


@pytest.mark.parametrize("layers,pattern", [(8, 4), (12, 3), (9, 4)])
def test_every_pattern_th_layer_is_full_attention(layers, pattern):
    got = _kinds({**BASE, "num_hidden_layers": layers, "sliding_window_pattern": pattern})
    assert got == ["full" if (i + 1) % pattern == 0 else "sliding" for i in range(layers)]


def test_the_pattern_defaults_to_4_as_in_cohere2config():
    assert _kinds({**BASE, "num_hidden_layers": 8}) == ["sliding"] * 3 + ["full"] + ["sliding"] * 3 + ["full"]


def test_sliding_layers_keep_the_window_and_full_layers_none():
    m = read_model_spec({**BASE, "num_hidden_layers": 4, "sliding_window_pattern": 4}, name="test/cohere2")
    assert [g.window for g in m.layers] == [512, 512, 512, None]


def test_layer_types_when_present_win_over_the_pattern():
    types = ["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"]
    got = _kinds({**BASE, "num_hidden_layers": 4, "sliding_window_pattern": 4, "layer_types": types})
    assert got == ["full", "sliding", "sliding", "sliding"]


def test_catalog_cohere2_entries_keep_full_attention_layers():
    """Every cohere2 entry of the catalog (chosen by model_type) reads with the pattern's full layers."""
    entries = [e for e in catalog.entries() if e.config.get("model_type") == "cohere2"]
    for e in entries:
        spec = e.spec()
        n = e.config["num_hidden_layers"]
        p = int(e.config.get("sliding_window_pattern") or 4)
        types = e.config.get("layer_types") or ["sliding_attention" if (i + 1) % p else "full_attention"
                                                 for i in range(n)]
        assert [g.kind for g in spec.layers] == ["sliding" if t == "sliding_attention" else "full" for t in types]
