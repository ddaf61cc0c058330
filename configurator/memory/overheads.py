"""Non-KV, non-weight memory at start-up: activation peak, sampler, non-torch, CUDA graphs.

A first, documented model (docs/memory-model.md). What vLLM measures:
- the activation peak of a dummy forward pass over `max_num_batched_tokens` tokens, then a dummy
  sampler run over R = min(max_num_seqs, max_num_batched_tokens) rows of full-vocabulary logits
  (fp32; several live copies during sampling);
- non-torch memory that appears after the baseline snapshot (NCCL buffers with TP/PP, cuBLAS
  workspaces);
- from vLLM 0.20 the CUDA-graph pool estimate (0 with --enforce-eager).
Mechanisms from vLLM's source: FlashInfer's sampler (0.9.0-0.11.0, official image only), the persistent
fused-MoE workspace (0.19+), the V2 penalty state. The remaining coefficients are fitted by benchmarks/accuracy.py on
the dev + dev2 logs that print their release (see docs/accuracy.md) and kept as data in
profiles/overheads.yaml; a calibration file from a real log replaces them.
"""

from __future__ import annotations

from dataclasses import dataclass

from configurator.units import MiB


@dataclass(frozen=True)
class OverheadCoefficients:
    """Fitted constants of the overhead model (profiles/overheads.yaml holds the fitted rows and says what they
    were fitted on; these defaults apply only where a caller passes no row)."""

    sampler_copies_at_256: float = 6.5
    sampler_exponent: float = 0.28
    forward_bytes_per_element: float = 2.0
    non_torch_tp1_bytes: int = 130 * MiB
    non_torch_multi_gpu_bytes: int = 550 * MiB
    cudagraph_base_bytes: int = 256 * MiB
    cudagraph_per_layer_bytes: int = 8 * MiB
    runner_buffers_bytes: int = 0
    source: str = "built-in default"

    @classmethod
    def from_row(cls, row: dict, source: str) -> OverheadCoefficients:
        return cls(
            sampler_copies_at_256=float(row["sampler_copies_at_256"]),
            sampler_exponent=float(row["sampler_exponent"]),
            forward_bytes_per_element=float(row["forward_bytes_per_element"]),
            non_torch_tp1_bytes=int(row["non_torch_tp1_mib"]) * MiB,
            non_torch_multi_gpu_bytes=int(row["non_torch_multi_gpu_mib"]) * MiB,
            cudagraph_base_bytes=int(row["cudagraph_base_mib"]) * MiB,
            cudagraph_per_layer_bytes=int(row["cudagraph_per_layer_mib"]) * MiB,
            runner_buffers_bytes=int(row["runner_buffers_mib"]) * MiB,
            source=source)

    def sampler_copies(self, rows: int) -> float:
        return self.sampler_copies_at_256 * (max(rows, 1) / 256) ** self.sampler_exponent


DEFAULT_COEFFICIENTS = OverheadCoefficients()
# FlashInfer's top-k / top-p sampler (the default 0.9.0-0.11.0 where FlashInfer is installed: the official image,
# not a plain pip install; configurator/vllm/versions.py flashinfer_sampler_runs: the estimate counts the native
# sampler unless the install is named, and the band's high end reaches this one's figure, sampler_uncertain) holds,
# counted in fp32 R x vocab units: the model's bf16 logits (0.5), their fp32 copy (Sampler.forward:
# logits.to(torch.float32), 1) and the softmax probabilities it samples from (1). Not fitted; the sort-based
# PyTorch path is (sampler_copies).
FLASHINFER_SAMPLER_COPIES = 2.5
# Model runner V2's profiling sampler (v1/worker/gpu/model_runner.py _dummy_sampler_run and gpu/sample/sampler.py
# apply_sampling_params, 0.25.0): the dummy requests carry no top-k / top-p / logprobs, so it holds the model's
# bf16 logits (0.5) and their fp32 copy (1), then samples with a Gumbel kernel in place. Not fitted.
V2_SAMPLER_COPIES = 1.5
REFERENCE_CAPTURE_SIZES = 51  # default capture sizes at a 512 ceiling (1, 2, 4, 8..248 by 8, 256..512 by 16)
# vLLM's profile_cudagraph_memory (0.20+) counts every captured graph after the first at no less than 1 MiB
# ("Use at least 1 MiB per graph for driver overhead": per_graph = max(second capture's bytes, 1 << 20), times
# len(descs) - 1; vllm/v1/worker/gpu_model_runner.py, 0.27.0): a floor from the source, not fitted, under the
# fitted per-layer part, so that the pool grows with the number of capture sizes whatever the fit gives it
CUDAGRAPH_PER_CAPTURE_FLOOR = 1 << 20


