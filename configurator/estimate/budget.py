"""Stage 2, budget: vLLM's requested memory and what it subtracts before the KV pool, per GPU.

requested = ceil(total x util) (float product before 0.15); available KV = requested - weights -
activation peak - non-torch - CUDA-graph estimate - runner buffers (vllm/v1/worker/gpu_worker.py
determine_available_memory), or exactly --kv-cache-memory-bytes. A calibration from a real log
replaces the predicted weights and overheads. Also vLLM's own start-up refusals about memory:
free memory below the request, weights that do not load.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

from configurator.estimate.features import FeatureMemory, flag_mm_limits, plan_features
from configurator.estimate.inputs import Inputs
from configurator.estimate.result import CalibrationLike, EstimateRequest
from configurator.memory.build import pp_layer_split
from configurator.memory.overheads import OverheadCoefficients, Overheads, estimate_overheads
from configurator.memory.weights import (
    WeightEstimate,
    expert_intermediate,
    experts_per_token,
    uncounted_towers,
    weight_bytes,
)
from configurator.units import MiB, format_gib
from configurator.vllm import messages
from configurator.vllm.defaults import cudagraph_capture_sizes
from configurator.vllm.overhead_data import era_row
from configurator.vllm.versions import flashinfer_sampler_runs, sampler_uncertain

# CUDA context + cuBLAS handles created before vLLM's baseline snapshot (not counted against the
# KV pool, but they must fit in the (1 - util) margin): ~0.3-0.6 GiB per process (vLLM issue logs).
CUDA_CONTEXT_BYTES = 512 * MiB
NCCL_INIT_BYTES = 256 * MiB  # communicators and warm-up buffers with TP/PP > 1, also pre-baseline


@dataclass(frozen=True)
class Budget:
    """The memory budget of the tightest GPU (bytes) and vLLM's memory refusals."""

    total_bytes: int
    requested_bytes: int
    weights: WeightEstimate
    weights_bytes: int  # after --cpu-offload-gb and calibration
    overheads: Overheads
    other_bytes: int  # runner buffers counted in 'consumed' memory (0.27+)
    available_bytes: int  # "Available KV cache memory"
    free_bytes: int  # free at vLLM's baseline snapshot
    kv_bytes_flag: int | None  # --kv-cache-memory-bytes
    stages: tuple[range, ...]  # layers of each PP stage
    weights_oom: bool
    calibrated: bool = False  # measured weights and overheads from a calibration file
    # the calibrated run had another TP / PP layout: the new layout's communication buffers were not measured
    calibrated_other_layout: bool = False
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    derivation: tuple[str, ...] = ()
    # optional features (LoRA slots, ...): already inside weights_bytes and the overheads
    features: FeatureMemory = field(default_factory=FeatureMemory)
    # how much more KV the other profiling sampler leaves where the install decides which runs (0.9.0-0.11.0:
    # FlashInfer's where it is installed; versions.sampler_uncertain): the band's high end reaches it
    sampler_spread_bytes: int = 0


def coefficients_for(version: str) -> OverheadCoefficients:
    """The fitted overhead coefficients of the era `version` falls in (profiles/overheads.yaml)."""
    row, source = era_row(version)
    return OverheadCoefficients.from_row(row, source)


def requested_bytes(total: int, util: float, rounding: str) -> int:
    """vllm/v1/worker/utils.py::request_memory: ceil(total x util) from 0.15, the float product before."""
    return math.ceil(total * util) if rounding == "ceil" else int(total * util)


def usable_calibration(cal: CalibrationLike | None, inp: Inputs) -> tuple[CalibrationLike | None, str | None]:
    """A calibration applies to the model, GPU and release it was measured on (else a warning)."""
    if cal is None:
        return None, None
    model, gpu, b = inp.model, inp.gpu, inp.b
    names = {model.name.lower(), (model.hf_id or "").lower()}
    mismatch = []
    if cal.model.lower() not in names:
        mismatch.append(f"model {cal.model}")
    if cal.gpu not in (gpu.name, "custom") and gpu.name != "custom":
        mismatch.append(f"GPU {cal.gpu}")
    if cal.vllm_version != b.version:
        mismatch.append(f"vLLM {cal.vllm_version}")
    if mismatch:
        return None, f"calibration ignored: it was measured for {', '.join(mismatch)}"
    return cal, None


