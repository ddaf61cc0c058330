"""The search: every layout x KV dtype x utilization judged by `estimate`, the chosen one sized (docs/plan.md)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from configurator.errors import InputError
from configurator.hardware.catalog import GPU
from configurator.model.resolve import resolve_model
from configurator.model.spec import ModelSpec
from configurator.plan.context import Context
from configurator.plan.explain import result
from configurator.plan.layouts import parallel_options, within_node
from configurator.plan.remedies import nothing_starts
from configurator.plan.search import (
    LEN_STEP_TOKENS,
    MAX_GPUS,
    UTILIZATIONS,
    Candidate,
    PlanRequest,
    carries,
    check_gpu_counts,
    evaluate,
    gpu_of,
    less_headroom,
    share,
    with_headroom,
)
from configurator.plan.speed import has_targets, meets, per_gpu_for_choice, speed_line, target_ratio
from configurator.plan_result import PlanResult
from configurator.vllm.defaults import batch_defaults, derived_max_model_len
from configurator.vllm.versions import behaviour
from configurator.workloads import Workload

# with targets and no --gpus, the GPU counts tried for the fewest that meet them (up to 8 nodes of 8)
TARGET_GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)


def plan(req: PlanRequest) -> PlanResult:
    """Plan a deployment. Raises InputError for bad input; a workload that does not fit is a result
    (status "short" or "nothing-starts"). With TTFT / TPOT targets, the fewest GPUs that meet them."""
    if has_targets(req.workload) and not (req.tensor_parallel_size or req.pipeline_parallel_size):
        check_gpu_counts(req)
        counts = [n for n in TARGET_GPU_COUNTS if n <= (req.gpus or TARGET_GPU_COUNTS[-1])]
        if req.gpus and req.gpus not in counts:
            counts.append(req.gpus)
        tried = []
        for n in counts:
            p = solve(replace(req, gpus=n), with_remedies=False)
            if p.feasible and p.meets_targets:
                return _with_next_step(solve(replace(req, gpus=n), with_remedies=True), req)
            if p.feasible and p.speed:
                tried.append(p)
        return _unmet(_with_next_step(solve(req, with_remedies=True), req), tried, counts[-1])
    return solve(req, with_remedies=True)


def _unmet(p: PlanResult, tried: list[PlanResult], most: int) -> PlanResult:
    """No GPU count meets the targets: the plan for the GPUs given, and the nearest count."""
    w = p.workload
    text = f" No GPU count up to {most} meets the targets"
    if tried:
        near = min(tried, key=lambda t: max(t.speed[k] / w[k] for k in ("ttft_ms", "tpot_ms") if w[k]))
        text += f"; the nearest is {near.gpus} GPUs ({near.layout}): {speed_line(near.speed)}"
    return p.model_copy(update={"summary": p.summary + text + ".", "meets_targets": False})


def _with_next_step(p: PlanResult, req: PlanRequest) -> PlanResult:
    """What twice the GPUs buys, as the speed model predicts it."""
    if p.status == "nothing-starts" or p.speed is None or 2 * p.gpus > MAX_GPUS:
        return p
    try:
        up = solve(replace(req, gpus=2 * p.gpus, tensor_parallel_size=None, pipeline_parallel_size=None),
                   with_remedies=False)
    except InputError:
        return p
    if up.speed is None or not up.feasible:
        return p
    return p.model_copy(update={"next_step": (
        f"{up.gpus} GPUs ({up.layout}): {speed_line(up.speed)}, against {speed_line(p.speed)} now")})


def _context(req: PlanRequest) -> Context:
    check_gpu_counts(req)
    model = req.model if isinstance(req.model, ModelSpec) else resolve_model(req.model)
    gpu = gpu_of(req)
    w = req.workload
    if not (0 <= req.headroom < 1):
        raise InputError(f"--headroom must be in [0, 1), got {req.headroom}")
    b = behaviour(req.vllm_version or "latest")
    limit = derived_max_model_len(model, b)
    if w.max_context_tokens > limit.value:
        raise InputError(f"the workload needs {w.max_context_tokens:,} tokens of context, beyond the model's limit "
                         f"of {limit.value:,} ({limit.why}); plan for the model's limit with --max-context "
                         f"{limit.value}, or choose a model with a longer context")
    max_len, len_why = plan_len(req, w, limit)
    return Context(req, model, gpu, b.version, limit, max_len, len_why, parallel_options(model, req, b.version),
                   kv_options(model, gpu, req), util_options(req),
                   batch_defaults(b, gpu, "server" if req.entry == "server" else "offline").max_num_seqs, {})


def kv_options(model: ModelSpec, gpu: GPU, req: PlanRequest) -> list[str]:
    if req.kv_cache_dtype:
        return [req.kv_cache_dtype]
    if model.quant.kv_cache_dtype:  # the checkpoint already stores fp8 KV: 'auto' is that
        return ["auto"]
    return ["auto", "fp8"] if gpu.fp8_kv in ("native", "storage-only") else ["auto"]


def util_options(req: PlanRequest) -> list[float]:
    cap = req.max_gpu_memory_utilization
    if cap is not None and not (0 < cap <= 1):
        raise InputError(f"--max-gpu-memory-utilization must be in (0, 1], got {cap}")
    opts = [u for u in UTILIZATIONS if cap is None or u <= cap]
    return opts or [cap]  # type: ignore[list-item]


def plan_len(req: PlanRequest, w: Workload, limit: Any) -> tuple[int, str]:
    """--max-model-len and why: what the workload needs, rounded up, unless more was asked for."""
    need = w.max_context_tokens
    if req.max_model_len == "full":
        return limit.value, f"the model's full context ({limit.value:,}), as asked ({limit.why})"
    if req.max_model_len is not None:
        asked = req.max_model_len
        if asked < need:
            raise InputError(f"--max-model-len {asked:,} is shorter than the workload's longest request ({need:,})")
        if asked > limit.value:
            raise InputError(f"--max-model-len {asked:,} is beyond the model's limit of {limit.value:,} ({limit.why})")
        return asked, f"as asked (the workload's longest request is {need:,})"
    length = min(math.ceil(need / LEN_STEP_TOKENS) * LEN_STEP_TOKENS, limit.value)
    rounded = f" ({need:,}), rounded up to a multiple of {LEN_STEP_TOKENS:,}" if length != need else ""
    if length >= limit.value:
        return length, f"the workload's longest request{rounded}, which is also the model's limit ({limit.why})"
    return length, (f"the workload's longest request{rounded}; not the model's full {limit.value:,}, which would only "
                    f"admit longer requests (plan with --max-model-len full for that)")


def _search(ctx: Context) -> tuple[list[Candidate], list[Candidate]]:
    """Every layout's candidates up to its first that carries the workload (KV dtype, then utilization, in
    preference order); judged at the target batch (the sampler's profiling peak and, for hybrids, the Mamba
    block check scale with max_num_seqs), sized up to what the pool holds afterwards."""
    evaluated: list[Candidate] = []
    carrying: list[Candidate] = []
    for lay in ctx.layouts:
        if carrying and not within_node(lay, ctx.req.gpus_per_node) and \
                any(within_node(c.lay, ctx.req.gpus_per_node) for c in carrying):
            break  # an engine within a node carries it: no engine spans nodes (the rest of the list)
        target = share(ctx.w, lay).concurrency
        seqs0 = max(target, min(ctx.default_seqs, with_headroom(target, ctx.req.headroom)))
        found = False
        for kv in ctx.kvs:
            for util in ctx.utils:
                c = evaluate(ctx.model, ctx.gpu, ctx.req, lay, kv, util, ctx.max_len, seqs0)
                evaluated.append(c)
                if carries(c, ctx.w, ctx.req.headroom):
                    carrying.append(c)
                    found = True
                    break
            if found:
                break
    return evaluated, carrying


def _choose(ctx: Context, carrying: list[Candidate]) -> Candidate:
    """Engines within a node before engines across nodes (those in preference order: tensor parallelism within
    a node, pipeline stages across); then the targets met (else the least missed), then the most output
    throughput per GPU (data-parallel attention only DP_MARGIN ahead: plan.speed.per_gpu_for_choice), replicas
    where they are as fast per GPU (within 1%); without a speed prediction, the first in preference order."""
    node = [c for c in carrying if within_node(c.lay, ctx.req.gpus_per_node)]
    w = ctx.w
    if not node:  # engines across nodes: tensor parallelism within a node, pipeline stages across (vLLM's advice)
        met = [c for c in carrying if meets(ctx.speed(c), w)] if has_targets(w) else []
        return (met or carrying)[0]
    if any(ctx.speed(c) is None for c in node):
        return node[0]
    if has_targets(w):
        met = [c for c in node if meets(ctx.speed(c), w)]
        if not met:
            return min(node, key=lambda c: target_ratio(ctx.speed(c), w))
        node = met
    per_gpu = {id(c): per_gpu_for_choice(ctx.speed(c), c.lay.dp) for c in node}  # type: ignore[arg-type]
    best = max(per_gpu.values())
    return max(node, key=lambda c: (round(per_gpu[id(c)] / best, 2), c.lay.replicas))


def solve(req: PlanRequest, *, with_remedies: bool) -> PlanResult:
    ctx = _context(req)
    evaluated, carrying = _search(ctx)
    w = ctx.w
    if carrying:
        final = size_carrying(ctx, _choose(ctx, carrying))
        status = "carries"
    else:
        starting = [c for c in evaluated if c.result.verdict == "fits" and c.at_typical >= 1]
        if not starting:
            return nothing_starts(ctx, evaluated, solve if with_remedies else None)
        # the flags that carry the most of the workload; on a tie the earlier (preferred) candidate
        node = [c for c in starting if within_node(c.lay, req.gpus_per_node)] or starting
        final = size_short(ctx, max(node, key=lambda c: less_headroom(c.at_typical, req.headroom) * c.lay.ways))
        # a queue workload runs what the pool holds and queues the rest: that is its plan, not a shortfall
        status = "carries" if w.queue else "short"
    return result(ctx, final, status, evaluated, solve if with_remedies else None)


def size_carrying(ctx: Context, chosen: Candidate) -> Candidate:
    """max_num_seqs = what the pool holds at the typical length less the headroom, at least the target;
    re-checked with that value (a larger batch raises the sampler's profiling peak)."""
    req, h = ctx.req, ctx.req.headroom
    target = share(ctx.w, chosen.lay).concurrency
    seqs = max(target, min(ctx.default_seqs, less_headroom(chosen.at_typical, h)))
    final = _again(ctx, chosen, seqs)
    if carries(final, req.workload, h):
        seqs = max(target, min(seqs, less_headroom(final.at_typical, h)))
        final = _again(ctx, chosen, seqs)
    return final if carries(final, req.workload, h) else chosen  # max_num_seqs moved the sampler overhead


def size_short(ctx: Context, best: Candidate) -> Candidate:
    """The best short candidate with max_num_seqs = what its pool holds less the headroom (at least 1),
    so vLLM admits no more requests than the pool keeps without preemption."""
    h = ctx.req.headroom

    def starts(c: Candidate) -> bool:
        return c.result.fits and c.at_typical >= 1

    seqs = max(1, min(ctx.default_seqs, less_headroom(best.at_typical, h)))
    final = _again(ctx, best, seqs)
    if starts(final):
        fewer = max(1, min(seqs, less_headroom(final.at_typical, h)))
        if fewer != seqs:
            final = _again(ctx, best, fewer)
    return final if starts(final) else best


def _again(ctx: Context, c: Candidate, seqs: int) -> Candidate:
    return evaluate(ctx.model, ctx.gpu, ctx.req, c.lay, c.kv, c.util, c.max_len, seqs)
