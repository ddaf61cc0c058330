"""Kimi Delta Attention (KDA) layers are linear-attention state, the others MLA (Kimi-Linear, Kimi K3).

vLLM 0.33.0 vllm/models/kimi_k3/nvidia/model.py::KimiDecoderLayer: config.is_kda_layer(i) ->
KDA (a MambaSpec from kda_state_shape / kda_state_dtype), else MultiHeadLatentAttention.
"""

from configurator.estimate import EstimateRequest, estimate
from tests.model_reader._fixtures import kinds, kv_bytes_per_token, spec

KIMI_LINEAR = "moonshotai__Kimi-Linear-48B-A3B-Instruct"


def test_kimi_linear_reads_20_kda_and_7_mla_layers():
    m = spec(KIMI_LINEAR)
    assert kinds(m) == {"mamba": 20, "mla": 7}
    mla = sorted(g.index for g in m.layers if g.kind == "mla")
    assert mla == [3, 7, 11, 15, 19, 23, 26]  # full_attn_layers are 1-based
    # 7 x (512 + 64) x 2 B = 8,064 B per token, not 27 x 1,152 = 31,104 (every layer as MLA)
    assert kv_bytes_per_token(m) == 8_064


def test_kda_state_is_float32_recurrent_and_model_dtype_conv():
    m = spec(KIMI_LINEAR)
    g = next(g for g in m.layers if g.kind == "mamba")
    assert g.mamba is not None and g.mamba.variant == "kda"
    conv, ssm = g.mamba.state_elements(tp=1)
    assert conv == 3 * (3 * 32 * 128)  # (kernel - 1) x (q, k, v) x heads x head_dim
    assert ssm == 32 * 128 * 128
    r = estimate(EstimateRequest(model=m, gpu="h100", vllm_version="0.33.0",
                                 flags={"max_model_len": 8192, "kv_cache_memory_bytes": 8 << 30}))
    # conv in bf16 + the recurrent state in float32 (kda_state_dtype 'auto'): 73,728 + 2,097,152 B a layer
    assert r.kv_cache.state_bytes_per_sequence == 20 * (conv * 2 + ssm * 4)
    assert r.kv_cache.bytes_per_token == 8_064


def test_user_mamba_ssm_cache_dtype_overrides_kda_float32():
    m = spec(KIMI_LINEAR)
    g = next(g for g in m.layers if g.kind == "mamba")
    conv, ssm = g.mamba.state_elements(tp=1)
    r = estimate(EstimateRequest(model=m, gpu="h100", vllm_version="0.33.0",
                                 flags={"max_model_len": 8192, "kv_cache_memory_bytes": 8 << 30,
                                        "mamba_ssm_cache_dtype": "bfloat16"}))
    assert r.kv_cache.state_bytes_per_sequence == 20 * (conv * 2 + ssm * 2)


def test_kimi_k3_reads_69_kda_and_24_mla_layers():
    m = spec("moonshotai__Kimi-K3")
    assert m.model_type == "kimi_linear" and m.is_mla
    assert kinds(m) == {"mamba": 69, "mla": 24}
    # 24 x 1,152 B = 27,648 B per token (every layer as MLA gave 93 x 1,152 = 107,136)
    assert kv_bytes_per_token(m) == 27_648


def test_kimi_k3_mxfp4_experts_read_as_4_25_bits():
    # compressed-tensors float4 weights with group_size 32 (mxfp4-pack-quantized): one e8m0 scale per 32
    assert spec("moonshotai__Kimi-K3").quant.weight_bits == 4.25


def test_kda_prefix_caching_uses_align_not_all_mode():
    # vllm 0.24.0 model_executor/models/config.py: 'all' Mamba cache mode only for models implementing
    # SupportsMambaPrefixCaching (the Mamba1/Mamba2 families); Kimi-Linear falls back to 'align':
    # two state blocks per request, not one per block of context
    m = spec(KIMI_LINEAR)
    assert not m.mamba_all_mode_capable
    flags = {"max_model_len": 32768, "kv_cache_memory_bytes": 20 << 30}
    on = estimate(EstimateRequest(model=m, gpu="h100", vllm_version="0.24.0",
                                  flags={**flags, "enable_prefix_caching": True})).kv_cache
    off = estimate(EstimateRequest(model=m, gpu="h100", vllm_version="0.24.0",
                                   flags={**flags, "enable_prefix_caching": False})).kv_cache
    assert on.block_size == off.block_size  # no lcm(chunk size) rounding of 'all' mode
    assert on.blocks_per_request - off.blocks_per_request == 3  # 3 state groups x (2 - 1) blocks


def test_nemotron_h_keeps_all_mode():
    assert spec("nvidia__NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16").mamba_all_mode_capable