def overhead_scale(predicted_now: int, predicted_then: int) -> float:
    """How the overhead changes between the calibrated flags and these, by the model's own ratio."""
    return predicted_now / predicted_then if predicted_then > 0 else 1.0


def calibration_layout(cal: CalibrationLike) -> tuple[int, int]:
    """(TP, PP) of the calibrated run."""
    return int(cal.flags.get("tensor_parallel_size") or 1), int(cal.flags.get("pipeline_parallel_size") or 1)


# flags whose memory lands inside "Model loading took" (configurator/estimate/features.py)
FEATURE_WEIGHT_FLAGS = ("enable_lora", "max_loras", "max_lora_rank", "lora_dtype", "fully_sharded_loras",
                        "speculative_config", "cpu_offload_gb", "data_parallel_size", "enable_expert_parallel",
                        "enable_eplb", "eplb_config")


def _feature_value(key: str, value: Any) -> Any:
    """A feature flag as vLLM reads it, so an option left at its default compares equal to the default."""
    if key in ("enable_lora", "fully_sharded_loras", "enable_expert_parallel", "enable_eplb"):
        return bool(value)
    if key == "cpu_offload_gb":
        return float(value or 0)
    if key == "data_parallel_size":
        return int(value or 1)
    if isinstance(value, str) and value.strip().startswith("{"):
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return value or None


def _same_features(then: dict, now: dict) -> bool:
    """Whether the calibrated run had the same LoRA / draft / offload / expert layout as these flags (a
    LoRA size the calibrated run did not state is vLLM's default, which `now` holds when not given)."""
    for k in FEATURE_WEIGHT_FLAGS:
        if then.get(k) is None and k in ("max_loras", "max_lora_rank", "lora_dtype"):
            continue
        if _feature_value(k, then.get(k)) != _feature_value(k, now.get(k)):
            return False
    return True


def apply_calibration(cal: CalibrationLike, inp: Inputs, weights: int, ov: Overheads,
                      other: int, feature_bytes: int = 0) -> tuple[int, Overheads, int, str]:
    """Measured weights and overheads replace the model's, scaled by the model's own ratios when
    the flags differ from the calibrated run."""
    m = cal.measured
    same_layout = calibration_layout(cal) == (inp.tp, inp.pp)
    if m.weights_bytes:
        # LoRA slots, a draft, CPU offload or an expert layout the calibrated run did not have are added to
        # what it measured (when it had the same ones, the measured figure already holds them)
        same_features = _same_features(cal.flags, inp.flags)
        extra = 0 if same_features else feature_bytes
        base = weights - feature_bytes
        if same_layout:
            weights = m.weights_bytes + extra
        else:  # the measured total, split as the model splits across these ranks
            then = weight_bytes(inp.model, tp=int(cal.flags.get("tensor_parallel_size") or 1),
                                pp=int(cal.flags.get("pipeline_parallel_size") or 1),
                                quantization=cal.flags.get("quantization"), dtype=inp.dtype,
                                compute_capability=inp.gpu.sm, vllm_version=inp.b.version).per_rank_bytes
            weights = int(m.weights_bytes * base / max(then, 1)) + extra
    predicted_now = ov.activation_bytes + ov.non_torch_bytes + ov.cudagraph_bytes + other
    scale = overhead_scale(predicted_now, cal.predicted_overhead_bytes)
    overhead = int(m.overhead_bytes * scale)
    graphs = int((m.cudagraph_bytes or 0) * scale) if ov.cudagraph_bytes else 0
    non_torch = int((m.non_torch_bytes or 0) * scale)
    activation = max(overhead - graphs - non_torch, 0)
    line = (f"calibrated from {cal.source}: weights {format_gib(weights)} GiB measured, non-KV overhead "
            f"{format_gib(m.overhead_bytes)} GiB measured x {scale:.3f} for these flags")
    return weights, replace(ov, activation_bytes=activation, non_torch_bytes=non_torch,
                            cudagraph_bytes=graphs), 0, line


