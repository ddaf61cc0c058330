"""Memory of optional engine features (LoRA adapter slots, ...): pure arithmetic on small frozen inputs.

Each function mirrors the tensors vLLM allocates for a feature and cites the file and release it was
read from. Integer bytes throughout; the estimate stage (configurator/estimate/features.py) decides
which features apply and feeds these functions primitives taken from the model description.
"""

from __future__ import annotations

from dataclasses import dataclass

from configurator.units import cdiv


@dataclass(frozen=True)
class LoraSettings:
    """vllm/config/lora.py LoRAConfig, the fields that size GPU buffers (0.25.0 / 0.33.0)."""

    max_loras: int = 1  # adapter slots on the GPU (default 1)
    max_lora_rank: int = 16  # every slot is sized for this rank (default 16)
    dtype_bytes: int = 2  # lora_dtype; 'auto' = the model dtype
    fully_sharded: bool = False  # --fully-sharded-loras: shard the rank of column layers, the output of rows
    tp: int = 1
    moe_lora: bool = True  # the release wraps MoE experts (FusedMoEWithLoRA) and the model is MoE
    moe_3d: bool = False  # the model's experts are stored fused (is_3d_moe_weight): FusedMoE3DWithLoRA


@dataclass(frozen=True)
class Linear:
    """One LoRA-wrapped linear module: its input width, its output slices (full, unsharded) and how TP splits it.

    vllm/lora/layers/base_linear.py create_lora_weights (0.25.0, 0.33.0), per slice s:
      lora_a_stacked[s]: (max_loras, 1, rank_a, in_per_rank)
      lora_b_stacked[s]: (max_loras, 1, out_s_per_rank, rank)
    column: in not split, out / tp, rank_a = rank / tp when fully sharded;
    row: in / tp, out not split (out / tp when fully sharded); replicated: nothing split.
    """

    in_features: int
    out_slices: tuple[int, ...]
    kind: str = "column"  # column | row | replicated


@dataclass(frozen=True)
class MoEExperts:
    """One MoE layer's routed experts (vllm/lora/layers/fused_moe.py, 0.25.0 / 0.33.0)."""

    num_experts: int  # experts on this rank (all of them without expert parallelism)
    hidden_size: int
    intermediate_per_rank: int  # moe_intermediate_size / tp (not split with expert parallelism)
    gated: bool = True  # gate_proj + up_proj (w1, w3); False: up_proj only


def linear_lora_bytes(m: Linear, s: LoraSettings) -> int:
    """Bytes of one linear module's lora_a + lora_b stacks across max_loras slots.

    Llama-3-8B q/k/v at 4 adapters of rank 16, TP 1: a 3 x 16 x 4,096 + b (4,096 + 1,024 + 1,024) x 16
    = 294,912 elements x 4 slots x 2 B = 2.25 MiB per layer.
    """
    r = s.max_lora_rank
    tp = max(s.tp, 1)
    total = 0
    for out in m.out_slices:
        if m.kind == "column":
            rank_a = cdiv(r, tp) if s.fully_sharded else r
            total += rank_a * m.in_features + cdiv(out, tp) * r
        elif m.kind == "row":
            total += r * cdiv(m.in_features, tp) + (cdiv(out, tp) if s.fully_sharded else out) * r
        else:
            total += r * m.in_features + out * r
    return total * s.max_loras * s.dtype_bytes


def moe_lora_bytes(e: MoEExperts, s: LoraSettings) -> int:
    """Bytes of one MoE layer's expert LoRA stacks (vllm/lora/layers/fused_moe.py, 0.25.0 / 0.33.0).

    FusedMoEWithLoRA (2D): per slot and expert, w13 lora_a (slices, rank_a, H), w13 lora_b (slices, I, rank),
    w2 lora_a (rank, I), w2 lora_b (H, rank) (H / tp when fully sharded), slices = 2 when gated.
    FusedMoE3DWithLoRA (fused checkpoints): one w13 lora_a slice, w13 lora_b (2 I, rank).
    Gemma-4 26B-A4B (H 2,816, 128 experts x 704) at 4 x rank 16: 16 x (3 x 2,816 + 3 x 704) x 128 x 4 x 2 B
    = 165 MiB per layer, x 30 layers = 4.83 GiB.
    """
    r = s.max_lora_rank
    tp = max(s.tp, 1)
    h, i = e.hidden_size, e.intermediate_per_rank
    rank_a = cdiv(r, tp) if s.fully_sharded else r
    w2_b = cdiv(h, tp) if s.fully_sharded else h
    slices = 2 if e.gated else 1
    w13 = rank_a * h + slices * i * r if s.moe_3d else slices * (rank_a * h + i * r)
    per_expert = w13 + r * i + w2_b * r
    return per_expert * e.num_experts * s.max_loras * s.dtype_bytes


