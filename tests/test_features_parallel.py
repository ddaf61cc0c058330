"""Data / expert parallelism and the multimodal encoder budget (configurator/memory/features.py,
configurator/estimate/features.py). Formulas from vLLM 0.33.0: model_executor/layers/fused_moe/config.py
FusedMoEParallelConfig.make, fused_moe/expert_map_manager.py determine_expert_map."""

from __future__ import annotations

import pytest

from configurator.errors import InputError
from configurator.estimate.pipeline import estimate
from configurator.estimate.result import EstimateRequest
from configurator.memory.features import (
    MoEParallel,
    encoder_outputs_bytes,
    encoder_profile,
    expert_share,
    local_experts,
)
from configurator.vllm.flags import UNMODELLED_MEMORY_OPTIONS, parse_args

MOE = "Qwen/Qwen3-30B-A3B"  # a catalog MoE: 128 routed experts
DENSE = "meta-llama/Llama-3.1-8B-Instruct"


def _est(model: str, flags: dict, version: str = "0.33.0", gpu: str = "H100-80GB"):
    return estimate(EstimateRequest(model=model, gpu=gpu, vllm_version=version, flags=flags))


# ---- formulas ------------------------------------------------------------------------------------

def test_without_ep_the_moe_tp_size_is_flattened_over_dp():
    # flatten_tp_across_dp_and_pcp: tp_size = dp x pcp x tp, every expert kept, sharded 8 ways
    assert local_experts(128, MoEParallel(tp=2, dp=4)) == (128, 8)
    assert expert_share(128, MoEParallel(tp=2, dp=4)) == pytest.approx(1 / 8)
    assert local_experts(128, MoEParallel(tp=2)) == (128, 2)  # plain TP


def test_ep_gives_whole_experts_over_tp_x_dp():
    # use_ep: tp_size 1, ep_size = flattened size; determine_expert_map: base + 1 on the first `remainder` ranks
    assert local_experts(256, MoEParallel(tp=2, dp=4, expert_parallel=True)) == (32, 1)
    assert local_experts(60, MoEParallel(tp=8, expert_parallel=True)) == (8, 1)  # 60 // 8 = 7, remainder 4
    assert local_experts(256, MoEParallel(tp=8, expert_parallel=True, redundant_experts=32)) == (36, 1)


def test_ep_on_one_gpu_is_not_ep():
    # use_ep = dp x pcp x tp > 1 and enable_expert_parallel
    assert local_experts(128, MoEParallel(tp=1, expert_parallel=True)) == (128, 1)


# ---- the estimate --------------------------------------------------------------------------------

def test_dp_keeps_dense_weights_and_kv_per_gpu():
    a, b = _est(DENSE, {}), _est(DENSE, {"data_parallel_size": 4})
    assert b.memory.weights_bytes == a.memory.weights_bytes
    assert b.memory.kv_cache_bytes == a.memory.kv_cache_bytes
    assert b.gpu.count == 4
    assert any("data parallel 4" in d and "own KV pool" in d for d in b.derivation)


def test_dp_shards_moe_experts_and_ep_matches_when_divisible():
    tp2 = _est(MOE, {"tensor_parallel_size": 2})
    dp = _est(MOE, {"tensor_parallel_size": 2, "data_parallel_size": 4})
    ep = _est(MOE, {"tensor_parallel_size": 2, "data_parallel_size": 4, "enable_expert_parallel": True})
    delta = dp.memory.moe_parallel_delta_bytes
    assert delta < 0 and dp.memory.weights_bytes == tp2.memory.weights_bytes + delta
    # the routed experts go from 1/2 to 1/8 of the total: the delta is 3/4 of what TP 2 held
    line = next(d for d in dp.derivation if "flatten_tp_across_dp_and_pcp" in d)
    assert "intermediate size / 8" in line
    assert ep.memory.weights_bytes == pytest.approx(dp.memory.weights_bytes, rel=1e-6)
    assert any("expert parallel over 8 GPUs" in d and "16 whole experts" in d for d in ep.derivation)
    assert dp.memory.kv_cache_bytes > tp2.memory.kv_cache_bytes  # the freed bytes go to the KV pool


def test_ep_with_tp_only_keeps_weights_when_experts_divide():
    a = _est(MOE, {"tensor_parallel_size": 2})
    b = _est(MOE, {"tensor_parallel_size": 2, "enable_expert_parallel": True})
    assert abs(b.memory.weights_bytes - a.memory.weights_bytes) <= 2


def test_eplb_redundant_experts_add_weights():
    base = {"tensor_parallel_size": 2, "enable_expert_parallel": True}
    a = _est(MOE, base)
    b = _est(MOE, {**base, "enable_eplb": True, "eplb_config": '{"num_redundant_experts": 32}'})
    # 128 -> 160 experts over 2 GPUs: 64 -> 80 per GPU
    assert b.memory.weights_bytes > a.memory.weights_bytes
    assert any("32 redundant (EPLB)" in d and "80 whole experts" in d for d in b.derivation)


def test_eplb_refusals_from_parallel_config():
    with pytest.raises(InputError, match="enable_expert_parallel must be True to use EPLB"):
        _est(MOE, {"tensor_parallel_size": 2, "enable_eplb": True})
    with pytest.raises(InputError, match="EPLB is not enabled"):
        _est(MOE, {"tensor_parallel_size": 2, "enable_expert_parallel": True,
                   "eplb_config": '{"num_redundant_experts": 4}'})


