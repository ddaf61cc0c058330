"""Weights and feature memory built from vLLM source facts on small synthetic configs (counted by hand).

Each expectation is computed here from the tensor shapes vLLM's modules allocate (files cited), not
copied from the tool's output, so a change in the counting rule makes these fail.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from configurator.estimate.features import plan_features, plan_parallel, unmodelled_layout
from configurator.estimate.pipeline import estimate
from configurator.estimate.result import EstimateRequest
from configurator.memory.weights import count_params, expert_bytes_per_param, weight_bytes
from configurator.model.hf_config import read_model_spec
from configurator.units import cdiv

H, E, INTER, L, VOCAB = 256, 8, 128, 2, 1024  # a tiny Qwen3-MoE-shaped model (dims multiples of 64)


def _moe_config(**extra) -> dict:
    c = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": H,
         "num_hidden_layers": L, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
         "intermediate_size": 512, "moe_intermediate_size": INTER, "num_experts": E, "num_experts_per_tok": 2,
         "vocab_size": VOCAB, "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
         "tie_word_embeddings": False, "hidden_act": "silu", "rope_theta": 1e6}
    return c | extra


def _moe():
    return read_model_spec(_moe_config(), name="synthetic/tiny-moe")


def test_router_is_whole_on_every_tp_rank():
    # qwen3_moe.py (0.25.0): self.gate = ReplicatedLinear(hidden, num_experts, quant_config=None): H x E on each
    # rank, while attention, experts, embedding and lm_head are split by TP
    m = _moe()
    w1 = weight_bytes(m, tp=1, pp=1, dtype="bfloat16")
    w2 = weight_bytes(m, tp=2, pp=1, dtype="bfloat16")
    router = L * H * E * 2
    norms = L * 2 * H * 2
    rope = w1.per_rank_bytes - (w1.total_bytes)  # the RoPE cache buffer, on every rank, not in the total
    # per rank at TP 2: half of everything split, the router and norms whole
    split_tp1 = w1.total_bytes - router - norms
    assert w2.per_rank_bytes == split_tp1 // 2 + router + norms + rope
    # the checkpoint (total) holds one router per layer, whatever the TP
    assert w2.total_bytes == w1.total_bytes


def test_router_not_counted_tp_times_in_checkpoint_share():
    # a known checkpoint size is shared out by per-rank / total: with one router copy in the total, TP 4 gives
    # each rank a quarter of the split part plus the whole router
    m = _moe()
    cfg = weight_bytes(m, tp=4, pp=1, dtype="bfloat16")
    ck = weight_bytes(replace(m, weights_bytes=cfg.total_bytes), tp=4, pp=1, dtype="bfloat16")
    assert ck.source == "checkpoint"
    assert abs(ck.per_rank_bytes - cfg.per_rank_bytes) <= 1


def test_expert_bytes_per_param_is_the_weights_rule():
    # features (DP / EP) and the weights take routed experts at the same width: bf16 2 B, fp8 1 B, MXFP4 e2m1
    # + e8m0 per 32 (quantization/mxfp4.py Mxfp4MoEMethod.create_weights)
    m = _moe()
    assert expert_bytes_per_param(m, None, "bfloat16") == 2
    assert expert_bytes_per_param(m, "fp8", "bfloat16") == 1
    fp8_fp4 = read_model_spec(_moe_config(expert_dtype="fp4", quantization_config={
        "quant_method": "fp8", "weight_block_size": [128, 128]}), name="synthetic/fp8-fp4-experts")
    assert expert_bytes_per_param(fp8_fp4, None, "bfloat16") == 0.5 + 1 / 32


def test_expert_parallel_weights_per_rank_from_the_shared_rule():
    # EP over TP 2: 8 experts -> 4 whole experts per rank (expert_map_manager.py determine_expert_map); the
    # expert bytes equal plain TP's half, so EP moves nothing for an even split
    m = _moe()
    par = plan_parallel(m, {"enable_expert_parallel": True}, tp=2, dtype="bfloat16", layers=range(L))
    assert par.local_experts == E // 2 and par.split == 1
    assert par.tp_expert_bytes == L * E * 3 * H * INTER * 2 // 2
    assert par.weights_delta == 0
    # with DP 2 x TP 2 and EP: 2 experts per GPU, half of TP 2's expert bytes
    par = plan_parallel(m, {"enable_expert_parallel": True, "data_parallel_size": 2}, tp=2, dtype="bfloat16",
                        layers=range(L))
    assert par.local_experts == 2
    assert par.weights_delta == -(L * E * 3 * H * INTER * 2 // 4)


def _csa_config() -> dict:
    # compressed sparse attention with grouped low-rank output (the config keys DeepSeek-V4 uses), tiny
    return {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "hidden_size": H,
            "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 128,
            "q_lora_rank": 64, "o_groups": 2, "o_lora_rank": 64, "qk_rope_head_dim": 64, "index_head_dim": 128,
            "index_n_heads": 4, "index_topk": 16, "compress_ratios": [0, 4, 128], "sliding_window": 128,
            "moe_intermediate_size": INTER, "n_routed_experts": E, "n_shared_experts": 1, "num_experts_per_tok": 2,
            "vocab_size": VOCAB, "max_position_embeddings": 4096, "torch_dtype": "bfloat16", "hidden_act": "silu",
            "tie_word_embeddings": False, "expert_dtype": "fp4",
            "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128], "fmt": "e4m3"}}


def test_compressed_sparse_attention_linears_from_vllm_shapes():
    # vllm/models/deepseek_v4/attention.py (0.25.0): fused_wqa_wkv H x (q_rank + head_dim) replicated; wq_b
    # q_rank x heads x head_dim, wo_a heads x head_dim / groups x groups x o_rank, wo_b groups x o_rank x H; the
    # ratio-4 layer's indexer wq_b q_rank x index_heads x index_head_dim (replicated)
    m = read_model_spec(_csa_config(), name="synthetic/tiny-csa")
    p = count_params(m)
    q, hd, g, o, heads = 64, 128, 2, 64, 4
    split = q * heads * hd + (heads * hd // g) * g * o + g * o * H
    repl = H * (q + hd)
    assert p.per_layer_attention[0] == split + repl
    assert p.per_layer_attention[1] == split + repl + q * 4 * 128
    assert p.per_layer_replicated[1] == repl + q * 4 * 128
    # compressors are 16-bit (quant_config=None): ratio 128 layer: fused_wkv_wgate H x 2 x 1 x head_dim + ape
    assert p.per_layer_other[2] == 2 * H + H * 2 * hd + 2 * 128 * hd


def test_fp8_checkpoint_with_fp4_experts_keeps_linears_fp8():
    # quant_config.py DeepseekV4FP8Config: FP8 block linears, Mxfp4MoEMethod for the routed experts. At TP 2 with
    # EP off, one layer's bytes = attention split at 1 B / 2 + replicated at 1 B + shared expert 1 B / 2 +
    # MXFP4 experts (Triton path on sm90: intermediate padded to 64, here already) + 16-bit router / norms
    m = read_model_spec(_csa_config(), name="synthetic/tiny-csa")
    p = count_params(m)
    w = weight_bytes(m, tp=2, pp=1, dtype="bfloat16", compute_capability=90)
    shared = 3 * H * INTER
    experts = E * 3 * H * cdiv(INTER, 2) * (0.5 + 1 / 32)
    layers = sum((p.per_layer_attention[i] - p.per_layer_replicated[i]) / 2 + p.per_layer_replicated[i]
                 + shared / 2 + experts + H * E * 2 + p.per_layer_other[i] * 2 for i in range(3))
    vocab = cdiv(VOCAB, 64) * 64
    assert w.per_rank_bytes == pytest.approx(layers + 2 * vocab * H * 2 / 2, abs=2)


def test_unmodelled_kv_layout_is_named_not_dropped():
    m = read_model_spec(_csa_config(), name="synthetic/tiny-csa")
    assert unmodelled_layout(m) and "compress_ratios" in unmodelled_layout(m)
    assert unmodelled_layout(_moe()) is None
    feats = plan_features(m, {}, version="0.25.0", dtype="bfloat16", tp=1, layers=range(3), num_tokens=2048)
    assert any("not-modelled" in w and "compress_ratios" in w for w in feats.warnings())


def test_unmodelled_layout_reaches_the_estimate_warnings():
    r = estimate(EstimateRequest(model="deepseek-ai/DeepSeek-V4-Flash", gpu="B200", vllm_version="0.25.0",
                                 flags={"tensor_parallel_size": 8, "max_model_len": 32768}))
    assert any("compress_ratios" in w for w in r.warnings)


# ---- a flag the estimate cannot model is named, never dropped -------------------------------------------------

@pytest.mark.parametrize(("key", "value", "needle"), [
    ("decode_context_parallel_size", 2, "--decode-context-parallel-size"),
    ("enable_tower_connector_lora", True, "--enable-tower-connector-lora"),
    ("moe_backend", "deep_gemm_mega_moe", "--moe-backend"),
    ("enable_lora_bias", True, "--enable-lora-bias"),
])
def test_unmodelled_feature_flag_is_named(key, value, needle):
    r = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="H100-80GB", vllm_version="0.25.0",
                                 flags={"max_model_len": 8192, key: value}))
    assert any(w.startswith("not-modelled:") and needle in w for w in r.warnings)


@pytest.mark.parametrize(("key", "value"), [("decode_context_parallel_size", 1), ("enable_tower_connector_lora", False),
                                            ("moe_backend", "auto")])
def test_feature_flag_at_its_modelled_value_is_quiet(key, value):
    r = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="H100-80GB", vllm_version="0.25.0",
                                 flags={"max_model_len": 8192, key: value}))
    assert not any("not-modelled" in w for w in r.warnings)


def test_speculative_keys_not_read_are_named():
    # SpeculativeConfig.max_model_len / parallel_drafting are read by vLLM, not here; prompt_lookup_max is the
    # n-gram window (CPU): not named
    cfg = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "parallel_drafting": true}'
    r = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="H100-80GB", vllm_version="0.25.0",
                                 flags={"max_model_len": 8192, "speculative_config": cfg}))
    named = [w for w in r.warnings if "--speculative-config" in w]
    assert len(named) == 1 and "parallel_drafting" in named[0] and "prompt_lookup_max" not in named[0]


def test_drafter_buffers_from_the_proposer_shapes():
    # llm_base_proposer.py SpecDecodeBaseProposer.__init__ (0.25.0): input_ids int32 (T), positions int64 (T),
    # hidden_states and inputs_embeds (T, H) in the model dtype, slot mapping int64 (T)
    from configurator.memory.features import drafter_buffer_bytes
    t, h = 2048, 1024
    assert drafter_buffer_bytes(t, h, h, 2) == t * 4 + t * 8 + 2 * t * h * 2 + t * 8
    # M-RoPE drafts keep (3, T + 1) positions; a DeepSeek-V4 MTP draft's hidden_states are hc_mult wide
    assert drafter_buffer_bytes(t, h, h, 2, mrope=True) - drafter_buffer_bytes(t, h, h, 2) == 3 * (t + 1) * 8 - t * 8
    assert drafter_buffer_bytes(t, h, h, 2, hidden_mult=4) - drafter_buffer_bytes(t, h, h, 2) == 3 * t * h * 2


def test_mtp_drafter_buffers_are_explained_and_ngram_has_none():
    base = {"max_model_len": 8192, "max_num_batched_tokens": 4096}
    spec = '{"method": "%s", "num_speculative_tokens": 2}'
    mtp = estimate(EstimateRequest(model="Qwen/Qwen3.6-27B", gpu="H100-80GB", vllm_version="0.33.0",
                                   flags=base | {"speculative_config": spec % "mtp"}))
    assert any(line.startswith("drafter input buffers") for line in mtp.derivation)
    ngram = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="H100-80GB", vllm_version="0.33.0",
                                     flags=base | {"speculative_config": spec % "ngram"}))
    assert not any(line.startswith("drafter input buffers") for line in ngram.derivation)


# ---- compressed sparse attention: vLLM 0.25.0's fit check (v1/core/kv_cache_utils.py) -------------------------

def test_csa_fit_check_by_hand_on_a_small_layout():
    # 3 layers, ratios [0, 4, 128], fp8_ds_mla (584 B rows, pages padded to 576 B), block 256, window 128,
    # head 512, index head 128, L 1,000, T 512. Pages: SWA 64 x 584 -> 37,440; C4 latent 64 x 584 -> 37,440;
    # indexer 64 x 132 = 8,448 -> 8,640; C128 latent 2 x 584 -> 1,728; C4 state 4 x 2,048 x 4 B = 32,768 ->
    # 32,832; indexer state 4 x 512 x 4 = 8,192 -> 8,640; C128 state 8 x 1,024 x 4 -> 32,832.
    # Tuple counts: MLA 1, SWA 3, (4, 8) 1, (8, 128) 1 -> _approximate_gcd(lower bound 1) = 1 (no padding);
    # SWA splits into 3 groups. Pages per request: MLA cdiv(1000, 256) = 4; SWA cdiv(min(127 + 512, 1000), 64)
    # + 1 = 11 (x 3 groups); (4, 8): cdiv(519, 4) + 1 = 131; (8, 128): cdiv(639, 8) + 1 = 81.
    from configurator.memory.features import csa_fit_check_bytes
    need = csa_fit_check_bytes([0, 4, 128], num_layers=3, sliding_window=128, head_dim=512, index_head_dim=128,
                               max_model_len=1000, max_num_batched_tokens=512, block_size=256)
    assert need == 1 * (37440 + 8640 + 1728) * (4 + 3 * 11 + 131 + 81)


def test_csa_fit_check_grows_with_the_batch_not_only_the_length():
    # the compressor states are windows of coff x r tokens, but each request holds min(window - 1 + T, L) of
    # them: a larger max_num_batched_tokens asks more for the same max_model_len
    from configurator.memory.features import csa_fit_check_bytes
    kw = dict(num_layers=3, sliding_window=128, head_dim=512, index_head_dim=128, max_model_len=8192, block_size=256)
    assert csa_fit_check_bytes([0, 4, 128], max_num_batched_tokens=4096, **kw) > \
        csa_fit_check_bytes([0, 4, 128], max_num_batched_tokens=1024, **kw)


def test_unmodelled_layout_states_what_vllms_check_asks():
    m = read_model_spec(_csa_config(), name="synthetic/tiny-csa")
    text = unmodelled_layout(m, {"kv_cache_dtype": "fp8", "block_size": 256}, max_model_len=1000, num_tokens=512)
    assert "start-up check asks" in text and "1,000 tokens" in text


# ---- DP x PCP: the MoE layers see every rank's tokens in the profiling run ------------------------------------

def test_dp_moe_gather_by_hand_both_eras():
    from configurator.memory.features import dp_moe_gather_bytes
    t, ranks, k, inter, h = 1024, 4, 2, 256, 512
    n = 2 * inter
    # 0.10.1 fused_experts_impl: chunks of 32,768 (all 4,096 tokens here): cache13 (M, k, max(N, H)) + cache2
    # (M k, N / 2), plus the gathered input and the not-in-place output, each (M, H)
    old = dp_moe_gather_bytes(t, ranks, top_k=k, moe_intermediate_size=inter, hidden_size=h, moe_tp=1,
                              persistent_workspace=False)
    assert old == (ranks * t - t) * k * (max(n, h) + n // 2) * 2 + 2 * (ranks * t - t) * h * 2
    # 0.19+ WorkspaceManager: workspace13 (M, k, max(N / 2, H)) shared with the output, workspace2 (M, k, max(N, H))
    new = dp_moe_gather_bytes(t, ranks, top_k=k, moe_intermediate_size=inter, hidden_size=h, moe_tp=1,
                              persistent_workspace=True)
    assert new == (ranks * t - t) * (k * (max(n // 2, h) + max(n, h)) * 2 + h * 2)
    assert dp_moe_gather_bytes(t, 1, top_k=k, moe_intermediate_size=inter, hidden_size=h, moe_tp=1,
                               persistent_workspace=True) == 0
    # the 0.10.1 caches stop growing at the chunk: 40,000 gathered tokens cost the chunk's caches, not 40,000's
    big = dp_moe_gather_bytes(10_000, 4, top_k=k, moe_intermediate_size=inter, hidden_size=h, moe_tp=1,
                              persistent_workspace=False)
    assert big == (32768 - 10_000) * k * (max(n, h) + n // 2) * 2 + 2 * 30_000 * h * 2


def test_hyper_connections_and_the_mtp_residual_buffer():
    # models/deepseek_v4/nvidia/model.py (0.25.0): per layer hc_attn_fn / hc_ffn_fn (mix, hc x H) fp32, bases
    # (mix), scales (3), mix = (2 + hc) x hc; DeepseekV4Model._mtp_hidden_buffer (T, hc x H) in the model dtype,
    # allocated while loading (so in 'Model loading took'), with or without speculative decoding
    from configurator.estimate.features import model_load_buffers
    plain = read_model_spec(_csa_config(), name="synthetic/tiny-csa")
    hc = read_model_spec(_csa_config() | {"hc_mult": 4}, name="synthetic/tiny-csa-hc")
    mix = 6 * 4
    per_layer_fp32 = 2 * mix * 4 * H + 2 * mix + 6
    assert count_params(hc).per_layer_other[0] - count_params(plain).per_layer_other[0] == 2 * per_layer_fp32
    b, line = model_load_buffers(hc, 2048, "bfloat16")
    assert b == 2048 * 4 * H * 2 and "Model loading took" in line
    assert model_load_buffers(plain, 2048, "bfloat16") == (0, "")
    feats = plan_features(hc, {}, version="0.25.0", dtype="bfloat16", tp=1, layers=range(3), num_tokens=2048)
    assert feats.weights_bytes == b


def test_checkpoint_total_holds_one_copy_of_replicated_linears():
    # the total (what a checkpoint size is shared out by) counts replicated linears and routers once: at TP 2
    # total = split parts x 2 + replicated parts once, so total(TP 1) == total(TP 2)
    m = read_model_spec(_csa_config(), name="synthetic/tiny-csa")
    assert weight_bytes(m, tp=1, pp=1, dtype="bfloat16", compute_capability=90).total_bytes == \
        weight_bytes(m, tp=2, pp=1, dtype="bfloat16", compute_capability=90).total_bytes


def test_an_unmodelled_kv_layout_is_never_a_plain_fits():
    # the band's pessimistic end is no KV: vLLM's own per-request need for this layout is not modelled here, so a
    # configuration with room to spare by the tool's layout is `at-risk`, never `fits` (a refused record was `fits`)
    r = estimate(EstimateRequest(model="deepseek-ai/DeepSeek-V4-Flash", gpu="B200", vllm_version="0.25.0",
                                 flags={"tensor_parallel_size": 8, "max_model_len": 32768}))
    assert r.kv_cache_bytes_low <= 0 < r.memory.kv_cache_bytes
    assert r.verdict == "at-risk"
    assert any("layout is not modelled" in d for d in r.derivation)
    plain = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="B200", vllm_version="0.25.0",
                                     flags={"max_model_len": 32768}))
    assert plain.verdict == "fits" and plain.kv_cache_bytes_low > 0


def test_kv_cache_memory_bytes_is_never_at_risk_for_the_graph_pool_room():
    # with --kv-cache-memory-bytes vLLM does not use util x total, so the room outside that budget is not the
    # question (pipeline.with_band); a pre-0.20 release at utilization 0.97 would otherwise be flagged
    base = {"gpu_memory_utilization": 0.97, "max_model_len": 4096}
    r = estimate(EstimateRequest(model="Qwen/Qwen3-0.6B", gpu="l4", vllm_version="0.19.0", flags=base))
    assert r.verdict == "at-risk" and any("CUDA-graph pool" in w for w in r.warnings)
    pinned = estimate(EstimateRequest(model="Qwen/Qwen3-0.6B", gpu="l4", vllm_version="0.19.0",
                                      flags={**base, "kv_cache_memory_bytes": 2 << 30}))
    assert pinned.verdict == "fits" and not any("CUDA-graph pool" in w for w in pinned.warnings)
