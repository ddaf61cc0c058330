"""When nothing carries the workload: why, and the changes that do, each checked by planning again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from configurator.errors import InputError
from configurator.estimate.loadable import block_shape_refusal, removed_architecture
from configurator.hardware.catalog import GPU, newest_release_for, no_kernel_image
from configurator.plan.context import Context
from configurator.plan.search import MAX_GPUS, Candidate, PlanRequest, less_headroom, with_headroom
from configurator.plan_result import PlanResult, Remedy
from configurator.speed.gpu_order import capability, family, larger_gpu_order
from configurator.units import GiB, format_gib
from configurator.vllm.versions import SUPPORTED
from configurator.workloads import override

# "use a larger GPU" stays within the planned GPU's class (profiles/gpus/*.yaml gpu_class)
GPU_CLASS_LABELS = {"datacenter": "data-centre", "workstation": "workstation", "desktop": "consumer / desktop"}
# vLLM quantizes 16-bit weights to fp8 at load (--quantization fp8); without FP8 hardware, from compute
# capability 8.0, it runs them weight-only through Marlin (vllm/model_executor/layers/quantization/utils/
# marlin_utils_fp8.py: is_fp8_marlin_supported is has_device_capability(80); fp8.py Fp8Config.get_min_capability 80)
FP8_WEIGHTS_MIN_CAPABILITY = (8, 0)
FP8_QUALITY = ("fp8 weights: about half the bytes of 16-bit ones, usually within about 1% on common benchmarks; "
               "check your own evaluation")


def nothing_starts(ctx: Context, evaluated: list[Candidate], solve: Callable | None) -> PlanResult:
    """No candidate starts: report the most preferred layout (its least-short candidate) and why."""
    w, req, gpu = ctx.w, ctx.req, ctx.gpu
    # the preferred layout that uses every GPU as one engine (the largest, where even it does not start)
    pref = next((o for o in ctx.layouts if o.replicas == 1), ctx.layouts[0])
    first = [c for c in evaluated if c.lay == pref] or [c for c in evaluated if c.lay == ctx.layouts[0]]
    best = max(first, key=lambda c: c.result.memory.kv_cache_bytes)
    res = best.result
    kv = res.kv_cache
    need_n = with_headroom(w.concurrency, req.headroom)
    per_request = kv.bytes_per_token * w.typical_tokens + kv.window_bytes_per_sequence + kv.state_bytes_per_sequence
    shortfall = max(need_n * per_request - res.memory.kv_cache_bytes, 1 << 20)  # a negative pool adds
    reason = res.errors[0] if res.errors else "vLLM would not start"
    arch = no_kernel_image(gpu, ctx.version, SUPPORTED)
    # what stops vLLM before any memory figure matters (configurator/estimate/loadable.py), or no prediction at all
    before = removed_architecture(ctx.model, ctx.version) or block_shape_refusal(ctx.model, res.flags, best.tp)
    if before:
        arch = f"Does not start: {before}"
    elif res.verdict == "not-predicted":
        arch = f"Not predicted: {res.not_modelled}"
    elif arch:
        arch = f"Does not start: vLLM {ctx.version} has no kernels for {gpu.name}: {arch}"
    layouts = ""
    if len(ctx.layouts) > 1:
        layouts = (f" No split of the {req.gpus} GPUs starts ({', '.join(o.text() for o in ctx.layouts)}); shown is "
                   f"the preferred one, {best.lay.text()}: tensor parallelism within a node, pipeline stages "
                   f"across nodes, as vLLM advises.")
    name = ctx.model.hf_id or ctx.model.name
    return PlanResult(
        feasible=False, status="nothing-starts", carried_concurrency=0, vllm_version=ctx.version, model=name,
        gpu=gpu.name, gpus=best.lay.gpus, workload=w.model_dump(), flags={k: res.flags.get(k) for k in (
            "gpu_memory_utilization", "kv_cache_dtype", "max_num_seqs", "max_model_len", "tensor_parallel_size",
            "pipeline_parallel_size", "max_num_batched_tokens")},
        estimate=res, capacity=None, reasons=[], alternatives=[], replicas=best.lay.replicas, layout=best.lay.text(),
        remedies=remedies(ctx, best, solve, started=False) if solve else [], shortfall_bytes=0 if arch else shortfall,
        # a release without kernels for the GPU, a removed architecture, a block-quantized shard vLLM refuses or a
        # start-up not predicted: no shortfall to report
        summary=arch if arch else
        (f"Does not fit: vLLM would start with none of the candidates; {format_gib(shortfall)} GiB short per "
         f"GPU for the weights, overheads and the KV cache the workload needs, with {best.kv} KV at "
         f"utilization {best.util:g}: {reason}{layouts}"))


def _tries(ctx: Context, best: Candidate) -> list[tuple[str, int, dict, PlanRequest]]:
    """The remedies to check, cheapest first: (action, cost rank, changes, the request with it)."""
    req, w, gpu, model = ctx.req, ctx.w, ctx.gpu, ctx.model
    tried: list[tuple[str, int, dict, PlanRequest]] = []
    if no_kernel_image(gpu, ctx.version, SUPPORTED) and (newest := newest_release_for(gpu, SUPPORTED)):
        tried.append((f"use vLLM {newest}, the newest release whose wheels ship kernels for compute capability "
                      f"{gpu.compute_capability} (--vllm-version {newest}, image vllm/vllm-openai:v{newest})", 1,
                      {"vllm_version": newest}, replace(req, vllm_version=newest)))
    if "fp8" not in ctx.kvs and gpu.fp8_kv in ("native", "storage-only") and not model.quant.kv_cache_dtype:
        tried.append(("use an fp8 KV cache", 1, {"kv_cache_dtype": "fp8"}, replace(req, kv_cache_dtype="fp8")))
    for frac in (0.5, 0.25, 0.125):  # the longest shorter context that solves is kept
        length = max(int(w.max_context_tokens * frac) // 1024 * 1024, w.typical_tokens)
        if w.typical_tokens <= length < w.max_context_tokens:
            tried.append((f"shorten the longest request to {length:,} tokens", 2, {"max_context_tokens": length},
                          replace(req, workload=override(w, max_context_tokens=length), max_model_len=None)))
    if 0 < best.at_typical * best.lay.ways < w.concurrency:
        fewer = max(less_headroom(best.at_typical, req.headroom) * best.lay.ways, 1)
        tried.append((f"lower the target concurrency to {fewer}", 2, {"concurrency": fewer},
                      replace(req, workload=override(w, concurrency=fewer))))
    if model.quant.method is None and not req.quantization and gpu.vendor == "nvidia" \
            and capability(gpu) >= FP8_WEIGHTS_MIN_CAPABILITY:
        how = "" if gpu.fp8 else ", weight-only through vLLM's Marlin kernels on this GPU"
        tried.append((f"quantize the weights to fp8 (--quantization fp8{how}; {FP8_QUALITY})", 3,
                      {"quantization": "fp8"}, replace(req, quantization="fp8")))
    n = best.lay.gpus
    for more in (2 * n, 4 * n, 8 * n):
        if more <= MAX_GPUS:
            tried.append((f"use {more} GPUs", 4, {"gpus": more},
                          replace(req, gpus=more, tensor_parallel_size=None, pipeline_parallel_size=None)))
    return tried + larger_gpus(gpu, req)


def remedies(ctx: Context, best: Candidate, solve: Callable, *, started: bool = True) -> list[Remedy]:
    """Each remedy is checked by planning again with it; only those that carry the target are returned,
    one per kind of change (the first, smallest, that solves), cheapest first. Where nothing started, a
    weight quantization that makes vLLM start is kept even short of the target (with what it carries)."""
    out: list[Remedy] = []
    solved: set[tuple] = set()
    for action, rank, changes, alt in _tries(ctx, best):
        key = (rank, next(iter(changes)), family(changes.get("gpu", "")) == family(ctx.gpu.name))
        if key in solved:
            continue
        try:
            p = solve(alt, with_remedies=False)
        except InputError:
            continue
        partial = not started and "quantization" in changes and p.status == "short"
        if (p.feasible or partial) and p.capacity is not None:
            solved.add(key)
            if "gpus" in changes:
                action += f" ({p.layout})"
            if partial:
                action += (f"; vLLM then starts, short of the target: it carries {p.carried_concurrency:,} of the "
                           f"{ctx.w.concurrency:,} at once (plan again with -q fp8 for its remedies)")
            out.append(Remedy(action=action, cost_rank=rank, changes=changes, carries_target=not partial,
                              requests_at_typical_length=p.capacity.requests_at_typical_length))
    return sorted(out, key=lambda r: r.cost_rank)


def larger_gpus(gpu: GPU, req: PlanRequest) -> list[tuple[str, int, dict, PlanRequest]]:
    """The larger-GPU remedies in larger_gpu_order, each named with its class."""
    out = []
    for g in larger_gpu_order(gpu):
        label = GPU_CLASS_LABELS.get(g.gpu_class, g.gpu_class or "unclassified")
        action = (f"use a larger {label} GPU: {g.name} ({g.total_bytes / GiB:.0f} GiB)" if gpu.gpu_class
                  else f"use a larger GPU: {g.name} ({label}, {g.total_bytes / GiB:.0f} GiB)")
        out.append((action, 5, {"gpu": g.name}, replace(req, gpu=g.name, gpu_memory=None)))
    return out
