"""DeepSeek-V4: a sliding window of the latent on every layer, plus compressed latents and indexer keys.

vLLM 0.33.0 vllm/models/deepseek_v4/attention.py: DeepseekV4SWACache (SlidingWindowMLASpec,
sliding_window tokens of the 512-wide latent) on every layer; compress ratio r > 1 adds an
MLAAttentionSpec with tokens_per_state = r; ratio 4 adds DeepseekV4IndexerCache (132 B per state,
tokens_per_state 4). transformers_utils/deepseek_v4_utils.py::get_compress_ratios reads
compress_ratios; is_deepseek_mla calls such a model MLA when head_dim is set.
"""

from configurator.estimate import EstimateRequest, estimate
from tests.model_reader._fixtures import fixture, spec

FLASH = "deepseek-ai__DeepSeek-V4-Flash"


def test_v4_flash_layers():
    ratios = fixture(FLASH)["config"]["compress_ratios"][:43]
    m = spec(FLASH)
    assert m.is_mla and m.head_dim == 512
    assert sum(g.kind == "sliding" for g in m.layers) == 43  # the window on every layer
    compressed = [g for g in m.layers if g.why.startswith("compressed latent")]
    assert len(compressed) == sum(r > 1 for r in ratios) == 41
    assert len([g for g in m.layers if g.why.startswith("DSA indexer")]) == ratios.count(4) == 21


def test_v4_flash_grows_6229_bytes_per_token_beyond_the_window():
    m = spec(FLASH)
    r = estimate(EstimateRequest(model=m, gpu="b200", vllm_version="0.33.0",
                                 flags={"max_model_len": 131072, "kv_cache_memory_bytes": 40 << 30}))
    # 21 x (1,024 / 4 + 132 / 4) + 20 x 1,024 / 128 = 6,229 B (bf16 latents, fp8 indexer keys);
    # before, every layer read as a 128-token window and nothing grew with the context
    assert r.kv_cache.bytes_per_token == 6_229
    assert r.kv_cache.window_bytes_per_sequence > 0


def test_v4_weight_bits_follow_the_fp4_experts():
    # expert_dtype 'fp4' with an fp8 quantization_config: MXFP4 experts (vllm 0.33.0
    # models/deepseek_v4/quant_config.py), most of the parameters -> 4.25 bits, not 8
    assert spec(FLASH).quant.weight_bits == 4.25
    # ModelOpt MIXED_PRECISION in config.json's own quantization_config: NVFP4 experts -> 4.5, not 8
    assert spec("nvidia__DeepSeek-V4-Flash-NVFP4").quant.weight_bits == 4.5
