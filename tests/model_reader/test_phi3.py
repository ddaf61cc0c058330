"""Phi-3: one model-level sliding window on every layer; Phi-3-small's block-sparse attention keeps full KV.

vLLM 0.33.0 model_executor/models/llama.py (Phi3ForCausalLM is a Llama) passes a per-layer window
only from layer_types; without it Attention takes cache_config.sliding_window, the config's
sliding_window, for every layer (model_executor/layers/attention/attention.py). Phi3SmallForCausalLM
(model_executor/models/phi3_small.py, 0.7.3) passes blocksparse_params to a plain Attention: every
layer caches full K and V; vLLM served the architecture until 0.9.2.
"""

from tests.model_reader._fixtures import kinds, kv_bytes_per_token, spec


def test_phi3_medium_slides_every_layer_at_2047():
    m = spec("microsoft__Phi-3-medium-4k-instruct")
    assert kinds(m) == {"sliding": 40}
    assert {g.window for g in m.layers} == {2047}
    assert kv_bytes_per_token(m) == 40 * 10 * (128 + 128) * 2  # 204,800 B


def test_phi3_small_keeps_full_kv_on_every_layer():
    m = spec("microsoft__Phi-3-small-8k-instruct")
    assert kinds(m) == {"full": 32}
    assert kv_bytes_per_token(m) == 32 * 8 * (128 + 128) * 2  # 131,072 B
    assert m.intermediate_size == 14336  # ff_intermediate_size, not 4 x hidden
    assert any("served Phi3SmallForCausalLM until 0.9.2" in n for n in m.notes)