def moe_workspace_bytes(num_tokens: int, top_k: int, moe_intermediate_size: int, hidden_size: int, tp: int,
                        act_bytes: int = 2) -> int:
    """The fused-MoE experts' two workspaces for one forward over `num_tokens` tokens (bytes).

    Mirrors TritonExperts.workspace_shapes (fused_moe/experts/triton_moe.py, vLLM 0.25.1):
    workspace13 (M, topk, max(N / 2, K)) and workspace2 (M, topk, max(N, K)) in the activation dtype,
    N = 2 x moe_intermediate_size / tp (gate and up), K = hidden_size, M = the batch's tokens (no chunking
    in modular_kernel.py 0.25.1). Qwen3.5-35B-A3B at 8,192 tokens: 8,192 x 8 x (2,048 + 2,048) x 2 B
    = 512 MiB.
    """
    n = 2 * moe_intermediate_size // max(tp, 1)
    return num_tokens * top_k * (max(n // 2, hidden_size) + max(n, hidden_size)) * act_bytes


@dataclass(frozen=True)
class Overheads:
    """The non-weight, non-KV memory one GPU spends at start-up (bytes)."""

    activation_bytes: int  # peak of the profiling forward pass and sampler
    non_torch_bytes: int
    cudagraph_bytes: int  # subtracted before the KV pool (0.20+, not with --enforce-eager)
    runner_bytes: int  # persistent runner / sampler buffers (part of 'consumed' memory)
    # the CUDA-graph pool the capture allocates after the KV cache, counted in the budget or not (0: eager)
    graph_pool_bytes: int = 0


def estimate_overheads(*, hidden_size: int, intermediate_size: int, num_attention_heads: int,
                       num_kv_heads: int, head_dim: int, vocab_size: int, num_layers_on_rank: int,
                       max_num_batched_tokens: int, max_num_seqs: int, tp: int, pp: int,
                       last_stage: bool, enforce_eager: bool, cudagraph_counted: bool,
                       v2_sampler_state: bool, moe_intermediate_size: int = 0, experts_per_token: int = 0,
                       num_capture_sizes: int = REFERENCE_CAPTURE_SIZES, moe_workspace_persistent: bool = False,
                       flashinfer_sampler: bool = False,
                       coeffs: OverheadCoefficients = DEFAULT_COEFFICIENTS) -> Overheads:
    """Overheads for one rank. Llama-3.1-8B on H100 (0.19), mnbt 8,192, R 1,024: forward ~0.8 GiB;
    sort-based sampler 1,024 x 128,256 x 4 B x copies(1,024), where copies(R) = c256 x (R / 256) ** exponent
    with the era's fitted c256 and exponent (profiles/overheads.yaml, via coefficients_for; the dataclass
    defaults are only a fallback for callers that pass none): the larger of the two is the activation."""
    workspace = 0
    if moe_workspace_persistent and experts_per_token and moe_intermediate_size:
        # the fused-MoE workspaces are held by the WorkspaceManager and outlive the forward pass, so the
        # sampler's peak adds to them; the MoE part of the transient forward is then this workspace
        workspace = moe_workspace_bytes(max_num_batched_tokens, experts_per_token, moe_intermediate_size,
                                        hidden_size, tp)
        mlp = intermediate_size if intermediate_size != moe_intermediate_size else 0
    else:
        # per token: the MLP's gate/up output (for MoE, top-k experts' worth)
        mlp = max(intermediate_size, experts_per_token * moe_intermediate_size)
    # per token: the MLP's gate/up output, q/k/v, a few hidden-size buffers
    width = (2 * mlp + (num_attention_heads + 2 * num_kv_heads) * head_dim) // tp + 4 * hidden_size
    forward = int(max_num_batched_tokens * width * coeffs.forward_bytes_per_element)
    rows = min(max_num_seqs, max_num_batched_tokens)
    copies = (FLASHINFER_SAMPLER_COPIES if flashinfer_sampler else V2_SAMPLER_COPIES if v2_sampler_state
              else coeffs.sampler_copies(rows))
    sampler = int(rows * vocab_size * 4 * copies) if last_stage else 0
    activation = workspace + max(forward, sampler)
    non_torch = coeffs.non_torch_multi_gpu_bytes if tp * pp > 1 else coeffs.non_torch_tp1_bytes
    # vLLM estimates the pool from the first capture plus one per-graph cost per capture size
    # (profile_cudagraph_memory); the per-layer cost was fitted at the 51 sizes of the default 512 ceiling.
    # Where the release does not count it (before 0.20, model runner V2 until 0.29) it lands outside the budget.
    pool = 0 if enforce_eager else coeffs.cudagraph_base_bytes + int(
        coeffs.cudagraph_per_layer_bytes * num_layers_on_rank * num_capture_sizes / REFERENCE_CAPTURE_SIZES
    ) + CUDAGRAPH_PER_CAPTURE_FLOOR * max(num_capture_sizes - 1, 0)
    graphs = pool if cudagraph_counted else 0
    runner = coeffs.runner_buffers_bytes
    if v2_sampler_state and last_stage:
        # V2 model runner penalty state: output_bin_counts (int32) + prompt_bin_mask (1/32 of it)
        runner += int(max_num_seqs * vocab_size * 4 * 33 / 32)
    return Overheads(activation, non_torch, graphs, runner, pool)
