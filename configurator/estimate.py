"""`estimate`: what vLLM will allocate and log for a model, a GPU and a set of flags.

One pure pipeline: resolve defaults for the release -> per-rank KV specs -> groups -> the memory
budget -> blocks, tokens, concurrency -> vLLM's own fit checks. The CLI, `plan` and `check` all
call `estimate()`; they only change the edges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from configurator.calibration import Calibration, overhead_scale
from configurator.errors import InputError
from configurator.hardware.catalog import GPU, custom_gpu, find_gpu
from configurator.memory.build import build_rank_specs, kv_heads_per_rank, pp_layer_split
from configurator.memory.capacity import CapacityRules, Worker, fit_check, kv_capacity
from configurator.memory.groups import KVCacheLayout, build_layout
from configurator.memory.kv_dtype import DTYPE_BYTES, KV_DTYPES, MODEL_DTYPE_KV, KVDtype
from configurator.memory.kv_specs import MambaSpec, RequestLimits
from configurator.memory.overheads import OverheadCoefficients, estimate_overheads
from configurator.memory.weights import weight_bytes
from configurator.model.hf_config import DSA_MODEL_TYPES
from configurator.model.resolve import resolve_model
from configurator.model.spec import ModelSpec
from configurator.units import GiB, MiB, cdiv, format_gib, human_bytes
from configurator.vllm import messages
from configurator.vllm.defaults import batch_defaults, derived_max_model_len
from configurator.vllm.overhead_data import coefficients_for
from configurator.vllm.versions import Behaviour, behaviour, uses_v2_runner

# CUDA context + cuBLAS handles created before vLLM's baseline snapshot (not counted against the
# KV pool, but they must fit in the (1 - util) margin): ~0.3-0.6 GiB per process (vLLM issue logs).
CUDA_CONTEXT_BYTES = 512 * MiB
NCCL_INIT_BYTES = 256 * MiB  # communicators and warm-up buffers with TP/PP > 1, also pre-baseline

_DTYPE_ALIASES = {"auto": None, "half": "float16", "float16": "float16", "bfloat16": "bfloat16",
                  "float": "float32", "float32": "float32", "fp16": "float16", "bf16": "bfloat16"}


class MemoryBreakdown(BaseModel):
    """Per GPU, on the tightest rank. Integer bytes."""

    total_bytes: int = Field(description="GPU memory as CUDA reports it (cudaMemGetInfo total)")
    requested_bytes: int = Field(description="ceil(total x gpu_memory_utilization): vLLM's budget")
    weights_bytes: int = Field(description="model weights on this rank ('Model loading took')")
    activation_bytes: int = Field(description="peak of the profiling forward pass and sampler")
    non_torch_bytes: int = Field(description="non-torch memory that grows after the baseline (NCCL, cuBLAS)")
    cudagraph_bytes: int = Field(description="CUDA-graph pool estimate subtracted before KV (0.20+)")
    other_bytes: int = Field(0, description="persistent runner / sampler buffers")
    kv_cache_bytes: int = Field(description="'Available KV cache memory' vLLM logs and sizes the pool from")


class GroupInfo(BaseModel):
    kind: str
    num_layers: int
    num_padding: int
    block_size: int
    page_bytes: int
    blocks_per_request: int


class KVCacheInfo(BaseModel):
    dtype: str = Field(description="element type actually stored")
    bytes_per_token: int = Field(description="what one more token of context costs on one GPU, "
                                             "across the layers that keep it")
    window_bytes_per_sequence: int = Field(0, description="sliding-window / chunked layers' KV per "
                                                          "sequence (bounded by the window)")
    state_bytes_per_sequence: int = Field(description="fixed recurrent state per sequence (Mamba / linear attention)")
    block_size: int
    bytes_per_block: int
    num_blocks: int = Field(description="blocks in the pool (min over workers, null block included)")
    blocks_per_request: int
    tokens: int = Field(description="'GPU KV cache size: N tokens'")
    max_concurrency: float = Field(description="'Maximum concurrency for L tokens per request: Cx'")
    groups: list[GroupInfo]


class ModelInfo(BaseModel):
    name: str
    model_type: str
    dtype: str
    num_hidden_layers: int
    layers_with_kv: dict[str, int]
    quantization: str | None
    weights_source: str
    notes: list[str]


class GPUInfo(BaseModel):
    name: str
    display_name: str
    total_bytes: int
    total_source: str
    count: int


class EstimateResult(BaseModel):
    """Everything `estimate` predicts; schemas/estimate.schema.json is generated from this."""

    fits: bool = Field(description="vLLM would start at the central prediction (no refusal predicted)")
    verdict: Literal["fits", "at-risk", "refused"] = Field(
        "fits", description="'refused': vLLM refuses even at the optimistic end of the error band; 'at-risk': "
                            "it refuses somewhere inside the band; 'fits': it starts across the band")
    kv_cache_bytes_low: int | None = Field(None, description="pessimistic end of the available-KV band (bytes)")
    kv_cache_bytes_high: int | None = Field(None, description="optimistic end of the available-KV band (bytes)")
    vllm_version: str
    model: ModelInfo
    gpu: GPUInfo
    flags: dict[str, Any] = Field(description="every resolved engine argument, defaults filled in")
    memory: MemoryBreakdown
    kv_cache: KVCacheInfo
    errors: list[str] = Field(description="vLLM's own refusal text, when it would refuse")
    warnings: list[str]
    derivation: list[str] = Field(description="the arithmetic, step by step, with the model's numbers")


@dataclass
class EstimateRequest:
    """Inputs: a model, a GPU, a vLLM release and vLLM flags by their EngineArgs names."""

    model: str | ModelSpec
    gpu: str | None = None
    gpu_memory: str | None = None
    vllm_version: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    gpu_memory_used: int = 0
    entry: str = "server"
    coefficients: OverheadCoefficients | None = None  # None: the release's fitted coefficients
    calibration: Calibration | None = None  # measured weights and overheads from a real log


def _check_flags(f: dict[str, Any]) -> None:
    util = f.get("gpu_memory_utilization")
    if util is not None and not (0 < util <= 1):
        raise InputError(f"--gpu-memory-utilization must be in (0, 1], got {util}")
    for k in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "max_num_seqs",
              "max_num_batched_tokens", "block_size", "num_gpu_blocks_override"):
        v = f.get(k)
        if v is not None and v < 1:
            raise InputError(f"--{k.replace('_', '-')} must be a positive integer, got {v}")
    mml = f.get("max_model_len")
    if mml is not None and mml != -1 and mml < 1:
        raise InputError(f"--max-model-len must be positive, 'auto' or -1, got {mml}")
    for k in ("kv_cache_memory_bytes", "cpu_offload_gb"):
        v = f.get(k)
        if v is not None and v < 0:
            raise InputError(f"--{k.replace('_', '-')} must not be negative, got {v}")


def _kv_dtype(name: str, model: ModelSpec, dtype: str) -> KVDtype:
    if name == "auto":
        name = model.quant.kv_cache_dtype or MODEL_DTYPE_KV.get(dtype, "bfloat16")
    if name not in KV_DTYPES:
        raise InputError(f"unknown --kv-cache-dtype '{name}' (known: auto, {', '.join(sorted(KV_DTYPES))})")
    kv = KV_DTYPES[name]
    if kv.mla_token_bytes is not None and not model.is_mla:
        raise InputError(f"--kv-cache-dtype {name} is only for MLA models")
    return kv


def _mla_block_size(b: Behaviour, gpu: GPU, kv: KVDtype, model: ModelSpec) -> tuple[int, str]:
    """Default block size of the MLA backend vLLM picks (see docs/vllm-versions.md)."""
    if model.model_type in DSA_MODEL_TYPES:
        return 64, "sparse-MLA backend (64)"
    sm = gpu.sm
    if sm >= 100:
        if b.mla_block == "flashmla":
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


def estimate(req: EstimateRequest) -> EstimateResult:
    """Predict vLLM's start-up for one deployment. Raises InputError on bad input."""
    b = behaviour(req.vllm_version or "latest")
    model = req.model if isinstance(req.model, ModelSpec) else resolve_model(req.model)
    if req.gpu_memory:
        gpu = custom_gpu(req.gpu_memory)
    elif req.gpu:
        gpu = find_gpu(req.gpu)
    else:
        raise InputError("name a GPU with --gpu (see `vllm-configurator gpus`) or give --gpu-memory")
    f = dict(req.flags)
    _check_flags(f)
    warnings: list[str] = []
    errors: list[str] = []
    derivation: list[str] = []

    tp = int(f.get("tensor_parallel_size") or 1)
    pp = int(f.get("pipeline_parallel_size") or 1)
    dp = int(f.get("data_parallel_size") or 1)
    if model.num_attention_heads % tp:
        raise InputError(f"Total number of attention heads ({model.num_attention_heads}) must be divisible "
                         f"by tensor parallel size ({tp}).")
    for g in model.layers:
        if g.kind in ("full", "sliding", "chunked") and g.num_kv_heads >= tp and g.num_kv_heads % tp:
            raise InputError(f"tensor parallel size {tp} does not divide the {g.num_kv_heads} KV heads")
        if g.kind == "mamba" and g.mamba is not None and g.mamba.num_heads and g.mamba.num_heads % tp:
            raise InputError(f"tensor parallel size {tp} does not divide the {g.mamba.num_heads} "
                             f"recurrent-state heads")
    if pp > model.num_hidden_layers:
        raise InputError(f"pipeline parallel size {pp} exceeds the {model.num_hidden_layers} layers")

    dtype_flag = str(f.get("dtype") or "auto").lower()
    if dtype_flag not in _DTYPE_ALIASES:
        raise InputError(f"unknown --dtype '{dtype_flag}' (auto, half, float16, bfloat16, float32)")
    dtype = _DTYPE_ALIASES[dtype_flag] or model.dtype
    kv_name = str(f.get("kv_cache_dtype") or "auto")
    kv = _kv_dtype(kv_name, model, dtype)
    if kv_name == "auto" and model.quant.kv_cache_dtype and not b.checkpoint_kv_auto:
        kv = _kv_dtype(MODEL_DTYPE_KV.get(dtype, "bfloat16"), model, dtype)
    elif kv_name == "auto" and model.quant.kv_cache_dtype:
        warnings.append(f"--kv-cache-dtype auto resolves to {kv.name}: the checkpoint declares a "
                        f"quantized KV cache ({model.quant.source})")
    if kv.is_fp8 and gpu.fp8_kv == "storage-only":
        warnings.append(f"{gpu.display_name} has no FP8 tensor cores: fp8 KV is stored in 8 bits and "
                        f"dequantized for attention (slower, same capacity)")

    # -- defaults of this release -------------------------------------------------------------
    util = float(f.get("gpu_memory_utilization") or b.default_gpu_memory_utilization)
    derived = derived_max_model_len(model, b)
    user_len = f.get("max_model_len")
    auto_len = user_len == -1
    if auto_len and not b.auto_max_model_len:
        raise InputError(f"--max-model-len auto/-1 is not supported by vLLM {b.version} (added in 0.15)")
    max_len = derived.value if user_len in (None, -1) else int(user_len)
    if user_len not in (None, -1) and max_len > derived.value:
        errors.append(messages.user_len_too_long(max_len, derived.value, derived.key))
    bd = batch_defaults(b, gpu, "server" if req.entry == "server" else "offline")
    seqs_user, mnbt_user = f.get("max_num_seqs"), f.get("max_num_batched_tokens")
    max_num_seqs = int(seqs_user or bd.max_num_seqs)
    mnbt = int(mnbt_user or bd.max_num_batched_tokens)
    chunked = f.get("enable_chunked_prefill", True) is not False
    if not chunked and mnbt_user is None:
        mnbt = max(max_len, mnbt)
    if mnbt_user is None and b.batch_clamp:
        mnbt = min(max_num_seqs * max_len, mnbt)
    if seqs_user is None and b.batch_clamp:
        max_num_seqs = min(max_num_seqs, mnbt)
    if mnbt < max_num_seqs:
        raise InputError(f"max_num_batched_tokens ({mnbt}) must be greater than or equal to "
                         f"max_num_seqs ({max_num_seqs}).")

    # -- per-rank KV specs and groups ---------------------------------------------------------
    user_bs = f.get("block_size")
    bs_reason = ""
    if user_bs:
        block_size = int(user_bs)
    elif model.is_mla:
        block_size, bs_reason = _mla_block_size(b, gpu, kv, model)
    else:
        block_size = 16
    mamba_conv = _state_bytes(f.get("mamba_cache_dtype"), dtype)
    mamba_ssm = _state_bytes(f.get("mamba_ssm_cache_dtype"), None) or mamba_conv
    if f.get("mamba_ssm_cache_dtype") in (None, "auto") and model.model_type == "nemotron_h" \
            and b.nemotron_h_ssm_dtype != "model":
        mamba_ssm = DTYPE_BYTES[b.nemotron_h_ssm_dtype]  # Nemotron-H's own default for its SSM state
    prefix_default = not model.has_mamba or b.hybrid_prefix_caching
    prefix = f.get("enable_prefix_caching", prefix_default) is not False and (
        not model.has_mamba or b.hybrid_prefix_caching_supported)
    align_mode = model.has_mamba and prefix and not (b.mamba_all_mode and not _is_gdn(model))
    kernel_block = 16
    if align_mode and b.mamba_checkpoint_block and _is_gdn(model) and gpu.sm == 90:
        kernel_block = 64  # FlashInfer GDN prefill checkpoints align to 64 tokens (0.33, Hopper)
    if b.hybrid_align == "fixed16":
        kernel_block = 16
    rank = build_rank_specs(model, tp=tp, kv_dtype=kv, block_size=block_size, user_block_size=bool(user_bs),
                            mamba_conv_bytes=mamba_conv, mamba_ssm_bytes=mamba_ssm,
                            kernel_block_size=kernel_block)
    if rank.block_size != block_size:
        bs_reason = rank.block_size_reason
    block_size = rank.block_size
    hma = not f.get("disable_hybrid_kv_cache_manager", False)
    if any(g.kind == "chunked" for g in model.layers) and not b.chunked_local_hma:
        hma = False
    layout = build_layout(list(rank.specs), hybrid_manager=hma)
    if layout.hybrid_manager_disabled:
        warnings.append("hybrid KV cache manager is off: sliding-window / chunked layers pay full-length KV")

    tc = model.text_config
    is_moe = bool(tc.get("num_experts") or tc.get("n_routed_experts") or tc.get("num_local_experts"))
    v2 = uses_v2_runner(b, model.model_type, is_moe, model.quant.method is not None or bool(f.get("quantization")))
    # max_concurrent_batches with async scheduling: pp + 1 on runner V2, else 2 (pp = 1) or pp
    mcb = (pp + 1 if v2 else (2 if pp == 1 else pp)) if b.in_flight == "batches" else 1
    mamba_blocks = 1
    if model.has_mamba and prefix:
        if b.mamba_all_mode and not _is_gdn(model):
            mamba_blocks = cdiv(max_len, block_size)
        else:
            ckpt = 1 if (b.mamba_checkpoint_block and (not _is_gdn(model) or gpu.sm == 90)) else 0
            mamba_blocks = 2 + ckpt
    limits = RequestLimits(max_len, mcb * mnbt, mamba_blocks)

    # -- the memory budget ---------------------------------------------------------------------
    cal = _usable_calibration(req.calibration, model, gpu, b, warnings)
    total = gpu.total_bytes
    if cal is not None and cal.measured.total_bytes:
        total = cal.measured.total_bytes
    requested = math.ceil(total * util) if b.requested_rounding == "ceil" else int(total * util)
    stages = pp_layer_split(model.num_hidden_layers, pp)
    w = weight_bytes(model, tp=tp, pp=pp, quantization=f.get("quantization"), dtype=dtype)
    weights = max(0, w.per_rank_bytes - int(float(f.get("cpu_offload_gb") or 0) * GiB))
    eager = bool(f.get("enforce_eager"))
    ov = estimate_overheads(
        hidden_size=model.hidden_size, intermediate_size=model.intermediate_size,
        num_attention_heads=model.num_attention_heads, num_kv_heads=model.num_kv_heads,
        head_dim=model.head_dim, vocab_size=model.vocab_size,
        num_layers_on_rank=len(stages[-1]), max_num_batched_tokens=mnbt, max_num_seqs=max_num_seqs,
        tp=tp, pp=pp, last_stage=True, enforce_eager=eager,
        cudagraph_counted=b.cudagraph_estimate and (not v2 or b.v2_cudagraph_estimate),
        v2_sampler_state=v2, coeffs=req.coefficients or coefficients_for(b.version),
        moe_intermediate_size=int(tc.get("moe_intermediate_size") or 0) if is_moe else 0,
        experts_per_token=int(tc.get("num_experts_per_tok") or tc.get("top_k_experts") or tc.get("moe_topk") or 0)
        if is_moe else 0)
    other = ov.runner_bytes if b.accounting == "consumed" else 0
    if cal is not None:
        weights, ov, other = _apply_calibration(cal, model, weights, ov, other, tp, pp, f, req, b,
                                                dtype, derivation)
    kv_bytes_flag = f.get("kv_cache_memory_bytes")
    if kv_bytes_flag:
        available = int(kv_bytes_flag)
        derivation.append(f"--kv-cache-memory-bytes {available:,} B ({format_gib(available)} GiB): "
                          f"vLLM skips profiling and ignores --gpu-memory-utilization")
    else:
        available = requested - weights - ov.activation_bytes - ov.non_torch_bytes - ov.cudagraph_bytes - other
    # free memory at start: vLLM refuses when it is below util x total
    pre_baseline = CUDA_CONTEXT_BYTES + (NCCL_INIT_BYTES if tp * pp > 1 else 0) + int(req.gpu_memory_used)
    free = total - pre_baseline
    if not kv_bytes_flag and free < requested:
        errors.append(messages.free_memory("cuda:0", free, total, util, requested))
    weights_oom = weights > free
    if weights_oom:
        errors.append(messages.weights_oom(weights, free, tp, pp))

    # -- workers: PP stages (TP ranks are identical) -------------------------------------------
    layer_stage = {}
    for s, r in enumerate(stages):
        for i in r:
            layer_stage[i] = s
    workers = []
    for s in range(pp):
        ids = frozenset(j for j, g in enumerate(rank.layers) if layer_stage.get(g.index, 0) == s)
        workers.append(Worker(available, ids if pp > 1 else None))
    rules = CapacityRules(tokens=b.tokens, fit_check=b.fit_check)

    if auto_len and layout.groups:
        fitted = _auto_fit(layout, workers, limits, rules)
        if fitted == 0:
            errors.append(messages.auto_fit_failed())
        else:
            if fitted < max_len:
                derivation.append(f"--max-model-len auto: reduced from {max_len:,} to {fitted:,} to fit "
                                  f"in {format_gib(available)} GiB of KV cache")
            max_len = fitted
            limits = limits.with_len(max_len)
            if mnbt_user is None:
                mnbt = min(max_num_seqs * max_len, int(bd.max_num_batched_tokens))
    cap = kv_capacity(layout, workers, limits, rules)
    if layout.groups and not weights_oom:
        limiting = min(workers, key=lambda wk: (wk.available_bytes // max(layout.bytes_per_block(wk.layer_ids), 1)))
        chk = fit_check(layout, limiting, limits, rules)
        if chk.no_memory:
            errors.append(messages.no_memory(b.messages))
        elif not chk.ok:
            errors.append(messages.too_long(b.messages, max_len, chk.needed_bytes, chk.available_bytes,
                                            chk.estimated_max_model_len))
    if model.has_mamba and b.hybrid_align == "kernel" and not eager and max_num_seqs > cap.num_blocks \
            and not weights_oom:
        errors.append(f"max_num_seqs ({max_num_seqs}) exceeds available Mamba cache blocks ({cap.num_blocks}). "
                      f"Each decode sequence requires one Mamba cache block, so CUDA graph capture cannot "
                      f"proceed. Please lower max_num_seqs to at most {cap.num_blocks} or increase "
                      f"gpu_memory_utilization.")
    if f.get("num_gpu_blocks_override"):
        warnings.append("--num-gpu-blocks-override forces the block count; capacity shown is from memory")

    # -- explanation figures --------------------------------------------------------------------
    grows, window_bytes, state = _per_sequence_costs(rank.specs, layout, max_len, limits)
    info = KVCacheInfo(
        dtype=kv.name, bytes_per_token=grows, window_bytes_per_sequence=window_bytes,
        state_bytes_per_sequence=state, block_size=block_size, bytes_per_block=cap.bytes_per_block,
        num_blocks=cap.num_blocks, blocks_per_request=cap.blocks_per_request, tokens=cap.num_tokens,
        max_concurrency=round(cap.max_concurrency, 2),
        groups=[GroupInfo(kind=g.spec.type_name, num_layers=len(g.layer_ids), num_padding=g.num_padding,
                          block_size=g.spec.block_size, page_bytes=g.spec.page_size_bytes,
                          blocks_per_request=g.blocks_per_request(limits)) for g in layout.groups])
    kinds: dict[str, int] = {}
    for g in model.layers:
        kinds[g.kind] = kinds.get(g.kind, 0) + 1
    resolved = {
        "model": model.name, "gpu_memory_utilization": util, "kv_cache_dtype": kv_name,
        "max_num_seqs": max_num_seqs, "max_model_len": max_len, "max_num_batched_tokens": mnbt,
        "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp,
        "block_size": block_size, "enforce_eager": eager, "quantization": f.get("quantization") or model.quant.method,
        "dtype": dtype, "kv_cache_memory_bytes": kv_bytes_flag, "enable_prefix_caching": prefix,
        "enable_chunked_prefill": chunked,
    }
    for k, v in f.items():
        resolved.setdefault(k, v)
    if bs_reason:
        derivation.append(f"block size {block_size}: {bs_reason}")
    derivation[len(derivation):] = explain_kv(model, rank.specs, kv, tp, max_len, max_num_seqs,
                                               grows, window_bytes, state)
    given = [name for name, v in (("max_num_seqs", seqs_user), ("max_num_batched_tokens", mnbt_user)) if v is None]
    derivation.insert(0, f"max_model_len {max_len:,} ({'user' if user_len not in (None, -1) else derived.why}); "
                         f"max_num_seqs {max_num_seqs}, max_num_batched_tokens {mnbt:,}"
                         + (f" ({' and '.join(given)}: vLLM's default for {bd.tier})" if given else ""))
    if model.quant.kv_cache_dtype is None and kv.is_fp8 and gpu.fp8_kv == "unsupported":
        warnings.append(f"{gpu.display_name} does not support an fp8 KV cache in current vLLM")
    fits = not errors
    return EstimateResult(
        fits=fits, verdict="fits" if fits else "refused", kv_cache_bytes_low=available,
        kv_cache_bytes_high=available, vllm_version=b.version,
        model=ModelInfo(name=model.name, model_type=model.model_type, dtype=dtype,
                        num_hidden_layers=model.num_hidden_layers, layers_with_kv=kinds,
                        quantization=model.quant.method,
                        weights_source=(model.weights_source or "checkpoint size") if w.source == "checkpoint"
                        else f"{w.params / 1e9:.2f}B parameters from config.json",
                        notes=list(model.notes)),
        gpu=GPUInfo(name=gpu.name, display_name=gpu.display_name, total_bytes=total,
                    total_source=gpu.total_source, count=tp * pp * dp),
        flags=resolved,
        memory=MemoryBreakdown(total_bytes=total, requested_bytes=requested, weights_bytes=weights,
                               activation_bytes=0 if kv_bytes_flag else ov.activation_bytes,
                               non_torch_bytes=0 if kv_bytes_flag else ov.non_torch_bytes,
                               cudagraph_bytes=0 if kv_bytes_flag else ov.cudagraph_bytes,
                               other_bytes=0 if kv_bytes_flag else other, kv_cache_bytes=available),
        kv_cache=info, errors=errors, warnings=warnings, derivation=derivation)


def _usable_calibration(cal: Calibration | None, model: ModelSpec, gpu: GPU, b: Behaviour,
                        warnings: list[str]) -> Calibration | None:
    """A calibration applies to the model, GPU and release it was measured on."""
    if cal is None:
        return None
    names = {model.name.lower(), (model.hf_id or "").lower()}
    mismatch = []
    if cal.model.lower() not in names:
        mismatch.append(f"model {cal.model}")
    if cal.gpu not in (gpu.name, "custom") and gpu.name != "custom":
        mismatch.append(f"GPU {cal.gpu}")
    if cal.vllm_version != b.version:
        mismatch.append(f"vLLM {cal.vllm_version}")
    if mismatch:
        warnings.append(f"calibration ignored: it was measured for {', '.join(mismatch)}")
        return None
    return cal


def _apply_calibration(cal: Calibration, model: ModelSpec, weights: int, ov, other: int, tp: int, pp: int,
                       f: dict, req: EstimateRequest, b: Behaviour, dtype: str, derivation: list[str]):
    """Measured weights and overheads replace the model's, scaled by the model's own ratios when
    the flags differ from the calibrated run."""
    from dataclasses import replace as dc_replace

    m = cal.measured
    same_layout = (int(cal.flags.get("tensor_parallel_size") or 1), int(cal.flags.get("pipeline_parallel_size") or 1)) \
        == (tp, pp)
    if m.weights_bytes:
        if same_layout:
            weights = m.weights_bytes
        else:  # the measured total, split as the model splits across these ranks
            weights = int(m.weights_bytes * weights / max(_cal_weights(cal, model, b, dtype), 1))
    predicted_now = ov.activation_bytes + ov.non_torch_bytes + ov.cudagraph_bytes + other
    scale = overhead_scale(predicted_now, cal.predicted_overhead_bytes)
    overhead = int(m.overhead_bytes * scale)
    graphs = int((m.cudagraph_bytes or 0) * scale) if ov.cudagraph_bytes else 0
    non_torch = int((m.non_torch_bytes or 0) * scale)
    activation = max(overhead - graphs - non_torch, 0)
    derivation.append(f"calibrated from {cal.source}: weights {format_gib(weights)} GiB measured, non-KV overhead "
                      f"{format_gib(m.overhead_bytes)} GiB measured x {scale:.3f} for these flags")
    return weights, dc_replace(ov, activation_bytes=activation, non_torch_bytes=non_torch,
                               cudagraph_bytes=graphs), 0


def _cal_weights(cal: Calibration, model: ModelSpec, b: Behaviour, dtype: str) -> int:
    w = weight_bytes(model, tp=int(cal.flags.get("tensor_parallel_size") or 1),
                     pp=int(cal.flags.get("pipeline_parallel_size") or 1),
                     quantization=cal.flags.get("quantization"), dtype=dtype)
    return w.per_rank_bytes


def _sz(n: float) -> str:
    return human_bytes(n)


def explain_kv(model: ModelSpec, specs: tuple, kv: KVDtype, tp: int, max_len: int, num_seqs: int,
               grows: int, window_bytes: int, state: int) -> list[str]:
    """The per-token / per-sequence / per-batch arithmetic with the model's own numbers."""
    lines: list[str] = []
    elem = kv.element_bits / 8
    elem_s = f"{elem:g} B" if kv.mla_token_bytes is None else f"{kv.mla_token_bytes} B/token"
    by_shape: dict[tuple, list] = {}
    for g, s in zip(model.layers, specs, strict=False):
        if isinstance(s, MambaSpec):
            by_shape.setdefault(("state", g.mamba.variant if g.mamba else ""), []).append((g, s))
        else:
            by_shape.setdefault((g.kind, s.num_kv_heads, g.head_size, g.head_size_v, g.window), []).append((g, s))
    n_total = model.num_hidden_layers
    for key, members in by_shape.items():
        g, s = members[0]
        n = len(members)
        if key[0] == "state":
            label = g.why.split(":")[0].removesuffix(" layer")
            lines.append(f"{n} of {n_total} layers are {label} layers: a fixed state of "
                         f"{s.real_page_size_bytes:,} B per sequence each, whatever the length "
                         f"(x {n} = {_sz(n * s.real_page_size_bytes)} per sequence)")
            continue
        per = n * s.bytes_per_token
        if g.kind == "mla":
            lines.append(f"{n} MLA layers x {g.head_size} latent (kv_lora_rank + qk_rope_head_dim) x {elem_s}"
                         f" = {per:,} B per token: one latent per token, not K and V, and not split by TP")
            continue
        heads = s.num_kv_heads
        hv = f"({g.head_size} + {g.head_size_v})" if g.head_size_v != g.head_size else f"2 x {g.head_size}"
        tp_note = f" ({g.num_kv_heads} KV heads / TP {tp})" if tp > 1 else ""
        what = {"full": "full attention", "sliding": f"sliding window {g.window}",
                "chunked": f"chunked attention, chunk {g.window}"}[g.kind]
        if hv.startswith("2 x"):
            formula = f"2 x {n} layers x ({heads} KV heads{tp_note} x {g.head_size} head_dim) x {elem_s}"
        else:
            formula = f"{n} layers x {heads} KV heads{tp_note} x {hv} head dims x {elem_s}"
        lines.append(f"{what}: {formula} = {per:,} B = {_sz(per)} per token")
    growing = any(g.kind in ("full", "mla") for g in model.layers)
    if grows and growing:
        seq = grows * max_len
        lines.append(f"KV per token {grows:,} B x {max_len:,} tokens = {_sz(seq)} per sequence; "
                     f"x {num_seqs:,} sequences = {_sz(seq * num_seqs)}")
    elif window_bytes:
        lines.append(f"every attention layer is windowed: at most {_sz(window_bytes)} per sequence; "
                     f"x {num_seqs:,} sequences = {_sz(window_bytes * num_seqs)}")
    if window_bytes and growing:
        lines.append(f"sliding-window / chunked layers keep at most their window: {_sz(window_bytes)} per "
                     f"sequence, however long it runs")
    if state:
        lines.append(f"recurrent state: {_sz(state)} per sequence (fixed, not per token)")
    attn_layers = [g for g in model.layers if g.kind != "mamba"]
    if len(attn_layers) < n_total and attn_layers and model.layers_of("full"):
        g0 = model.layers_of("full")[0]
        heads0 = kv_heads_per_rank(g0.num_kv_heads, tp)
        naive = 2 * n_total * heads0 * g0.head_size * elem
        if naive > grows > 0:
            lines.append(f"why not 2 x {n_total} layers x ({heads0} x {g0.head_size}) x "
                         f"{elem:g} B = {int(naive):,} B per token: only {len(model.layers_of('full'))} of "
                         f"{n_total} layers keep per-token KV; the naive formula overstates it "
                         f"{naive / grows:.1f}x")
    return lines


def _is_gdn(model: ModelSpec) -> bool:
    return any(g.mamba is not None and g.mamba.variant == "gdn" for g in model.layers)


def _state_bytes(name: Any, default_dtype: str | None) -> int:
    """--mamba-cache-dtype / --mamba-ssm-cache-dtype -> element bytes; 'auto' follows default_dtype."""
    n = str(name or "auto").lower()
    if n == "auto":
        return DTYPE_BYTES.get(default_dtype or "", 0)
    if n not in DTYPE_BYTES:
        raise InputError(f"unknown mamba cache dtype '{name}' (auto, float32, float16, bfloat16)")
    return DTYPE_BYTES[n]


def _auto_fit(layout: KVCacheLayout, workers: list[Worker], limits: RequestLimits,
              rules: CapacityRules) -> int:
    """vLLM's auto-fit: the longest max_model_len whose one request fits on every worker."""
    best = limits.max_model_len
    for wk in workers:
        chk = fit_check(layout, wk, limits, rules)
        if chk.no_memory:
            return 0
        if not chk.ok:
            best = min(best, chk.estimated_max_model_len)
    return best


def _per_sequence_costs(specs: tuple, layout: KVCacheLayout, max_len: int,
                        limits: RequestLimits) -> tuple[int, int, int]:
    """(bytes per token of layers that keep every token, window KV per sequence, fixed state)."""
    grows = window = state = 0
    full_types = ("FullAttentionSpec", "MLAAttentionSpec")
    for s in specs:
        if isinstance(s, MambaSpec):
            state += s.real_page_size_bytes
        elif layout.hybrid_manager_disabled or s.type_name in full_types:
            grows += s.bytes_per_token
        else:
            w = getattr(s, "sliding_window", 0) or getattr(s, "attention_chunk_size", 0)
            window += s.bytes_per_token * min(w, max_len)
    if grows == 0 and window:
        # every attention layer is windowed (Mistral-7B-v0.1): a token costs them until it leaves the window
        grows = sum(s.bytes_per_token for s in specs if not isinstance(s, MambaSpec))
    return grows, window, state