def capture_sizes(inp: Inputs) -> list[int]:
    """The CUDA-graph capture sizes; with speculative decoding the decode ceiling is max_num_seqs x (1 + k) x 2
    and, on model runner V1, every size is a multiple of 1 + k (vllm/config/vllm.py _set_cudagraph_sizes,
    compilation.py adjust_cudagraph_sizes_for_spec_decode, 0.33.0)."""
    ceiling = int(inp.flags.get("max_cudagraph_capture_size") or 0) or None
    if inp.spec is None:
        return cudagraph_capture_sizes(inp.b, inp.gpu, inp.max_num_seqs, inp.mnbt, ceiling)
    from configurator.estimate.speculative import spec_capture_sizes  # loaded only with a drafter

    q = 1 + inp.spec.num_speculative_tokens
    sizes = cudagraph_capture_sizes(inp.b, inp.gpu, inp.max_num_seqs * q, inp.mnbt, ceiling)
    return sizes if inp.v2 else spec_capture_sizes(sizes, inp.spec.num_speculative_tokens)


def plan_budget(inp: Inputs, req: EstimateRequest) -> Budget:
    """The per-GPU budget for the resolved inputs."""
    f, b, model, tp, pp = inp.flags, inp.b, inp.model, inp.tp, inp.pp
    errors: list[str] = []
    warnings: list[str] = []
    derivation: list[str] = []
    cal, ignored = usable_calibration(req.calibration, inp)
    if ignored:
        warnings.append(ignored)
    total = inp.gpu.total_bytes
    if cal is not None and cal.measured.total_bytes:
        total = cal.measured.total_bytes
    requested = requested_bytes(total, inp.util, b.requested_rounding)
    stages = pp_layer_split(model.num_hidden_layers, pp)
    # a tower whose every modality --limit-mm-per-prompt sets to 0 is not built; buffers a model allocates while
    # it loads are sized by max_num_batched_tokens (configurator/memory/weights.py)
    off = {k for k, v in flag_mm_limits(f).items() if v == 0}
    w = weight_bytes(model, tp=tp, pp=pp, quantization=f.get("quantization"), dtype=inp.dtype,
                     compute_capability=inp.gpu.sm, max_num_batched_tokens=inp.mnbt, modalities_off=off,
                     vllm_version=b.version)
    # optional features (configurator/estimate/features.py): LoRA slots and a draft load with the weights,
    # --cpu-offload-gb keeps some of them in host memory
    feats = plan_features(model, f, version=b.version, dtype=inp.dtype, tp=tp, layers=stages[-1],
                          num_tokens=inp.mnbt, spec=inp.spec, base_weights_bytes=w.per_rank_bytes,
                          max_num_seqs=inp.max_num_seqs, max_model_len=inp.max_len, chunked=inp.chunked,
                          first_stage=pp == 1)
    weights = max(0, w.per_rank_bytes + feats.weights_bytes)
    ov = _overheads(inp, req, len(stages[-1]))
    spread = 0 if cal is not None or not sampler_uncertain(b, req.flashinfer_installed) else max(
        0, ov.activation_bytes - _overheads(inp, req, len(stages[-1]), flashinfer=True).activation_bytes)
    # runner buffers (and a drafter's persistent input buffers) are allocated before profiling: vLLM takes them
    # from the KV pool only where it subtracts the free-memory drop since start-up (the 'consumed' accounting)
    other = ov.runner_bytes + feats.drafter_buffers_bytes if b.accounting == "consumed" else 0
    if feats.activation_bytes:
        ov = replace(ov, activation_bytes=ov.activation_bytes + feats.activation_bytes)
    derivation += feats.lines()
    warnings += _feature_warnings(inp, w, feats, off)
    if cal is not None:
        weights, ov, other, line = apply_calibration(cal, inp, weights, ov, other, feats.weights_bytes)
        derivation.append(line)
    kv_bytes_flag = f.get("kv_cache_memory_bytes")
    # memory taken before vLLM's baseline snapshot: the CUDA context, NCCL, other processes
    pre_baseline = CUDA_CONTEXT_BYTES + (NCCL_INIT_BYTES if tp * pp > 1 else 0) + int(req.gpu_memory_used)
    available = _kv_available(inp, requested, weights, ov, other, pre_baseline, derivation)
    # free memory at start: vLLM refuses when it is below util x total
    free = total - pre_baseline
    if not kv_bytes_flag and free < requested:
        errors.append(messages.free_memory("cuda:0", free, total, inp.util, requested))
    weights_oom = weights > free
    if weights_oom:
        errors.append(messages.weights_oom(weights, free, tp, pp))
    return Budget(total_bytes=total, requested_bytes=requested, weights=w, weights_bytes=weights, overheads=ov,
                  other_bytes=other, available_bytes=available, free_bytes=free, kv_bytes_flag=kv_bytes_flag,
                  stages=tuple(stages), weights_oom=weights_oom, calibrated=cal is not None, errors=tuple(errors),
                  calibrated_other_layout=cal is not None and calibration_layout(cal) != (tp, pp),
                  warnings=tuple(warnings), derivation=tuple(derivation), features=feats,
                  sampler_spread_bytes=spread)


