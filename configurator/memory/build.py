"""Build one tensor-parallel rank's per-layer KV specs from a ModelSpec.

Mirrors each layer's get_kv_cache_spec in vLLM and, for hybrid attention + Mamba models, the
attention block-size alignment that makes one attention page cover one Mamba state
(vllm/platforms/interface.py::_align_hybrid_block_size; in older releases
HybridAttentionMambaModelConfig.verify_and_update_config).
"""

from __future__ import annotations

from dataclasses import dataclass

from configurator.memory.kv_dtype import DTYPE_BYTES, KVDtype
from configurator.memory.kv_specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)
from configurator.memory.per_model import per_model
from configurator.model.spec import LayerGeometry, ModelSpec
from configurator.units import cdiv


@dataclass(frozen=True)
class RankSpecs:
    """The specs one TP rank registers, in model layer order, and the block size in force."""

    specs: tuple[KVCacheSpec, ...]
    layers: tuple[LayerGeometry, ...]
    block_size: int
    block_size_reason: str


def kv_heads_per_rank(total_kv_heads: int, tp: int) -> int:
    """ModelConfig.get_num_kv_heads: heads split across ranks, at least one (replicated)."""
    return max(1, total_kv_heads // tp)


@per_model  # pure in the frozen spec and arguments; estimated many times per run (check)
def build_rank_specs(model: ModelSpec, *, tp: int, kv_dtype: KVDtype, block_size: int,
                     user_block_size: bool, mamba_conv_bytes: int, mamba_ssm_bytes: int,
                     kernel_block_size: int = 16, num_speculative_tokens: int = 0,
                     config_ssm_dtype: bool = True, user_ssm_dtype: bool = False) -> RankSpecs:
    """Specs for one rank. `block_size` is the attention block size before hybrid alignment.
    `config_ssm_dtype`: the config's own SSM-state dtype applies (else `mamba_ssm_bytes` for every layer).
    `user_ssm_dtype`: the user chose --mamba-ssm-cache-dtype, which overrides a layer's own choice too."""
    reason = "user --block-size" if user_block_size else f"default ({block_size})"
    mamba_pages = []
    for g in model.layers:
        if g.kind == "mamba" and g.mamba is not None:
            conv, ssm = g.mamba.state_elements(tp, num_speculative_tokens)
            mamba_pages.append(conv * mamba_conv_bytes
                               + ssm * _ssm_bytes(g, mamba_ssm_bytes, config_ssm_dtype, user_ssm_dtype))
    attn_token_bytes = max((_attn_token_bytes(g, tp, kv_dtype) for g in model.layers
                            if g.kind != "mamba"), default=0)
    mamba_padded = None
    if mamba_pages and attn_token_bytes:
        # Raise the attention block until one attention page >= the largest Mamba page:
        # Qwen3-Next (2,048 B/token, Mamba page 1,097,728 B): 16 x cdiv(1,097,728, 16 x 2,048) = 544.
        align = max(kernel_block_size, block_size)
        needed = align * cdiv(max(mamba_pages), align * attn_token_bytes)
        if needed > block_size:
            block_size = needed
            reason = (f"raised to {block_size} so one attention page ({attn_token_bytes:,} B/token) "
                      f"covers a Mamba state ({max(mamba_pages):,} B)")
        mamba_padded = block_size * attn_token_bytes
    specs: list[KVCacheSpec] = []
    for g in model.layers:
        specs.append(_spec(g, tp, kv_dtype, block_size, mamba_conv_bytes, mamba_ssm_bytes,
                           mamba_padded, num_speculative_tokens, config_ssm_dtype, user_ssm_dtype))
    return RankSpecs(tuple(specs), model.layers, block_size, reason)


def _ssm_bytes(g: LayerGeometry, default: int, use_config: bool = True, user_set: bool = False) -> int:
    if g.mamba is not None and g.mamba.ssm_dtype and (use_config or (g.mamba.ssm_dtype_fixed and not user_set)):
        # KDA keeps its recurrent state in float32 under 'auto' whatever the model (kda_state_dtype)
        return DTYPE_BYTES.get(g.mamba.ssm_dtype, default)
    return default


def _attn_token_bytes(g: LayerGeometry, tp: int, kv_dtype: KVDtype) -> int:
    if g.kind == "mla":
        if g.kv_bytes_override is not None:
            return g.head_size * g.kv_bytes_override
        return kv_dtype.mla_token_bytes or kv_dtype.head_bytes(g.head_size)
    heads = kv_heads_per_rank(g.num_kv_heads, tp)
    return heads * (kv_dtype.head_bytes(g.head_size) + kv_dtype.head_bytes(g.head_size_v))


def _spec(g: LayerGeometry, tp: int, kv_dtype: KVDtype, block_size: int, conv_bytes: int,
          ssm_bytes: int, mamba_padded: int | None, num_spec: int, use_config: bool = True,
          user_set: bool = False) -> KVCacheSpec:
    if g.kind == "mamba":
        assert g.mamba is not None
        conv, ssm = g.mamba.state_elements(tp, num_spec)
        return MambaSpec(block_size, conv, ssm, conv_bytes, _ssm_bytes(g, ssm_bytes, use_config, user_set),
                         mamba_padded)
    if g.kind == "mla":
        token_bytes = g.head_size * g.kv_bytes_override if g.kv_bytes_override is not None else None
        return MLAAttentionSpec(block_size, 1, g.head_size, 0, kv_dtype, token_bytes=token_bytes)
    heads = kv_heads_per_rank(g.num_kv_heads, tp)
    if g.kind == "sliding" and g.window:
        return SlidingWindowSpec(block_size, heads, g.head_size, g.head_size_v, kv_dtype,
                                 sliding_window=g.window)
    if g.kind == "chunked" and g.window:
        return ChunkedLocalAttentionSpec(block_size, heads, g.head_size, g.head_size_v, kv_dtype,
                                         attention_chunk_size=g.window)
    return FullAttentionSpec(block_size, heads, g.head_size, g.head_size_v, kv_dtype)


def pp_layer_split(num_hidden_layers: int, pp: int) -> list[range]:
    """vllm/distributed/utils.py::get_pp_indices: num_layers // pp each; the remainder goes one
    each to the stages before the last, starting from the second-to-last."""
    base = num_hidden_layers // pp
    sizes = [base] * pp
    rem = num_hidden_layers % pp
    for i in range(rem):
        sizes[pp - 2 - i if pp >= 2 else 0] += 1
    out, start = [], 0
    for s in sizes:
        out.append(range(start, start + s))
        start += s
    return out