def test_parallel_flags_parse_and_are_no_longer_unmodelled():
    argv = ("vllm serve m -tp 2 -dp 4 --enable-expert-parallel --enable-eplb "
            "--eplb-config {\"num_redundant_experts\":8}")
    p = parse_args(argv.split(), "0.33.0")
    assert p.flags["data_parallel_size"] == 4 and p.flags["enable_expert_parallel"] is True
    assert p.flags["enable_eplb"] is True
    assert p.unmodelled == ()
    assert not {"--enable-eplb", "--eplb-config", "--data-parallel-size"} & UNMODELLED_MEMORY_OPTIONS


def test_a_still_unmodelled_option_keeps_its_warning():
    p = parse_args(["vllm", "serve", "m", "--kv-transfer-config", "{}"], "0.33.0")
    assert [o.dest for o in p.unmodelled] == ["--kv-transfer-config"]


# ---- the multimodal encoder budget (multimodal/encoder_budget.py, v1/core/encoder_cache_manager.py, 0.33.0) --

MM = "google/gemma-3-4b-it"  # a catalog vision model whose config states 256 tokens per image


def test_encoder_profile_items_from_the_budget():
    # budget = max(mnbt, T); items = max(1, min(budget // T, seqs x max(1, min(limit, max_len // T))))
    p = encoder_profile(256, max_num_batched_tokens=2048, max_num_seqs=256, max_model_len=8192, limit=999)
    assert (p.budget_tokens, p.items, p.tokens) == (2048, 8, 2048)
    big = encoder_profile(5000, max_num_batched_tokens=2048, max_num_seqs=256, max_model_len=8192, limit=999)
    assert (big.budget_tokens, big.items, big.tokens) == (5000, 1, 5000)  # one item always fits
    one = encoder_profile(256, max_num_batched_tokens=8192, max_num_seqs=2, max_model_len=8192, limit=1)
    assert one.items == 2  # the decoder side: 2 sequences x 1 item
    unknown = encoder_profile(0, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=8192, limit=999)
    assert unknown.tokens == 8192
    assert encoder_outputs_bytes(p, 2560, 2) == 2048 * 2560 * 2


def test_encoder_outputs_join_the_activation_peak_and_text_only_removes_them():
    on = _est(MM, {"max_model_len": 8192, "max_num_batched_tokens": 2048}, gpu="L4")
    off = _est(MM, {"max_model_len": 8192, "max_num_batched_tokens": 2048,
                    "limit_mm_per_prompt": '{"image": 0}'}, gpu="L4")
    assert on.memory.encoder_cache_bytes == 2048 * 2560 * 2
    assert off.memory.encoder_cache_bytes == 0
    assert on.memory.activation_bytes - off.memory.activation_bytes == on.memory.encoder_cache_bytes
    assert any("multimodal encoder budget" in d for d in on.derivation)
    assert any("text-only" in d for d in off.derivation)
    # the tower's own transient peak is still named in a warning; text-only has none to name
    assert any(w.startswith("not-modelled") and "encoder" in w for w in on.warnings)
    assert not any("encoder" in w for w in off.warnings)


def test_skip_mm_profiling_and_text_models():
    r = _est(MM, {"max_model_len": 8192, "skip_mm_profiling": True}, gpu="L4")
    assert r.memory.encoder_cache_bytes == 0 and any("--skip-mm-profiling" in d for d in r.derivation)
    assert _est(DENSE, {"limit_mm_per_prompt": '{"image": 0}'}).memory.encoder_cache_bytes == 0


def test_mm_flags_modelled_but_processor_kwargs_still_warned():
    assert "--limit-mm-per-prompt" not in UNMODELLED_MEMORY_OPTIONS
    p = parse_args(["vllm", "serve", "m", "--limit-mm-per-prompt", '{"image":0}', "--mm-processor-kwargs",
                    '{"max_pixels":1000}'], "0.33.0")
    assert p.flags["limit_mm_per_prompt"] == '{"image":0}'
    assert [o.dest for o in p.unmodelled] == ["--mm-processor-kwargs"]


def test_moe_lora_slots_follow_the_dp_layout():
    # FusedMoEWithLoRA takes moe_parallel_config.tp_size (lora/layers/fused_moe.py, 0.33.0): with DP 4 and no EP
    # the expert slots' intermediate size is split 8 ways, not 2
    lora = {"tensor_parallel_size": 2, "enable_lora": True, "max_loras": 4}
    a = _est(MOE, lora).memory.lora_bytes
    b = _est(MOE, {**lora, "data_parallel_size": 4}).memory.lora_bytes
    c = _est(MOE, {**lora, "data_parallel_size": 4, "enable_expert_parallel": True}).memory.lora_bytes
    assert b < a and c < a


def test_dp_moe_gathered_tokens_raise_the_peak_and_other_all2all_backends_keep_warnings():
    # all2all.py AgRsAll2AllManager (0.33.0): every DP rank's tokens reach the experts, so the activation peak
    # grows with DP on a MoE model (explained), not on a dense one
    one = _est(MOE, {"tensor_parallel_size": 2})
    four = _est(MOE, {"tensor_parallel_size": 2, "data_parallel_size": 4})
    assert four.memory.activation_bytes > one.memory.activation_bytes
    assert any("all-gather every DP rank's tokens" in line for line in four.derivation)
    dense = _est(DENSE, {"data_parallel_size": 4})
    assert dense.memory.activation_bytes == _est(DENSE, {}).memory.activation_bytes
    other = _est(MOE, {"tensor_parallel_size": 2, "data_parallel_size": 4, "all2all_backend": "deepep_low_latency"})
    assert sum(w.startswith("not-modelled") and "--all2all-backend" in w for w in other.warnings) == 1
    assert other.memory.activation_bytes == one.memory.activation_bytes  # its buffers are not guessed
    p = parse_args(["vllm", "serve", "m", "-dp", "2", "--all2all-backend", "deepep_low_latency"], "0.33.0")
    assert [o.dest for o in p.unmodelled] == ["--all2all-backend"]
