"""`plan`: choose --gpu-memory-utilization, --kv-cache-dtype, --max-num-seqs and --max-model-len (and,
given a GPU count, the parallelism) that vLLM accepts and that carry a workload; explain them.

A pure search over candidates, each judged by `estimate` (the same memory core, release and
calibration). Preference order, first to last, documented in docs/plan.md:

1. parallelism: for `--gpus N`, tensor parallelism within a node (`--gpus-per-node`, 8) and as wide as
   the heads allow, pipeline stages across nodes;
2. full-precision KV before fp8 when both carry the workload; fp8 only where the GPU supports it;
3. the lowest utilization that carries it, from 0.90 up to 0.95 (never 0.98: the margin holds the
   CUDA context, NCCL and fragmentation);
4. max_model_len = the workload's longest request, or the model's full context when the pool holds
   the target concurrency and one full-context request with the headroom to spare;
5. max_num_seqs = what the pool holds at the typical length, less the headroom, capped at vLLM's
   default for the GPU class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, Field

from configurator.calibration import Calibration
from configurator.emit.serve import serve_args, serve_command
from configurator.errors import InputError
from configurator.estimate import EstimateRequest, EstimateResult, estimate, request_bytes
from configurator.hardware.catalog import GPU, custom_gpu, find_gpu, list_gpus
from configurator.model.resolve import resolve_model
from configurator.model.spec import ModelSpec
from configurator.units import GiB, format_gib
from configurator.vllm.defaults import batch_defaults, derived_max_model_len
from configurator.vllm.versions import behaviour
from configurator.workloads import Workload, override

UTILIZATIONS = (0.90, 0.92, 0.95)
DEFAULT_HEADROOM = 0.10


class Reason(BaseModel):
    flag: str
    value: Any
    why: str


class Alternative(BaseModel):
    """One point of the trade-off: context vs concurrency vs KV dtype, at the chosen utilization."""

    kv_cache_dtype: str
    max_model_len: int
    fits: bool
    requests_at_typical_length: int = Field(description="concurrent requests of the typical length the pool holds")
    requests_at_max_model_len: float = Field(description="vLLM's 'Maximum concurrency' at max_model_len")
    kv_cache_bytes: int


class Remedy(BaseModel):
    """A change that makes an infeasible workload fit, checked by planning again with it."""

    action: str
    cost_rank: int = Field(description="1 = cheapest")
    changes: dict[str, Any]
    requests_at_typical_length: int


class Capacity(BaseModel):
    target_concurrency: int
    typical_tokens: int
    headroom: float
    requests_at_typical_length: int
    requests_at_max_model_len: float


class PlanResult(BaseModel):
    """The plan; schemas/plan.schema.json is generated from this."""

    feasible: bool
    vllm_version: str
    model: str
    gpu: str
    gpus: int
    workload: dict[str, Any]
    flags: dict[str, Any] = Field(description="the four chosen flags, parallelism and batched tokens")
    estimate: EstimateResult | None = Field(description="estimate for exactly these flags")
    capacity: Capacity | None
    reasons: list[Reason]
    summary: str = Field(description="'we can only batch N requests because ...'")
    alternatives: list[Alternative]
    remedies: list[Remedy]
    shortfall_bytes: int = Field(0, description="KV memory missing to carry the workload (infeasible plans)")
    serve_command: str = ""
    serve_args: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class PlanRequest:
    model: str | ModelSpec
    workload: Workload
    gpu: str | None = None
    gpu_memory: str | None = None
    gpus: int | None = None
    vllm_version: str | None = None
    headroom: float = DEFAULT_HEADROOM
    max_gpu_memory_utilization: float | None = None
    gpu_memory_used: int = 0
    calibration: Calibration | None = None
    kv_cache_dtype: str | None = None  # fix the dtype instead of choosing it
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    quantization: str | None = None
    entry: str = "server"
    gpus_per_node: int = 8  # tensor parallelism stays within a node when it can


@dataclass(frozen=True)
class _Candidate:
    tp: int
    pp: int
    kv: str
    util: float
    max_len: int
    result: EstimateResult
    at_typical: int  # concurrent typical-length requests the pool holds


def _gpu(req: PlanRequest) -> GPU:
    if req.gpu_memory:
        return custom_gpu(req.gpu_memory)
    if req.gpu:
        return find_gpu(req.gpu)
    raise InputError("name a GPU with --gpu (see `vllm-configurator gpus`) or give --gpu-memory")


def _parallel_options(model: ModelSpec, req: PlanRequest) -> list[tuple[int, int]]:
    if req.tensor_parallel_size or req.pipeline_parallel_size or not req.gpus:
        return [(req.tensor_parallel_size or 1, req.pipeline_parallel_size or 1)]
    out = []
    for pp in range(1, req.gpus + 1):
        if req.gpus % pp or pp > model.num_hidden_layers:
            continue
        tp = req.gpus // pp
        if model.num_attention_heads % tp:
            continue
        if any(g.kind in ("full", "sliding", "chunked") and g.num_kv_heads >= tp and g.num_kv_heads % tp
               for g in model.layers):
            continue
        if any(g.mamba is not None and g.mamba.num_heads and g.mamba.num_heads % tp for g in model.layers):
            continue
        out.append((tp, pp))
    # tensor parallelism within a node (NVLink) first; pipeline stages across nodes (vLLM's advice)
    out.sort(key=lambda o: (o[0] > req.gpus_per_node, o[1]))
    if not out:
        raise InputError(f"{req.gpus} GPUs cannot be split into tensor x pipeline parallelism for this model "
                         f"({model.num_attention_heads} attention heads, {model.num_hidden_layers} layers)")
    return out


def _kv_options(model: ModelSpec, gpu: GPU, req: PlanRequest) -> list[str]:
    if req.kv_cache_dtype:
        return [req.kv_cache_dtype]
    if model.quant.kv_cache_dtype:  # the checkpoint already stores fp8 KV: 'auto' is that
        return ["auto"]
    opts = ["auto"]
    if gpu.fp8_kv in ("native", "storage-only"):
        opts.append("fp8")
    return opts


def _util_options(req: PlanRequest) -> list[float]:
    cap = req.max_gpu_memory_utilization
    if cap is not None and not (0 < cap <= 1):
        raise InputError(f"--max-gpu-memory-utilization must be in (0, 1], got {cap}")
    opts = [u for u in UTILIZATIONS if cap is None or u <= cap]
    return opts or [cap]  # type: ignore[list-item]


def _evaluate(model: ModelSpec, gpu: GPU, req: PlanRequest, tp: int, pp: int, kv: str, util: float,
              max_len: int, max_num_seqs: int | None = None) -> _Candidate:
    flags: dict[str, Any] = {"gpu_memory_utilization": util, "kv_cache_dtype": kv, "max_model_len": max_len,
                             "tensor_parallel_size": tp, "pipeline_parallel_size": pp}
    if max_num_seqs:
        flags["max_num_seqs"] = max_num_seqs
    if req.quantization:
        flags["quantization"] = req.quantization
    base = dict(gpu=gpu.name if gpu.name != "custom" else None,
                gpu_memory=f"{gpu.total_bytes}B" if gpu.name == "custom" else None,
                vllm_version=req.vllm_version, gpu_memory_used=req.gpu_memory_used,
                calibration=req.calibration, entry=req.entry)
    res = estimate(EstimateRequest(model=model, flags=flags, **base))
    at_typical = 0
    if res.fits and res.memory.kv_cache_bytes > 0:
        typical = min(req.workload.typical_tokens, max_len)
        probe = estimate(EstimateRequest(model=model, **base, flags={
            **flags, "max_model_len": typical, "kv_cache_memory_bytes": res.memory.kv_cache_bytes,
            "max_num_seqs": res.flags["max_num_seqs"],
            "max_num_batched_tokens": res.flags["max_num_batched_tokens"]}))
        at_typical = int(probe.kv_cache.max_concurrency)
    return _Candidate(tp, pp, kv, util, max_len, res, at_typical)


def _carries(c: _Candidate, w: Workload, headroom: float) -> bool:
    return c.result.fits and c.at_typical >= math.ceil(w.concurrency * (1 + headroom))


def plan(req: PlanRequest) -> PlanResult:
    """Plan a deployment. Raises InputError for bad input; an infeasible workload is a result."""
    return _solve(req, with_remedies=True)


def _solve(req: PlanRequest, *, with_remedies: bool) -> PlanResult:
    model = req.model if isinstance(req.model, ModelSpec) else resolve_model(req.model)
    gpu = _gpu(req)
    w = req.workload
    if not (0 <= req.headroom < 1):
        raise InputError(f"--headroom must be in [0, 1), got {req.headroom}")
    b = behaviour(req.vllm_version or "latest")
    limit = derived_max_model_len(model, b)
    if w.max_context_tokens > limit.value:
        raise InputError(f"the workload needs {w.max_context_tokens:,} tokens of context, beyond the model's limit "
                         f"of {limit.value:,} ({limit.why})")
    parallel = _parallel_options(model, req)
    kvs = _kv_options(model, gpu, req)
    utils = _util_options(req)
    default_seqs = batch_defaults(b, gpu, "server" if req.entry == "server" else "offline").max_num_seqs
    # judge candidates at the target batch (the sampler's profiling peak and, for hybrids, the Mamba
    # block check scale with max_num_seqs); sized up to what the pool holds at the end
    seqs0 = max(w.concurrency, min(default_seqs, math.ceil(w.concurrency * (1 + req.headroom))))

    chosen: _Candidate | None = None
    best: _Candidate | None = None  # the largest pool seen, for the shortfall
    for tp, pp in parallel:
        for kv in kvs:
            for util in utils:
                c = _evaluate(model, gpu, req, tp, pp, kv, util, w.max_context_tokens, seqs0)
                if best is None or _pool(c) >= _pool(best):
                    best = c
                if _carries(c, w, req.headroom):
                    chosen = c
                    break
            if chosen:
                break
        if chosen:
            break
    assert best is not None
    if chosen is None:
        return _infeasible(model, gpu, req, best, b.version, with_remedies)

    reasons: list[Reason] = []
    # 4. the model's full context when the pool has room for it
    if limit.value > chosen.max_len:
        full = _evaluate(model, gpu, req, chosen.tp, chosen.pp, chosen.kv, chosen.util, limit.value, seqs0)
        if _carries(full, w, req.headroom) and full.result.kv_cache.max_concurrency >= 1 + req.headroom:
            chosen = full
            len_why = (f"the model's full context ({limit.value:,}): the pool holds the target concurrency and a "
                       f"full-length request with {req.headroom:.0%} to spare")
        else:
            len_why = (f"the workload's longest request; the model's full {limit.value:,} would not leave the "
                       f"pool room for the target concurrency plus a full-length request")
    else:
        len_why = f"the workload's longest request, which is also the model's limit ({limit.why})"
    # 5. size max_num_seqs to what the pool holds, then re-check with that value
    seqs = max(w.concurrency, min(default_seqs, int(chosen.at_typical / (1 + req.headroom))))
    final = _evaluate(model, gpu, req, chosen.tp, chosen.pp, chosen.kv, chosen.util, chosen.max_len, seqs)
    if _carries(final, w, req.headroom):
        seqs = max(w.concurrency, min(seqs, int(final.at_typical / (1 + req.headroom))))
        final = _evaluate(model, gpu, req, chosen.tp, chosen.pp, chosen.kv, chosen.util, chosen.max_len, seqs)
    if not _carries(final, w, req.headroom):  # max_num_seqs moved the sampler overhead: keep the default
        final = chosen
    res = final.result
    kv_name = res.kv_cache.dtype
    margin = format_gib(res.memory.total_bytes - res.memory.requested_bytes)
    if len(utils) == 1 and req.max_gpu_memory_utilization is not None:
        util_why = f"the --max-gpu-memory-utilization cap; {margin} GiB stay outside vLLM's budget"
    else:
        util_why = (f"the lowest of {', '.join(f'{u:g}' for u in utils)} that carries the workload; {margin} GiB "
                    f"stay outside vLLM's budget for the CUDA context, NCCL and fragmentation")
    reasons.append(Reason(flag="gpu_memory_utilization", value=final.util, why=util_why))
    if req.kv_cache_dtype:
        kv_why = f"{req.kv_cache_dtype}, as asked ({kv_name} elements)"
    elif final.kv == "fp8":
        kv_why = "full-precision KV does not carry the workload; fp8 halves the KV bytes per token"
    elif len(kvs) > 1:
        kv_why = f"full precision ({kv_name}) carries the workload, so fp8's quality risk buys nothing"
    else:
        kv_why = (f"{kv_name}: the checkpoint declares its KV format" if model.quant.kv_cache_dtype
                  else f"{kv_name}: the only KV format this GPU and request allow")
    reasons.append(Reason(flag="kv_cache_dtype", value=final.kv, why=kv_why))
    reasons.append(Reason(flag="max_num_seqs", value=res.flags["max_num_seqs"], why=(
        f"the pool holds {final.at_typical:,} requests of {w.typical_tokens:,} tokens; less {req.headroom:.0%} "
        f"headroom, capped at vLLM's default of {default_seqs}, and at least the target {w.concurrency}")))
    reasons.append(Reason(flag="max_model_len", value=final.max_len, why=len_why))
    if req.gpus and len(parallel) >= 1:
        reasons.append(Reason(flag="tensor_parallel_size", value=final.tp, why=(
            f"{req.gpus} GPUs: {final.tp}-way tensor parallelism"
            + (f" x {final.pp} pipeline stages" if final.pp > 1 else "")
            + " (heads and layers divide evenly)")))
    flags = {k: res.flags[k] for k in ("gpu_memory_utilization", "kv_cache_dtype", "max_num_seqs", "max_model_len",
                                       "tensor_parallel_size", "pipeline_parallel_size", "max_num_batched_tokens")}
    if req.quantization:
        flags["quantization"] = req.quantization
    cap = Capacity(target_concurrency=w.concurrency, typical_tokens=w.typical_tokens, headroom=req.headroom,
                   requests_at_typical_length=final.at_typical,
                   requests_at_max_model_len=res.kv_cache.max_concurrency)
    name = model.hf_id or model.name
    return PlanResult(
        feasible=True, vllm_version=res.vllm_version, model=name, gpu=gpu.name, gpus=final.tp * final.pp,
        workload=w.model_dump(), flags=flags, estimate=res, capacity=cap, reasons=reasons,
        summary=_summary(res, final, w), alternatives=_alternatives(model, gpu, req, final, kvs, limit.value),
        remedies=[], serve_command=serve_command(name, flags), serve_args=serve_args(name, flags))


def _pool(c: _Candidate) -> int:
    return c.at_typical if c.result.fits else c.result.memory.kv_cache_bytes - (1 << 60)


def _summary(res: EstimateResult, c: _Candidate, w: Workload) -> str:
    kv = res.kv_cache
    per_request = request_bytes(kv, w.typical_tokens)  # what vLLM reserves, windows' in-flight tokens included
    state = f" plus {format_gib(kv.state_bytes_per_sequence)} GiB of recurrent state" if kv.state_bytes_per_sequence \
        else ""
    return (f"We can only batch {c.at_typical:,} requests of {w.typical_tokens:,} tokens (or "
            f"{res.kv_cache.max_concurrency:.2f} of {c.max_len:,}) because the KV pool is "
            f"{format_gib(res.memory.kv_cache_bytes)} GiB per GPU after {format_gib(res.memory.weights_bytes)} GiB of "
            f"weights and {format_gib(res.memory.activation_bytes + res.memory.non_torch_bytes + res.memory.cudagraph_bytes + res.memory.other_bytes)} GiB "  # noqa: E501
            f"of start-up overheads, and each request takes about {format_gib(per_request)} GiB "
            f"({kv.bytes_per_token:,} B per token{state}).")


def _alternatives(model: ModelSpec, gpu: GPU, req: PlanRequest, c: _Candidate, kvs: list[str],
                  full_len: int) -> list[Alternative]:
    lens = sorted({c.max_len, req.workload.max_context_tokens, full_len})
    out = []
    for kv in kvs:
        for L in lens:
            a = c if (kv, L) == (c.kv, c.max_len) else _evaluate(model, gpu, req, c.tp, c.pp, kv, c.util, L,
                                                                 c.result.flags["max_num_seqs"])
            out.append(Alternative(kv_cache_dtype=kv, max_model_len=L, fits=a.result.fits,
                                   requests_at_typical_length=a.at_typical,
                                   requests_at_max_model_len=a.result.kv_cache.max_concurrency,
                                   kv_cache_bytes=a.result.memory.kv_cache_bytes))
    return out


def _infeasible(model: ModelSpec, gpu: GPU, req: PlanRequest, best: _Candidate, version: str,
                with_remedies: bool) -> PlanResult:
    w = req.workload
    res = best.result
    kv = res.kv_cache
    need_n = math.ceil(w.concurrency * (1 + req.headroom))
    pool = res.memory.kv_cache_bytes
    if res.fits and best.at_typical > 0:
        # the pool scales with the requests it holds (blocks, windows and states included)
        shortfall = math.ceil(pool * need_n / best.at_typical) - pool
    else:
        per_request = kv.bytes_per_token * w.typical_tokens + kv.window_bytes_per_sequence + kv.state_bytes_per_sequence
        shortfall = need_n * per_request - pool  # a negative pool (weights too big) adds
    shortfall = max(shortfall, 1 << 20)
    remedies = _remedies(model, gpu, req, best) if with_remedies else []
    reason = res.errors[0] if res.errors else (
        f"the pool holds {best.at_typical:,} requests of {w.typical_tokens:,} tokens, the workload needs "
        f"{math.ceil(w.concurrency * (1 + req.headroom)):,} ({w.concurrency} + {req.headroom:.0%} headroom)")
    name = model.hf_id or model.name
    return PlanResult(
        feasible=False, vllm_version=version, model=name, gpu=gpu.name, gpus=best.tp * best.pp,
        workload=w.model_dump(), flags={k: res.flags.get(k) for k in (
            "gpu_memory_utilization", "kv_cache_dtype", "max_num_seqs", "max_model_len", "tensor_parallel_size",
            "pipeline_parallel_size", "max_num_batched_tokens")},
        estimate=res, capacity=None, reasons=[], alternatives=[], remedies=remedies, shortfall_bytes=shortfall,
        summary=(f"Does not fit: {format_gib(shortfall)} GiB short per GPU for the weights, overheads and the KV "
                 f"cache the workload needs, with the best candidate ({best.kv} KV, utilization {best.util:g}); "
                 f"{reason}"))


def _remedies(model: ModelSpec, gpu: GPU, req: PlanRequest, best: _Candidate) -> list[Remedy]:
    """Each remedy is checked by planning again with it; only those that solve are returned."""
    w = req.workload
    tried: list[tuple[str, int, dict, PlanRequest]] = []
    if "fp8" not in _kv_options(model, gpu, req) and gpu.fp8_kv in ("native", "storage-only") \
            and not model.quant.kv_cache_dtype:
        tried.append(("use an fp8 KV cache", 1, {"kv_cache_dtype": "fp8"}, replace(req, kv_cache_dtype="fp8")))
    for frac in (0.5, 0.25, 0.125):  # the longest shorter context that solves is kept
        L = max(int(w.max_context_tokens * frac) // 1024 * 1024, w.typical_tokens)
        if w.typical_tokens <= L < w.max_context_tokens:
            tried.append((f"shorten the longest request to {L:,} tokens", 2, {"max_context_tokens": L},
                          replace(req, workload=override(w, max_context_tokens=L))))
    if best.at_typical > 0 and best.at_typical < w.concurrency:
        fewer = max(int(best.at_typical / (1 + req.headroom)), 1)
        tried.append((f"lower the target concurrency to {fewer}", 2, {"concurrency": fewer},
                      replace(req, workload=override(w, concurrency=fewer))))
    if model.quant.method is None and not req.quantization and gpu.fp8:
        tried.append(("quantize the weights to fp8 (--quantization fp8)", 3, {"quantization": "fp8"},
                      replace(req, quantization="fp8")))
    n = best.tp * best.pp
    for more in (2, 4, 8):
        if more > n:
            tried.append((f"use {more} GPUs (tensor parallelism)", 4, {"gpus": more},
                          replace(req, gpus=more, tensor_parallel_size=None, pipeline_parallel_size=None)))
    bigger = sorted((g for g in list_gpus() if g.total_bytes > gpu.total_bytes and g.vendor == gpu.vendor),
                    key=lambda g: g.total_bytes)
    for g in bigger:
        tried.append((f"use a larger GPU: {g.name} ({g.total_bytes / GiB:.0f} GiB)", 5, {"gpu": g.name},
                      replace(req, gpu=g.name, gpu_memory=None)))
    out: list[Remedy] = []
    seen_ranks: set[tuple[int, str]] = set()
    for action, rank, changes, alt in tried:
        key = (rank, next(iter(changes)))  # one remedy per kind of change: the first (smallest) that solves
        if key in seen_ranks:
            continue
        try:
            p = _solve(alt, with_remedies=False)
        except InputError:
            continue
        if p.feasible and p.capacity is not None:
            seen_ranks.add(key)
            out.append(Remedy(action=action, cost_rank=rank, changes=changes,
                              requests_at_typical_length=p.capacity.requests_at_typical_length))
    return sorted(out, key=lambda r: r.cost_rank)