def lora_activation_bytes(num_tokens: int, s: LoraSettings, moe_top_k: int = 0, act_bytes: int = 2) -> int:
    """Transient buffers of the LoRA kernels in the profiling forward pass (dummy adapters in every slot).

    vllm/lora/punica_wrapper/punica_gpu.py add_lora_linear: a float32 shrink buffer (slices, tokens,
    rank), at most 3 slices (q, k, v); lora/ops/triton_ops/fused_moe_lora_op.py: an intermediate cache
    (slices, tokens x top_k, rank) in the activation dtype. 8,192 tokens, rank 16: 1.5 MiB (+ 4 MiB with
    8 experts per token).
    """
    linear = 3 * num_tokens * s.max_lora_rank * 4
    moe = 2 * num_tokens * moe_top_k * s.max_lora_rank * act_bytes if (s.moe_lora and moe_top_k) else 0
    return linear + moe


@dataclass(frozen=True)
class MoEParallel:
    """How one rank holds the routed experts (vllm/model_executor/layers/fused_moe/config.py
    FusedMoEParallelConfig.make, 0.33.0): the MoE layer sees tp x pcp x dp devices
    (flatten_tp_across_dp_and_pcp), whatever the attention's TP is."""

    tp: int = 1
    dp: int = 1
    pcp: int = 1
    expert_parallel: bool = False  # --enable-expert-parallel
    redundant_experts: int = 0  # --eplb-config num_redundant_experts (EPLB only)

    @property
    def devices(self) -> int:
        return max(self.tp, 1) * max(self.dp, 1) * max(self.pcp, 1)

    @property
    def use_ep(self) -> bool:
        """use_ep = dp x pcp x tp > 1 and enable_expert_parallel."""
        return self.expert_parallel and self.devices > 1


def local_experts(num_experts: int, p: MoEParallel) -> tuple[int, int]:
    """(experts on the most loaded rank, how many ways each expert's intermediate size is split).

    Without EP: every rank holds all experts, TP-sharded over tp x pcp x dp (tp_size = flattened size).
    With EP: tp_size = 1, ep_size = the flattened size; expert_map_manager.py determine_expert_map gives
    rank r (global_num_experts // ep) + 1 when r < global % ep, global = experts + redundant (layer.py
    determine_expert_counts). 256 experts, TP 2 x DP 4 with EP: 32 whole experts per GPU."""
    if not num_experts:
        return 0, 1
    if p.use_ep:
        return cdiv(num_experts + p.redundant_experts, p.devices), 1
    return num_experts, p.devices


def expert_share(num_experts: int, p: MoEParallel) -> float:
    """The fraction of one MoE layer's routed-expert weights a rank holds (1 / tp for plain TP)."""
    n, split = local_experts(num_experts, p)
    return n / num_experts / split if num_experts else 0.0


@dataclass(frozen=True)
class EncoderProfile:
    """What the profiling run feeds the multimodal encoder (vllm/multimodal/encoder_budget.py MultiModalBudget,
    v1/core/encoder_cache_manager.py compute_mm_encoder_budget, 0.33.0)."""

    budget_tokens: int  # min(encoder compute budget, encoder cache size) = max(max_num_batched_tokens, T)
    items: int  # dummy items of the largest modality in the profiling batch
    tokens: int  # encoder-output tokens the profiling run keeps while the decoder's dummy pass runs


