"""mllama: the cross-attention layers count among num_hidden_layers, and vLLM ran it on V0 only.

vLLM 0.10.1.1 model_executor/models/mllama.py: MllamaForConditionalGeneration is SupportsV0Only;
the V0 CacheEngine (worker/cache_engine.py) sizes every block over
ModelConfig.get_num_layers_by_block_type = num_hidden_layers, cross-attention layers included.
0.10.2 is the last release that served it (registry _PREVIOUSLY_SUPPORTED_MODELS, 0.33.0).
"""

from tests.model_reader._fixtures import fixture, kinds, kv_bytes_per_token, spec

VISION_90B = "meta-llama__Llama-3.2-90B-Vision-Instruct"


def test_llama32_vision_counts_cross_attention_layers():
    cross = fixture(VISION_90B)["config"]["text_config"]["cross_attention_layers"]
    m = spec(VISION_90B)
    assert len(cross) == 20 and kinds(m) == {"full": 100}
    assert kv_bytes_per_token(m) == 100 * 8 * (128 + 128) * 2  # 409,600 B
    assert any("20 of 100 layers are cross-attention" in n for n in m.notes)
    # the registry lists the last release that served it (0.10.2), not the one that dropped it
    assert any("served MllamaForConditionalGeneration until 0.10.2" in n for n in m.notes)
