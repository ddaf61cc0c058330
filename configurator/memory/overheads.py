"""Non-KV, non-weight memory at start-up: activation peak, sampler, non-torch, CUDA graphs.

A first, documented model (docs/memory-model.md). What vLLM measures:
- the activation peak of a dummy forward pass over `max_num_batched_tokens` tokens, then a dummy
  sampler run over R = min(max_num_seqs, max_num_batched_tokens) rows of full-vocabulary logits
  (fp32; several live copies during sampling);
- non-torch memory that appears after the baseline snapshot (NCCL buffers with TP/PP, cuBLAS
  workspaces);
- from vLLM 0.20 the CUDA-graph pool estimate (0 with --enforce-eager).
The coefficients are fitted on ../shared/data/vllm-startup-logs.dev.jsonl (see
benchmarks/accuracy.md); a calibration file from a real log replaces them.
"""

from __future__ import annotations

from dataclasses import dataclass

from configurator.units import GiB, MiB


@dataclass(frozen=True)
class OverheadCoefficients:
    """Fitted constants of the overhead model; `fitted_on` says where they came from."""

    # live fp32 copies of the R x vocab logits during the dummy sampler run
    # (Qwen3-0.6B, R 1,024, vocab 151,936: 5.56 GiB peak / 0.58 GiB per copy = 9.6 in 0.10-era logs;
    # 1.04 GiB / 0.145 GiB = 7.2 for R 256 in 0.26)
    sampler_copies: float = 7.5
    # bytes per batched token per unit of (2 x intermediate/TP + qkv/TP + 4 x hidden), bf16
    forward_bytes_per_element: float = 2.0
    non_torch_tp1_bytes: int = 130 * MiB  # cuBLAS / allocator growth after the baseline snapshot
    non_torch_multi_gpu_bytes: int = 550 * MiB  # NCCL / custom all-reduce buffers (TP or PP > 1)
    cudagraph_base_bytes: int = int(0.25 * GiB)  # graph pool estimate: fixed part
    cudagraph_per_layer_bytes: int = 8 * MiB  # and a per-decoder-layer part (captured buffers)
    runner_buffers_bytes: int = 200 * MiB  # persistent input / block-table buffers ('consumed' releases)
    fitted_on: str = "first model: magnitudes read off the dev log set (docs/memory-model.md)"


DEFAULT_COEFFICIENTS = OverheadCoefficients()


@dataclass(frozen=True)
class Overheads:
    """The non-weight, non-KV memory one GPU spends at start-up (bytes)."""

    activation_bytes: int  # peak of the profiling forward pass and sampler
    non_torch_bytes: int
    cudagraph_bytes: int  # subtracted before the KV pool (0.20+, not with --enforce-eager)
    runner_bytes: int  # persistent runner / sampler buffers (part of 'consumed' memory)


def estimate_overheads(*, hidden_size: int, intermediate_size: int, num_attention_heads: int,
                       num_kv_heads: int, head_dim: int, vocab_size: int, num_layers_on_rank: int,
                       max_num_batched_tokens: int, max_num_seqs: int, tp: int, pp: int,
                       last_stage: bool, enforce_eager: bool, cudagraph_counted: bool,
                       v2_sampler_state: bool, coeffs: OverheadCoefficients = DEFAULT_COEFFICIENTS
                       ) -> Overheads:
    """Overheads for one rank. Llama-3.1-8B, mnbt 8,192, R 1,024: forward ~0.8 GiB, sampler
    1,024 x 128,256 x 4 B x 7.5 copies = 3.7 GiB -> activation ~3.7 GiB."""
    width = (2 * intermediate_size + (num_attention_heads + 2 * num_kv_heads) * head_dim) // tp + 4 * hidden_size
    forward = int(max_num_batched_tokens * width * coeffs.forward_bytes_per_element)
    rows = min(max_num_seqs, max_num_batched_tokens)
    sampler = int(rows * vocab_size * 4 * coeffs.sampler_copies) if last_stage else 0
    activation = max(forward, sampler)
    non_torch = coeffs.non_torch_multi_gpu_bytes if tp * pp > 1 else coeffs.non_torch_tp1_bytes
    graphs = 0
    if cudagraph_counted and not enforce_eager:
        graphs = coeffs.cudagraph_base_bytes + coeffs.cudagraph_per_layer_bytes * num_layers_on_rank
    runner = coeffs.runner_buffers_bytes
    if v2_sampler_state and last_stage:
        # V2 model runner penalty state: output_bin_counts (int32) + prompt_bin_mask (1/32 of it)
        runner += int(max_num_seqs * vocab_size * 4 * 33 / 32)
    return Overheads(activation, non_torch, graphs, runner)