def encoder_profile(tokens_per_item: int, *, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int,
                    limit: int, chunked_prefill: bool = True) -> EncoderProfile:
    """The dummy encoder batch of the profiling run.

    compute_mm_encoder_budget: compute budget = max(max_num_encoder_input_tokens, T), cache size =
    max(encoder_cache_size, T), both scheduler fields = max_num_batched_tokens (config/scheduler.py); the
    budget is their min. MultiModalBudget._get_max_items: items = max(1, min(budget // T,
    max_num_seqs x max(1, min(limit, max_model_len // T)))) (max_num_seqs capped at
    max_num_batched_tokens // T without chunked prefill). T = 0 (not known from the config): the encoder
    outputs are taken to fill the budget, max_num_batched_tokens tokens (exact when T divides it).
    Qwen-style 8,192-token batch, T 1,024 (say), 256 sequences: 8 items, 8,192 tokens."""
    if tokens_per_item <= 0:
        return EncoderProfile(max_num_batched_tokens, 0, max_num_batched_tokens)
    t = tokens_per_item
    budget = max(max_num_batched_tokens, t)
    per_prompt = max(1, min(limit, max_model_len // t))
    reqs = max_num_seqs if chunked_prefill else min(max_num_seqs, max_num_batched_tokens // t)
    items = max(1, min(budget // t, reqs * per_prompt))
    return EncoderProfile(budget, items, items * t)


def encoder_outputs_bytes(p: EncoderProfile, hidden_size: int, dtype_bytes: int = 2) -> int:
    """The profiling run's encoder outputs, held in encoder_cache while the decoder's dummy pass runs
    (v1/worker/gpu_model_runner.py profile_run, 0.33.0): tokens x the language model's hidden size x the
    model dtype. 8,192 tokens x 3,584 x 2 B = 56 MiB."""
    return p.tokens * hidden_size * dtype_bytes


def drafter_buffer_bytes(max_num_tokens: int, hidden_size: int, inputs_embeds_size: int, dtype_bytes: int = 2,
                         mrope: bool = False, hidden_mult: int = 1) -> int:
    """The persistent input buffers of a model-based drafter (EAGLE / EAGLE-3 / MTP / draft model / DFlash),
    allocated when the model runner is built, before the weights load and before profiling
    (v1/spec_decode/llm_base_proposer.py SpecDecodeBaseProposer.__init__, 0.25.0 / 0.33.0), T =
    max_num_batched_tokens: input_ids int32 (T), positions int64 (T) or M-RoPE (3, T + 1), hidden_states
    (T, hidden x hc_mult for a DeepSeek-V4 MTP draft) and inputs_embeds (T, inputs_embeds_size) in the model
    dtype, the slot mapping int64 (T). 8,192 tokens, H 4,096, bf16: 128.2 MiB."""
    t = max_num_tokens
    positions = 3 * (t + 1) * 8 if mrope else t * 8
    return t * 4 + positions + t * hidden_size * hidden_mult * dtype_bytes + t * inputs_embeds_size * dtype_bytes \
        + t * 8


def _approximate_gcd(values: list[int], lower_bound: int) -> int:
    """vllm/v1/core/kv_cache_utils.py _approximate_gcd (0.25.0): the chunk d in [lower_bound, max] that minimises
    the total upward padding sum((d - x % d) % d); ties prefer the larger d."""
    best_d, best_pad = max(1, lower_bound), None
    for d in range(max(1, lower_bound), max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad <= best_pad:
            best_d, best_pad = d, pad
    return best_d


def csa_fit_check_bytes(ratios: list[int], *, num_layers: int, sliding_window: int, head_dim: int,
                        index_head_dim: int, max_model_len: int, max_num_batched_tokens: int, block_size: int,
                        fp8_ds_mla: bool = True, kv_bytes: int = 2) -> int:
    """The KV bytes vLLM 0.25.0's start-up check asks for one request of max_model_len on a compressed-sparse-
    attention model (DeepSeek-V4), when every KV group is a UniformTypeKVCacheSpecs.

    Per layer (models/deepseek_v4/attention.py, compressor.py, v1/attention/backends/mla/sparse_swa.py): a
    sliding-window latent cache (SlidingWindowMLASpec, block 64, window sliding_window); with ratio r > 1 the
    compressed latent (MLAAttentionSpec, block_size, one row per r tokens) and the compressor's fp32 state
    (SlidingWindowMLASpec, block 4 / 8, window coff x r, state 2 x coff x head_dim, coff 2 for r = 4); with r = 4
    the indexer keys (MLAAttentionSpec, 132 B per r tokens) and the indexer compressor's state (index_head_dim).
    Rows are 584 B with fp8_ds_mla (FlashMLA), else head_dim x kv_bytes; pages are padded to 576 (fp8_ds_mla)
    or 512 B (v1/kv_cache_interface.py _apply_alignment_padding).
    Groups (kv_cache_utils.py group_and_unify_kv_cache_specs, _get_kv_cache_groups_uniform_groups): the MLA
    layers form one group; the windowed ones group by (block, window), each page padded up to the nearest MLA
    page size, and are split into chunks of num_layer_tuples (_approximate_gcd of the groups' tuple counts).
    _max_memory_usage_bytes_from_groups then asks num_layer_tuples x (sum of the MLA page sizes) x (sum over
    groups of the pages one request needs: cdiv(L, block_size) for MLA, cdiv(min(window - 1 + T, L), block) + 1
    for windows). DeepSeek-V4-Flash, fp8, block 256, L 30,000, T 16,384: 22 x 47,808 x 6,800 = 6.66 GiB.
    """
    align = 576 if fp8_ds_mla else 512
    row = 584 if fp8_ds_mla else head_dim * kv_bytes

    def pad(n: int) -> int:
        return cdiv(n, align) * align

    mla: list[int] = []  # page sizes of the MLA layers
    windows: dict[tuple[int, int], list[int]] = {}  # (block, window) -> page sizes
    for i in range(num_layers):
        r = ratios[i] if i < len(ratios) else 0
        windows.setdefault((64, sliding_window), []).append(pad(64 * row))
        if r > 1:
            mla.append(pad(block_size // r * row))
            coff = 2 if r == 4 else 1
            blk = 4 if r == 4 else 8
            windows.setdefault((blk, coff * r), []).append(pad(blk * 2 * coff * head_dim * 4))
        if r == 4:
            mla.append(pad(block_size // r * (index_head_dim + index_head_dim // 128 * 4)))
            windows.setdefault((4, 8), []).append(pad(4 * 2 * 2 * index_head_dim * 4))
    if not mla:
        return 0

    def tuples(pages: list[int]) -> int:
        return max(pages.count(p) for p in set(pages))

    counts = [tuples(mla)] + [tuples(p) for p in windows.values()]
    n_tuples = _approximate_gcd(counts, lower_bound=counts[0])
    sizes = sorted(set(mla))
    group_tuples = [tuples(mla)]
    group_pages = [cdiv(max_model_len, block_size)]
    for (blk, win), pages in windows.items():
        padded = [min(s for s in sizes if s >= p) for p in pages]
        per_size = max(padded.count(p) for p in set(padded))
        chunks = cdiv(per_size, n_tuples)
        need = cdiv(min(win - 1 + max_num_batched_tokens, max_model_len), blk) + 1
        for c in range(chunks):
            group_tuples.append(len(range(c, per_size, chunks)))
            group_pages.append(need)
    return max(group_tuples) * sum(sizes) * sum(group_pages)


FUSED_MOE_CHUNK = 32768  # envs.VLLM_FUSED_MOE_CHUNK_SIZE default (vllm/envs.py 0.10.1)


def dp_moe_gather_bytes(tokens: int, ranks: int, *, top_k: int, moe_intermediate_size: int, hidden_size: int,
                        moe_tp: int, persistent_workspace: bool, act_bytes: int = 2) -> int:
    """What the profiling run's MoE layers hold beyond one rank's batch when `ranks` DP (x PCP) ranks all-gather
    their tokens before the experts (bytes; 0 for one rank).

    Every DP rank runs the same dummy batch of `tokens`; the default dispatch gathers all ranks' tokens, M =
    ranks x tokens: vLLM 0.10.1 NaiveAll2AllManager.naive_multicast (distributed/device_communicators/all2all.py,
    an (M, H) buffer), 0.25.0 / 0.33.0 AgRsAll2AllManager (allgather_reducescatter, the default all2all_backend
    of config/parallel.py). The experts then run on M tokens:
    - 0.10.1 fused_experts_impl (fused_moe.py): chunks of C = 32,768 tokens, cache13 (C, top_k, max(N, K)) and
      cache2 (C x top_k, N / 2), and the output (M, K) (empty_like, not in place);
    - from 0.19 (the persistent WorkspaceManager; modular_kernel.py _allocate_buffers, 0.25.0, one chunk of M):
      workspace13 (M, top_k, max(N / 2, K)) shared with the output, workspace2 (M, top_k, max(N, K)).
    N = 2 x moe_intermediate_size / moe_tp, K = hidden size. The result is the difference to one rank's batch:
    the gathered input (and, in 0.10.1, output) and the larger caches. Qwen3-Coder-480B (H 6,144, I 2,560, top 8)
    with EP over DP 8 at 8,192 tokens, 0.10.1: 2 x 57,344 x 6,144 x 2 B + (32,768 - 8,192) x 8 x (6,144 + 2,560)
    x 2 B = 4.50 GiB."""
    if ranks <= 1 or not top_k or not moe_intermediate_size:
        return 0
    m = ranks * tokens
    n = 2 * moe_intermediate_size // max(moe_tp, 1)
    k = hidden_size
    if persistent_workspace:
        per_token = top_k * (max(n // 2, k) + max(n, k)) * act_bytes
        return (m - tokens) * (per_token + k * act_bytes)
    per_token = top_k * (max(n, k) + n // 2) * act_bytes
    return (min(m, FUSED_MOE_CHUNK) - min(tokens, FUSED_MOE_CHUNK)) * per_token + 2 * (m - tokens) * k * act_bytes