def _overheads(inp: Inputs, req: EstimateRequest, num_layers_on_rank: int, flashinfer: bool = False) -> Overheads:
    """The predicted activation peak, non-torch memory, CUDA graphs and runner buffers of the last stage's rank
    (`flashinfer`: with FlashInfer's sampler where the release defaults to it, whatever the install)."""
    b, model = inp.b, inp.model
    tc = model.text_config
    return estimate_overheads(
        hidden_size=model.hidden_size, intermediate_size=model.intermediate_size,
        num_attention_heads=model.num_attention_heads, num_kv_heads=model.num_kv_heads,
        head_dim=model.head_dim, vocab_size=model.vocab_size,
        num_layers_on_rank=num_layers_on_rank, max_num_batched_tokens=inp.mnbt, max_num_seqs=inp.max_num_seqs,
        tp=inp.tp, pp=inp.pp, last_stage=True, enforce_eager=inp.eager,
        cudagraph_counted=b.cudagraph_estimate and (not inp.v2 or b.v2_cudagraph_estimate),
        v2_sampler_state=inp.v2, coeffs=req.coefficients or coefficients_for(b.version),
        moe_intermediate_size=(expert_intermediate(tc) or model.intermediate_size or 0) if inp.is_moe else 0,
        experts_per_token=experts_per_token(tc) if inp.is_moe else 0,
        num_capture_sizes=len(capture_sizes(inp)),
        moe_workspace_persistent=b.moe_workspace_persistent,
        flashinfer_sampler=flashinfer_sampler_runs(b, True if flashinfer else req.flashinfer_installed))


def _feature_warnings(inp: Inputs, w: WeightEstimate, feats: FeatureMemory, off: set[str]) -> list[str]:
    """What the features, the towers, the draft and an integrated GPU leave out of the prediction."""
    f, model = inp.flags, inp.model
    warnings = feats.warnings()
    if w.source == "config":  # a known checkpoint size already holds every tower
        warnings += [f"not-modelled: the weights leave out the {t}, which vLLM loads with them: the weights are "
                     "under-estimated and the KV cache over-estimated by its size; pass --kv-cache-memory-bytes or "
                     "calibrate from a start-up log to be sure"
                     for t in uncounted_towers(model.full_config, off)]
    if inp.spec is not None and inp.spec.warning:
        warnings.append(f"--speculative-config: {inp.spec.warning}")
    if getattr(inp.gpu, "integrated", False) and not f.get("kv_cache_memory_bytes"):
        warnings.append(f"not-modelled: {inp.gpu.name} shares the host's memory: vLLM reads free memory from psutil "
                        "(vllm/utils/mem_utils.py), so what the process and the OS allocate in host memory after "
                        "its baseline (CPU LoRA slots, loader buffers, page cache) counts as non-torch memory and "
                        "comes out of the KV cache; the prediction does not include it and can be far too high "
                        "(--kv-cache-memory-bytes sets the pool exactly)")
    return warnings


def _kv_available(inp: Inputs, requested: int, weights: int, ov: Overheads, other: int, pre_baseline: int,
                  derivation: list[str]) -> int:
    """The bytes left for the KV cache by the release's accounting, or exactly --kv-cache-memory-bytes."""
    b = inp.b
    kv_bytes_flag = inp.flags.get("kv_cache_memory_bytes")
    if kv_bytes_flag:
        available = int(kv_bytes_flag)
        derivation.append(f"--kv-cache-memory-bytes {available:,} B ({format_gib(available)} GiB): "
                          f"vLLM skips profiling and ignores --gpu-memory-utilization")
    elif b.accounting == "peak_all":
        # 0.8.0-0.9.0: total x util - (torch peak + every non-torch byte in use, the pre-baseline ones too)
        available = requested - weights - ov.activation_bytes - ov.non_torch_bytes - pre_baseline
    else:
        available = requested - weights - ov.activation_bytes - ov.non_torch_bytes - ov.cudagraph_bytes - other
    return available
