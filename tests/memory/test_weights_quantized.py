"""Weights of quantized checkpoints as vLLM lays them out on the GPU (configurator/memory/weights.py)."""

import pytest

from configurator.memory.weights import count_params, mxfp4_backend_alignment, weight_bytes
from configurator.model.resolve import resolve_model
from configurator.units import GiB


@pytest.mark.parametrize(("sm", "alignment"), [
    (80, (256, 128)),  # Marlin on Ampere
    (89, (256, 128)),  # Marlin on Ada
    (90, (1, 64)),  # Triton on Hopper
    (100, (256, 256)),  # FlashInfer TRTLLM on sm10x
    (120, (128, 128)),  # FlashInfer CUTLASS on sm12x
])
def test_mxfp4_kernel_alignment_follows_the_backend_vllm_picks(sm, alignment):
    assert mxfp4_backend_alignment(sm) == alignment


def test_gpt_oss_20b_on_an_a100_matches_model_loading_took():
    # dev log vllm-log-020 (0.19.0, A100): "Model loading took 13.72 GiB"
    w = weight_bytes(resolve_model("openai/gpt-oss-20b", allow_hub=False), tp=1, pp=1, compute_capability=80)
    assert abs(w.per_rank_bytes / GiB - 13.72) / 13.72 < 0.01


def test_mxfp4_keeps_attention_in_16_bit_and_pads_the_experts():
    spec = resolve_model("openai/gpt-oss-20b", allow_hub=False)
    p = count_params(spec)
    a100 = weight_bytes(spec, tp=1, pp=1, compute_capability=80).per_rank_bytes
    h100 = weight_bytes(spec, tp=1, pp=1, compute_capability=90).per_rank_bytes
    # 2,880 is a multiple of 64 but not of 256: only the Marlin path pads, by ~0.9 GB
    assert 0.8e9 < a100 - h100 < 1.0e9
    attention_16bit = sum(p.per_layer_attention) * 2
    assert h100 > attention_16bit + sum(p.per_layer_experts) * (0.5 + 1 / 32)


def test_tensor_parallel_pads_each_ranks_slice():
    spec = resolve_model("openai/gpt-oss-20b", allow_hub=False)
    one = weight_bytes(spec, tp=1, pp=1, compute_capability=80).per_rank_bytes
    two = weight_bytes(spec, tp=2, pp=1, compute_capability=80).per_rank_bytes
    assert one / 2 < two < one * 0.6  # embeddings split too; padding is per rank


def test_router_stays_in_model_dtype_and_is_replicated():
    spec = resolve_model("Qwen/Qwen3-30B-A3B-FP8", allow_hub=False)
    p = count_params(spec)
    assert sum(p.per_layer_router) == spec.num_hidden_layers * spec.hidden_size * p.experts[0]
    w1 = weight_bytes(spec, tp=1, pp=1).per_rank_bytes
    assert w1 > 0
