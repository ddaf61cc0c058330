"""Stage 1, inputs: the release's behaviour, the model, the GPU and every flag resolved to a value.

Everything later stages need is decided here once: dtypes, the defaults vLLM fills in for this
release and GPU (max_model_len, max_num_seqs, max_num_batched_tokens, prefix caching), and which
model runner the release picks (it sets the concurrent batches a request's window must cover).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from configurator.errors import InputError
from configurator.estimate.features import v0_fallback
from configurator.estimate.loadable import block_shape_refusal, removed_architecture, v0_only
from configurator.estimate.result import EstimateRequest
from configurator.hardware.catalog import GPU, custom_gpu, find_gpu, no_kernel_image
from configurator.memory.kv_dtype import KV_DTYPES, MODEL_DTYPE_KV, KVDtype
from configurator.model.resolve import resolve_model
from configurator.model.spec import ModelSpec
from configurator.vllm import messages
from configurator.vllm.defaults import BatchDefaults, DerivedLen, batch_defaults, derived_max_model_len
from configurator.vllm.mm_items import prefix_lm_max_item_tokens
from configurator.vllm.versions import (
    CHECKPOINT_CONFIG_METHODS,
    SUPPORTED,
    Behaviour,
    behaviour,
    checkpoint_kv_followed,
    sampler_note,
    uses_v2_runner,
    v1_runs_kv_dtype,
    v2_fallback,
)

if TYPE_CHECKING:
    from configurator.estimate.speculative import SpecPlan

_DTYPE_ALIASES = {"auto": None, "half": "float16", "float16": "float16", "bfloat16": "bfloat16",
                  "float": "float32", "float32": "float32", "fp16": "float16", "bf16": "bfloat16"}


@dataclass(frozen=True)
class Inputs:
    """One deployment with every default of its release filled in (no memory arithmetic yet)."""

    b: Behaviour
    model: ModelSpec
    gpu: GPU
    flags: dict[str, Any]
    tp: int
    pp: int
    dp: int
    dtype: str
    kv_name: str  # as the user gave it ('auto' kept)
    kv: KVDtype  # what is stored
    util: float
    derived: DerivedLen
    user_len: int | None  # None: not given; -1: auto
    max_len: int
    batch: BatchDefaults
    seqs_user: int | None
    mnbt_user: int | None
    max_num_seqs: int
    mnbt: int
    chunked: bool
    eager: bool
    prefix: bool
    is_moe: bool
    v2: bool  # model runner V2
    mcb: int  # max_concurrent_batches: how many batches a request may have in flight
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    v0_reason: str | None = None  # vLLM would run its V0 engine, which is not modelled
    spec: SpecPlan | None = None  # --speculative-config resolved (configurator/estimate/features.py)

    @property
    def auto_len(self) -> bool:
        return self.user_len == -1


def check_flags(f: dict[str, Any]) -> None:
    """Range checks at the boundary: one clear InputError per bad value."""
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


def kv_dtype(name: str, model: ModelSpec, dtype: str) -> KVDtype:
    """--kv-cache-dtype -> the stored element type ('auto': the checkpoint's KV scheme or the model dtype)."""
    if name == "auto":
        name = model.quant.kv_cache_dtype or MODEL_DTYPE_KV.get(dtype, "bfloat16")
    if name not in KV_DTYPES:
        raise InputError(f"unknown --kv-cache-dtype '{name}' (known: auto, {', '.join(sorted(KV_DTYPES))})")
    kv = KV_DTYPES[name]
    if kv.mla_token_bytes is not None and not model.is_mla:
        raise InputError(f"--kv-cache-dtype {name} is only for MLA models")
    return kv


def resolve_gpu(req: EstimateRequest) -> GPU | None:
    if req.gpu_memory:
        return custom_gpu(req.gpu_memory)
    if req.gpu:
        return find_gpu(req.gpu)
    return None


def _check_parallel(model: ModelSpec, tp: int, pp: int) -> None:
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


# Without a GPU, the per-token and per-sequence arithmetic still holds: it runs against a stand-in
# of unknown architecture (no Hopper / Blackwell block-size rules), whose budget is never shown.
NO_GPU = GPU(name="", display_name="no GPU given", vendor="nvidia", total_bytes=80 * 2**30,
             total_source="none: pass --gpu or --gpu-memory", compute_capability="")


def resolve_inputs(req: EstimateRequest) -> Inputs:
    """Resolve the request for one release and GPU (NO_GPU when none is named). Raises InputError."""
    b = behaviour(req.vllm_version or "latest")
    model = req.model if isinstance(req.model, ModelSpec) else resolve_model(req.model)
    gpu = resolve_gpu(req) or NO_GPU
    f = dict(req.flags)
    check_flags(f)
    warnings: list[str] = []
    errors: list[str] = []
    tp = int(f.get("tensor_parallel_size") or 1)
    pp = int(f.get("pipeline_parallel_size") or 1)
    dp = int(f.get("data_parallel_size") or 1)
    _check_parallel(model, tp, pp)
    dtype, kv_name, kv = _resolve_dtypes(b, model, gpu, f, warnings, errors)

    util = float(f.get("gpu_memory_utilization") or b.default_gpu_memory_utilization)
    derived = derived_max_model_len(model, b)
    user_len = f.get("max_model_len")
    if user_len == -1 and not b.auto_max_model_len:
        raise InputError(f"--max-model-len auto/-1 is not supported by vLLM {b.version} (added in 0.15)")
    max_len = derived.default_len if user_len in (None, -1) else int(user_len)
    if user_len not in (None, -1) and max_len > derived.value:
        errors.append(messages.user_len_too_long(max_len, derived.value, derived.key))
    bd = batch_defaults(b, gpu, "server" if req.entry == "server" else "offline")
    seqs_user, mnbt_user = f.get("max_num_seqs"), f.get("max_num_batched_tokens")
    max_num_seqs, mnbt, chunked = _batch_limits(b, model, f, bd, max_len)

    prefix_default = not model.has_mamba or b.hybrid_prefix_caching
    prefix = f.get("enable_prefix_caching", prefix_default) is not False and (
        not model.has_mamba or b.hybrid_prefix_caching_supported)
    tc = model.text_config
    is_moe = bool(tc.get("num_experts") or tc.get("n_routed_experts") or tc.get("num_local_experts"))
    v2 = uses_v2_runner(b, model.architectures, is_moe, model.quant.method is not None or bool(f.get("quantization")),
                        hybrid=model.has_mamba)
    # max_concurrent_batches with async scheduling: pp + 1 on runner V2, else 2 (pp = 1) or pp
    mcb = (pp + 1 if v2 else (2 if pp == 1 else pp)) if b.in_flight == "batches" else 1
    _refusals(b, model, gpu, f, tp, errors)
    v0 = v0_reason(b, gpu, kv_name, model.is_mla) or v0_only(model, b.version) or v0_fallback(b.version, f)
    spec = _plan_speculative(model, f, tp=tp, dtype=dtype, version=b.version)
    if v2 and (off := v2_fallback(b, f, spec.method if spec else None, tp=tp, pp=pp,
                                  mamba_all=str(f.get("mamba_cache_mode")) == "all")):
        v2, mcb = False, ((2 if pp == 1 else pp) if b.in_flight == "batches" else 1)
        warnings.append(f"Model Runner V2 does not yet support {', '.join(off)}; using the V1 model runner")
    if note := sampler_note(b, req.flashinfer_installed):
        warnings.append(note)
    if spec is not None and spec.error:
        errors.append(spec.error)
    return Inputs(v0_reason=v0, spec=spec, b=b, model=model, gpu=gpu, flags=f, tp=tp, pp=pp, dp=dp, dtype=dtype,
                  kv_name=kv_name, kv=kv,
                  util=util, derived=derived, user_len=user_len, max_len=max_len, batch=bd, seqs_user=seqs_user,
                  mnbt_user=mnbt_user, max_num_seqs=max_num_seqs, mnbt=mnbt, chunked=chunked,
                  eager=bool(f.get("enforce_eager")), prefix=prefix, is_moe=is_moe, v2=v2, mcb=mcb,
                  errors=tuple(errors), warnings=tuple(warnings))



def _plan_speculative(model: ModelSpec, f: dict[str, Any], *, tp: int, dtype: str, version: str) -> SpecPlan | None:
    """plan_speculative, its module imported only when --speculative-config is given (None without it, as
    plan_speculative answers)."""
    if f.get("speculative_config") in (None, "", "{}"):
        return None
    from configurator.estimate.speculative import plan_speculative

    return plan_speculative(model, f, tp=tp, dtype=dtype, quantization=f.get("quantization"), resolve=resolve_model,
                            version=version)

def _resolve_dtypes(b: Behaviour, model: ModelSpec, gpu: GPU, f: dict[str, Any], warnings: list[str],
                    errors: list[str]) -> tuple[str, str, KVDtype]:
    """(the model dtype, --kv-cache-dtype as given, the KV element type stored); what the release refuses about
    them (and about --kv-cache-memory-bytes and a quantization method without its config) joins `errors`."""
    dtype_flag = str(f.get("dtype") or "auto").lower()
    if dtype_flag not in _DTYPE_ALIASES:
        raise InputError(f"unknown --dtype '{dtype_flag}' (auto, half, float16, bfloat16, float32)")
    dtype = _DTYPE_ALIASES[dtype_flag] or model.dtype
    gpu_name = gpu.product_name or gpu.display_name
    if dtype == "bfloat16" and 0 < gpu.sm < 80:
        if dtype_flag == "auto" and b.auto_dtype_fallback:
            dtype = "float16"
            warnings.append(messages.dtype_fallback(gpu_name))
        else:
            errors.append(messages.bf16_unsupported(gpu_name, gpu.compute_capability))
    if f.get("kv_cache_memory_bytes") and not b.kv_cache_memory_bytes_flag:
        # argparse refuses an option the release does not have; the figures still use the given size
        errors.append(f"unrecognized arguments: --kv-cache-memory-bytes (vLLM {b.version} does not have it; "
                      f"added in 0.10.2)")
    method = str(f.get("quantization") or "").lower()
    if method in CHECKPOINT_CONFIG_METHODS and model.quant.method is None:
        errors.append(messages.quant_config_missing(method))
    kv_name = str(f.get("kv_cache_dtype") or "auto")
    kv = kv_dtype(kv_name, model, dtype)
    if kv_name == "auto" and model.quant.kv_cache_dtype and not checkpoint_kv_followed(b, model.quant.method):
        kv = kv_dtype(MODEL_DTYPE_KV.get(dtype, "bfloat16"), model, dtype)
    elif kv_name == "auto" and model.quant.kv_cache_dtype:
        warnings.append(f"--kv-cache-dtype auto resolves to {kv.name}: the checkpoint declares a "
                        f"quantized KV cache ({model.quant.source})")
    if kv.is_fp8 and gpu.fp8_kv == "storage-only":
        warnings.append(f"{gpu.display_name} has no FP8 tensor cores: fp8 KV is stored in 8 bits and "
                        f"dequantized for attention (slower, same capacity)")
    return dtype, kv_name, kv


def _batch_limits(b: Behaviour, model: ModelSpec, f: dict[str, Any], bd: BatchDefaults,
                  max_len: int) -> tuple[int, int, bool]:
    """(max_num_seqs, max_num_batched_tokens, chunked prefill) as the release fills in and clamps them."""
    seqs_user, mnbt_user = f.get("max_num_seqs"), f.get("max_num_batched_tokens")
    max_num_seqs = int(seqs_user or bd.max_num_seqs)
    mnbt = int(mnbt_user or bd.max_num_batched_tokens)
    chunked = f.get("enable_chunked_prefill", True) is not False or b.chunked_forced
    if not chunked and mnbt_user is None:
        mnbt = max(max_len, mnbt)
    if mnbt_user is None and b.mm_prefix_lm_batch_floor:
        mnbt = max(mnbt, prefix_lm_max_item_tokens(model))  # one media item fits one batch
    if mnbt_user is None and b.mnbt_clamp:
        mnbt = min(max_num_seqs * max_len, mnbt)
    if seqs_user is None and b.seqs_clamp:
        max_num_seqs = min(max_num_seqs, mnbt)
    if mnbt < max_num_seqs:
        raise InputError(f"max_num_batched_tokens ({mnbt}) must be greater than or equal to "
                         f"max_num_seqs ({max_num_seqs}).")
    return max_num_seqs, mnbt, chunked


def _refusals(b: Behaviour, model: ModelSpec, gpu: GPU, f: dict[str, Any], tp: int, errors: list[str]) -> None:
    """Start-up refusals that come before memory, added to `errors` in the order vLLM meets them."""
    # after the config checks vLLM makes at start-up, the first kernel launch fails on a GPU whose
    # architecture the release's wheel has no kernels for
    if arch := no_kernel_image(gpu, b.version, SUPPORTED):
        errors.append(arch)
    # refusals before memory (configurator/estimate/loadable.py): the registry, then the weights' shapes
    if removed := removed_architecture(model, b.version):
        errors.insert(0, removed)
    elif shard := block_shape_refusal(model, f, tp):
        errors.append(shard)


def v0_reason(b: Behaviour, gpu: GPU, kv_name: str, is_mla: bool = False) -> str | None:
    """Why vLLM would run its V0 engine here (not modelled), or None."""
    if b.engine == "v0":
        return (f"vLLM {b.version} runs the V0 engine by default (V1 is the default from 0.8.0), and V0's "
                f"start-up is not modelled")
    if b.v1_needs_sm80 and 0 < gpu.sm < 80:
        why = messages.v1_fallback("Compute Capability < 8.0")
    elif not v1_runs_kv_dtype(b, gpu.sm, kv_name, is_mla):  # configurator/vllm/versions.py v1_fp8_kv
        why = messages.v1_fallback("--kv-cache-dtype")
    else:
        return None
    return f"vLLM {b.version} would log '{why}' (EngineArgs._is_v1_supported_oracle); V0 is not modelled"
