"""Nemotron-H declared as a `layers_block_type` list (Nemotron-3 Ultra), with no num_hidden_layers.

transformers==5.24.0 models/nemotron_h/configuration_nemotron_h.py: num_hidden_layers is the list's
length and hybrid_override_pattern is derived from it (mamba -> M, attention -> *, moe -> E,
mlp -> -); vLLM 0.33.0 model_executor/models/nemotron_h.py builds one layer per pattern character.
"""

from tests.model_reader._fixtures import fixture, kinds, kv_bytes_per_token, spec

ULTRA = "nvidia__NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"


def test_ultra_reads_layer_count_and_kinds_from_layers_block_type():
    blocks = fixture(ULTRA)["config"]["layers_block_type"]
    m = spec(ULTRA)
    assert m.num_hidden_layers == len(blocks)
    assert kinds(m) == {"mamba": blocks.count("mamba"), "full": blocks.count("attention")}
    assert kinds(m) == {"mamba": 48, "full": 12}
    assert kv_bytes_per_token(m) == 12 * 2 * (128 + 128) * 2  # 12,288 B: 12 GQA layers, 2 KV heads
    assert m.text_config["hybrid_override_pattern"].count("E") == blocks.count("moe")


def test_ultra_mamba2_state_geometry():
    m = spec(ULTRA)
    g = next(g for g in m.layers if g.kind == "mamba")
    assert g.mamba is not None and g.mamba.variant == "mamba2"
    assert (g.mamba.num_heads, g.mamba.head_dim, g.mamba.n_groups, g.mamba.state_size) == (256, 64, 8, 128)
