"""Stage 3, KV layout: one rank's per-layer KV specs, their groups, and one request's limits.

Mirrors each layer's get_kv_cache_spec, vLLM's block-size choice (user, MLA backend, hybrid
alignment) and get_kv_cache_groups; the limits say how many blocks one request of max_model_len
holds in each group (window + in-flight tokens, Mamba state blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from configurator.errors import InputError
from configurator.estimate.inputs import Inputs
from configurator.hardware.catalog import GPU
from configurator.memory.build import RankSpecs, build_rank_specs
from configurator.memory.groups import KVCacheLayout, build_layout
from configurator.memory.kv_dtype import DTYPE_BYTES, KVDtype
from configurator.memory.kv_specs import RequestLimits
from configurator.memory.per_model import per_model
from configurator.model.hf_config import DSA_MODEL_TYPES
from configurator.model.spec import ModelSpec
from configurator.units import cdiv
from configurator.vllm.versions import Behaviour, hybrid_alignment


@dataclass(frozen=True)
class KVPlan:
    """The KV layout of the tightest rank and the limits of one request."""

    rank: RankSpecs
    layout: KVCacheLayout
    block_size: int
    block_size_reason: str
    limits: RequestLimits
    warnings: tuple[str, ...] = ()


def mla_block_size(b: Behaviour, gpu: GPU, kv: KVDtype, model: ModelSpec) -> tuple[int, str]:
    """Default block size of the MLA backend vLLM picks (see docs/vllm-versions.md)."""
    if model.model_type in DSA_MODEL_TYPES:
        return 64, "sparse-MLA backend (64)"
    sm = gpu.sm
    if sm // 10 == 12:  # consumer Blackwell: only Triton MLA supports it (platforms/cuda.py priorities)
        return 16, "Triton MLA on sm12x (16)"
    if sm >= 100 and b.mla_block == "flashmla_hopper":  # FlashMLA is Hopper-only; CUTLASS only when forced
        return 16, "Triton MLA (16): FlashMLA runs on Hopper only in this release"
    if sm >= 100 and b.mla_block == "cutlass_cc100" and sm != 100:  # is_device_capability(100), exact
        return 16, "Triton MLA (16): CUTLASS MLA is chosen only on compute capability 10.0 in this release"
    if sm >= 100:
        if b.mla_block in ("flashmla", "cutlass_cc100"):
            return 128, "CUTLASS MLA on Blackwell (128)"
        if b.mla_block == "fi_mla":
            nope = int(model.text_config.get("qk_nope_head_dim") or 0)
            return (64, "FlashInfer MLA on Blackwell (64)") if nope == 128 else (128, "CUTLASS MLA (128)")
        return 32, "FlashInfer MLA on Blackwell (32)"
    if sm == 90:
        if b.mla_block == "fa_mla" and not kv.is_fp8:
            return 16, "FlashAttention MLA on Hopper (16)"
        return 64, "FlashMLA on Hopper (64)"
    return 16, "Triton MLA (16)"


def mamba_chunk_size(model: ModelSpec) -> int:
    """ModelConfig.get_mamba_chunk_size: mamba_chunk_size, else chunk_size, else 2048 (Mamba1)."""
    tc = model.text_config
    return int(tc.get("mamba_chunk_size") or tc.get("chunk_size") or 2048)


def is_gdn(model: ModelSpec) -> bool:
    return any(g.mamba is not None and g.mamba.variant == "gdn" for g in model.layers)


def state_bytes(name: Any, default_dtype: str | None) -> int:
    """--mamba-cache-dtype / --mamba-ssm-cache-dtype -> element bytes; 'auto' follows default_dtype."""
    n = str(name or "auto").lower()
    if n == "auto":
        return DTYPE_BYTES.get(default_dtype or "", 0)
    if n not in DTYPE_BYTES:
        raise InputError(f"unknown mamba cache dtype '{name}' (auto, float32, float16, bfloat16)")
    return DTYPE_BYTES[n]


def gdn_flashinfer_prefill(model: ModelSpec, gpu: GPU) -> bool:
    """Gated DeltaNet prefill on FlashInfer, which exports 64-token-aligned checkpoints (0.33):
    Hopper (sm90); data-centre and consumer Blackwell (sm10x / sm12x) when key heads are 128 wide
    (and the wheel's CUDA runtime is 13+, as the 0.33 wheels' is taken to be)
    (model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py::_resolve_gdn_prefill_backend, 0.33.0)."""
    if gpu.sm == 90:
        return True
    k_dims = {g.mamba.k_head_dim for g in model.layers if g.mamba is not None and g.mamba.variant == "gdn"}
    return gpu.sm // 10 in (10, 12) and k_dims == {128}


def mamba_blocks_per_request(inp: Inputs, block_size: int) -> int:
    """Blocks a Mamba-family group holds per request: 1 ('none'), cdiv(L, block) ('all', 0.15-0.27),
    or 2 (+1 checkpoint block in 0.33) in 'align' mode; with speculative decoding each mode holds
    num_speculative_tokens more (MambaSpec.num_speculative_blocks, v1/kv_cache_interface.py
    max_memory_usage_bytes; set from the speculative config in model_executor/layers/mamba/abstract.py,
    0.25.0 and 0.33.0, where --use-replayssm, off by default, makes it 0)."""
    model, b = inp.model, inp.b
    spec = inp.spec.num_speculative_tokens if inp.spec is not None else 0
    if not (model.has_mamba and inp.prefix):
        return 1 + spec
    if b.mamba_all_mode and model.mamba_all_mode_capable:
        return cdiv(inp.max_len, block_size) + spec
    ckpt = 1 if (b.mamba_checkpoint_block and (not is_gdn(model) or gdn_flashinfer_prefill(model, inp.gpu))) else 0
    return 2 + ckpt + spec


def with_draft_layers(rank: RankSpecs, inp: Inputs, mamba_conv: int, mamba_ssm: int) -> RankSpecs:
    """A drafter's attention layers register KV specs in the same pool (vllm/v1/worker/gpu_model_runner.py
    get_kv_cache_spec walks every Attention layer, the drafter's included, 0.33.0), at the target's block size."""
    spec = inp.spec
    if spec is None or not spec.kv_layers or spec.draft_model is None:
        return rank
    draft = replace(spec.draft_model, layers=spec.kv_layers, num_hidden_layers=len(spec.kv_layers))
    d = build_rank_specs(draft, tp=inp.tp, kv_dtype=inp.kv, block_size=rank.block_size, user_block_size=True,
                         mamba_conv_bytes=mamba_conv, mamba_ssm_bytes=mamba_ssm,
                         num_speculative_tokens=spec.num_speculative_tokens)
    return replace(rank, specs=rank.specs + d.specs, layers=rank.layers + d.layers)


@per_model  # pure in the frozen specs, one tuple per model and arguments (build_rank_specs is remembered too)
def _layout(specs: tuple, hybrid_manager: bool, pad_ratio: float) -> KVCacheLayout:
    """build_layout once per specs tuple: `check` estimates the same few models at many releases and lengths."""
    return build_layout(list(specs), hybrid_manager=hybrid_manager, pad_ratio=pad_ratio)


def plan_kv_layout(inp: Inputs) -> KVPlan:
    """Per-rank specs, groups and request limits for the resolved inputs."""
    f, b, model, gpu = inp.flags, inp.b, inp.model, inp.gpu
    warnings: list[str] = []
    user_bs = f.get("block_size")
    bs_reason = ""
    if user_bs:
        block_size = int(user_bs)
    elif model.is_mla:
        block_size, bs_reason = mla_block_size(b, gpu, inp.kv, model)
    else:
        block_size = 16
    mamba_conv = state_bytes(f.get("mamba_cache_dtype"), inp.dtype)
    mamba_ssm = state_bytes(f.get("mamba_ssm_cache_dtype"), None) or mamba_conv
    if b.mamba_state_in_kv_dtype:  # <= 0.10.0: MambaSpec(dtype=kv_cache_dtype) for conv and SSM state
        mamba_conv = mamba_ssm = max(inp.kv.element_bits // 8, 1)
    # a config's SSM-state dtype counts only where vLLM reads it (model_executor/models/config.py): Nemotron-H
    # (mamba_ssm_cache_dtype) and, from 0.17, Qwen3.5 (mamba_ssm_dtype); never over a user's choice
    user_ssm = str(f.get("mamba_ssm_cache_dtype") or "auto").lower() != "auto"
    config_ssm = not user_ssm and not b.mamba_state_in_kv_dtype and (model.model_type == "nemotron_h" or (
        b.qwen35_ssm_key and any(a.startswith("Qwen3_5") for a in model.architectures)))
    if f.get("mamba_ssm_cache_dtype") in (None, "auto") and model.model_type == "nemotron_h" \
            and b.nemotron_h_ssm_dtype != "model":
        mamba_ssm = DTYPE_BYTES[b.nemotron_h_ssm_dtype]  # Nemotron-H's own default for its SSM state
    align_mode = model.has_mamba and inp.prefix and not (b.mamba_all_mode and model.mamba_all_mode_capable)
    kernel_block = 16
    if align_mode and b.mamba_checkpoint_block and is_gdn(model) and gdn_flashinfer_prefill(model, gpu):
        kernel_block = 64  # FlashInfer GDN prefill checkpoints align to 64 tokens (0.33, Hopper and Blackwell)
    if b.hybrid_align != "kernel":  # 0.10-0.19: the alignment by model kind and GPU, not the kernel block
        kernel_block = hybrid_alignment(b, gpu.sm, model.is_mla, model.head_dim)
    if model.has_mamba and model.is_mla and b.hybrid_mla_align_128 and b.hybrid_align == "kernel":
        kernel_block = max(kernel_block, 128)  # TRTLLM / FlashInfer MLA decode kernels (0.27+)
    if model.has_mamba and inp.prefix and b.mamba_all_mode and model.mamba_all_mode_capable:
        # mamba_cache_mode 'all' (0.15-0.27): the block is a multiple of lcm(Mamba chunk, alignment)
        # (model_executor/models/config.py 0.15-0.17, platforms/interface.py 0.20-0.27)
        kernel_block = math.lcm(mamba_chunk_size(model), kernel_block)
    k = inp.spec.num_speculative_tokens if inp.spec else 0
    rank = build_rank_specs(model, tp=inp.tp, kv_dtype=inp.kv, block_size=block_size,
                            user_block_size=bool(user_bs), mamba_conv_bytes=mamba_conv,
                            mamba_ssm_bytes=mamba_ssm, kernel_block_size=kernel_block, config_ssm_dtype=config_ssm,
                            user_ssm_dtype=user_ssm or b.mamba_state_in_kv_dtype,
                            num_speculative_tokens=k)
    if rank.block_size != block_size:
        bs_reason = rank.block_size_reason
    rank = with_draft_layers(rank, inp, mamba_conv, mamba_ssm)
    block_size = rank.block_size
    hma = not f.get("disable_hybrid_kv_cache_manager", False)
    if any(g.kind == "chunked" for g in model.layers) and not b.chunked_local_hma:
        hma = False
    layout = _layout(rank.specs, hma, b.group_pad_ratio)
    if layout.hybrid_manager_disabled:
        warnings.append("hybrid KV cache manager is off: sliding-window / chunked layers pay full-length KV")
    limits = RequestLimits(inp.max_len, inp.mcb * inp.mnbt, mamba_blocks_per_request(inp, block_size))
    return KVPlan(rank=rank, layout=layout, block_size=block_size, block_size_reason=bs_reason,
                  limits=limits, warnings=tuple(warnings))
