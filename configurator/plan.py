"""`plan`: choose --gpu-memory-utilization, --kv-cache-dtype, --max-num-seqs and --max-model-len (and,
given a GPU count, the parallelism) that vLLM accepts and that carry a workload; explain them.

A pure search over candidates, each judged by `estimate` (the same memory core, release and
calibration). Preference order, first to last, documented in docs/plan.md:

1. parallelism: for `--gpus N` (at most MAX_GPUS), the tensor x pipeline splits over the divisors of
   N: tensor parallelism within a node (`--gpus-per-node`, 8) and as wide as the heads allow,
   pipeline stages across nodes;
2. full-precision KV before fp8 when both carry the workload; fp8 only where the GPU supports it;
3. the lowest utilization that carries it, from 0.90 up to 0.95 (never 0.98: the margin holds the
   CUDA context, NCCL and fragmentation);
4. max_model_len = the workload's longest request rounded up to a multiple of 1,024 tokens (within
   the model's limit), or what was asked (`full`: the model's limit);
5. max_num_seqs = what the pool holds at the typical length, less the headroom, capped at vLLM's
   default for the GPU class.

When no candidate carries the target, the result is still a plan: the candidate that carries the
most requests ("short", with how far and the checked remedies), or, when vLLM would start with
none, the most preferred candidate and why it fails ("nothing-starts").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

from configurator.calibration import Calibration
from configurator.errors import InputError
from configurator.estimate import EstimateRequest, EstimateResult, estimate, request_bytes
from configurator.estimate.loadable import block_shape_refusal, removed_architecture
from configurator.hardware.catalog import GPU, custom_gpu, find_gpu, list_gpus, newest_release_for, no_kernel_image
from configurator.model.resolve import resolve_model
from configurator.model.spec import ModelSpec
from configurator.plan_result import Alternative, Capacity, PlanResult, Reason, Remedy  # re-exported (old home)
from configurator.units import GiB, format_gib
from configurator.vllm.defaults import batch_defaults, derived_max_model_len
from configurator.vllm.serve import serve_args, serve_command
from configurator.vllm.versions import SUPPORTED, behaviour
from configurator.workloads import Workload, override

UTILIZATIONS = (0.90, 0.92, 0.95)
DEFAULT_HEADROOM = 0.10
# the largest --gpus a plan searches (128 nodes of 8): the split is searched over its divisors
MAX_GPUS = 1024
# --max-model-len is the workload's longest request rounded up to this many tokens
LEN_STEP_TOKENS = 1024
# "use a larger GPU" stays within the planned GPU's class (profiles/gpus/*.yaml gpu_class)
GPU_CLASS_LABELS = {"datacenter": "data-centre", "workstation": "workstation", "desktop": "consumer / desktop"}


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
    max_model_len: int | Literal["full"] | None = None  # None: the workload's longest request, rounded up


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


def _divisors(n: int) -> list[int]:
    """The divisors of n in increasing order, by trial up to its square root (n <= MAX_GPUS)."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def _check_gpu_counts(req: PlanRequest) -> None:
    for name, v in (("--gpus", req.gpus), ("--tensor-parallel-size", req.tensor_parallel_size),
                    ("--pipeline-parallel-size", req.pipeline_parallel_size)):
        if v is not None and not 1 <= v <= MAX_GPUS:
            raise InputError(f"{name} must be between 1 and {MAX_GPUS:,}, got {v}")
    if not 1 <= req.gpus_per_node <= MAX_GPUS:
        raise InputError(f"--gpus-per-node must be between 1 and {MAX_GPUS:,}, got {req.gpus_per_node}")
    n = (req.tensor_parallel_size or 1) * (req.pipeline_parallel_size or 1)
    if n > MAX_GPUS:
        raise InputError(f"tensor x pipeline parallelism of {n:,} GPUs is beyond the {MAX_GPUS:,} a plan covers")


def _splits_heads(model: ModelSpec, tp: int) -> bool:
    """vLLM's checks: tensor parallelism divides the attention heads, and the KV and recurrent-state
    heads it splits (KV heads fewer than tp are replicated instead)."""
    if model.num_attention_heads % tp:
        return False
    if any(g.kind in ("full", "sliding", "chunked") and g.num_kv_heads >= tp and g.num_kv_heads % tp
           for g in model.layers):
        return False
    return not any(g.mamba is not None and g.mamba.num_heads and g.mamba.num_heads % tp for g in model.layers)


def _parallel_options(model: ModelSpec, req: PlanRequest) -> list[tuple[int, int]]:
    if req.tensor_parallel_size or req.pipeline_parallel_size or not req.gpus:
        return [(req.tensor_parallel_size or 1, req.pipeline_parallel_size or 1)]
    out = [(req.gpus // pp, pp) for pp in _divisors(req.gpus)
           if pp <= model.num_hidden_layers and _splits_heads(model, req.gpus // pp)]
    # a layout whose block-quantized shards vLLM refuses (even with --enable-expert-parallel) does not load
    loads = [o for o in out if _expert_parallel(model, o[0]) or not block_shape_refusal(model, {}, o[0])]
    out = loads or out
    # tensor parallelism within a node (NVLink) first; pipeline stages across nodes (vLLM's advice)
    out.sort(key=lambda o: (o[0] > req.gpus_per_node, o[1]))
    if not out:
        raise InputError(f"{req.gpus} GPUs cannot be split into tensor x pipeline parallelism for this model "
                         f"({model.num_attention_heads} attention heads, {model.num_hidden_layers} layers)")
    return out


def _expert_parallel(model: ModelSpec, tp: int) -> bool:
    """--enable-expert-parallel where plain TP would not load and EP would: a block-quantized MoE whose
    per-rank expert width is not a whole number of blocks (Qwen3-235B-A22B-FP8 at TP 8: 1,536 / 8 = 192)
    keeps whole experts per rank under EP (configurator/estimate/loadable.py)."""
    return bool(block_shape_refusal(model, {}, tp)) and \
        not block_shape_refusal(model, {"enable_expert_parallel": True}, tp)


def _layout(tp: int, pp: int) -> str:
    return f"tensor parallel {tp}" + (f" x pipeline parallel {pp}" if pp > 1 else "")


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
    if _expert_parallel(model, tp):
        flags["enable_expert_parallel"] = True
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


def less_headroom(n: int, headroom: float) -> int:
    """The requests that run at once when `n` fit and `headroom` of them is kept free: floor(n / (1 + headroom)),
    exactly (275 / 1.1 is 250, where float division gives 249.99999999999997 and int() 249)."""
    return math.floor(Fraction(n) / (1 + Fraction(str(headroom))))


def with_headroom(n: int, headroom: float) -> int:
    """The requests a pool must hold for `n` to run with `headroom` kept: ceil(n x (1 + headroom)), exactly
    (10 x 1.1 is 11, where float multiplication gives 11.000000000000002 and ceil() 12)."""
    return math.ceil(Fraction(n) * (1 + Fraction(str(headroom))))


def _carries(c: _Candidate, w: Workload, headroom: float) -> bool:
    return c.result.verdict == "fits" and c.at_typical >= with_headroom(w.concurrency, headroom)


def plan(req: PlanRequest) -> PlanResult:
    """Plan a deployment. Raises InputError for bad input; a workload that does not fit is a result
    (status "short" or "nothing-starts")."""
    return _solve(req, with_remedies=True)


def _plan_len(req: PlanRequest, w: Workload, limit: Any) -> tuple[int, str]:
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


def _solve(req: PlanRequest, *, with_remedies: bool) -> PlanResult:
    _check_gpu_counts(req)
    model = req.model if isinstance(req.model, ModelSpec) else resolve_model(req.model)
    gpu = _gpu(req)
    w = req.workload
    if not (0 <= req.headroom < 1):
        raise InputError(f"--headroom must be in [0, 1), got {req.headroom}")
    b = behaviour(req.vllm_version or "latest")
    limit = derived_max_model_len(model, b)
    if w.max_context_tokens > limit.value:
        raise InputError(f"the workload needs {w.max_context_tokens:,} tokens of context, beyond the model's limit "
                         f"of {limit.value:,} ({limit.why}); plan for the model's limit with --max-context "
                         f"{limit.value}, or choose a model with a longer context")
    max_len, len_why = _plan_len(req, w, limit)
    parallel = _parallel_options(model, req)
    kvs = _kv_options(model, gpu, req)
    utils = _util_options(req)
    default_seqs = batch_defaults(b, gpu, "server" if req.entry == "server" else "offline").max_num_seqs
    # judge candidates at the target batch (the sampler's profiling peak and, for hybrids, the Mamba
    # block check scale with max_num_seqs); sized up to what the pool holds at the end
    seqs0 = max(w.concurrency, min(default_seqs, with_headroom(w.concurrency, req.headroom)))

    evaluated: list[_Candidate] = []
    chosen: _Candidate | None = None
    for tp, pp in parallel:
        for kv in kvs:
            for util in utils:
                c = _evaluate(model, gpu, req, tp, pp, kv, util, max_len, seqs0)
                evaluated.append(c)
                if _carries(c, w, req.headroom):
                    chosen = c
                    break
            if chosen:
                break
        if chosen:
            break
    if chosen is None:
        starting = [c for c in evaluated if c.result.verdict == "fits" and c.at_typical >= 1]
        if not starting:
            return _nothing_starts(model, gpu, req, evaluated, parallel, b.version, with_remedies)
        # the flags that carry the most of the workload; on a tie the earlier (preferred) candidate
        best = max(starting, key=lambda c: c.at_typical)
        final = _size_short(model, gpu, req, best, default_seqs)
        status = "short"
    else:
        final = _size_carrying(model, gpu, req, chosen, default_seqs)
        status = "carries"

    res = final.result
    h = req.headroom
    carried = w.concurrency if status == "carries" else min(res.flags["max_num_seqs"],
                                                            less_headroom(final.at_typical, h))
    need_n = with_headroom(w.concurrency, h)
    shortfall = 0 if status == "carries" else max(
        math.ceil(res.memory.kv_cache_bytes * need_n / final.at_typical) - res.memory.kv_cache_bytes, 1 << 20)
    reasons = _reasons(model, req, final, status, utils, kvs, default_seqs, len_why,
                       [c for c in evaluated if (c.tp, c.pp) != (final.tp, final.pp)])
    flags = {k: res.flags[k] for k in ("gpu_memory_utilization", "kv_cache_dtype", "max_num_seqs", "max_model_len",
                                       "tensor_parallel_size", "pipeline_parallel_size", "max_num_batched_tokens")}
    if req.quantization:
        flags["quantization"] = req.quantization
    if res.flags.get("enable_expert_parallel"):
        flags["enable_expert_parallel"] = True
    cap = Capacity(target_concurrency=w.concurrency, typical_tokens=w.typical_tokens, headroom=h,
                   requests_at_typical_length=final.at_typical,
                   requests_at_max_model_len=res.kv_cache.max_concurrency)
    summary = _summary(res, final, w)
    if status == "short":
        summary = (f"Short of the target: these flags carry {carried:,} of the {w.concurrency:,} concurrent requests "
                   f"({carried / w.concurrency:.0%}) with {h:.0%} headroom kept; the KV pool is "
                   f"{format_gib(shortfall)} GiB per GPU short of the {need_n:,} requests the target needs. " + summary)
    detail = with_remedies
    name = model.hf_id or model.name
    return PlanResult(
        feasible=status == "carries", status=status, carried_concurrency=carried, vllm_version=res.vllm_version,
        model=name, gpu=gpu.name, gpus=final.tp * final.pp, workload=w.model_dump(), flags=flags, estimate=res,
        capacity=cap, reasons=reasons, summary=summary,
        alternatives=_alternatives(model, gpu, req, final, kvs, limit.value) if detail else [],
        remedies=_remedies(model, gpu, req, final) if detail and status == "short" else [],
        shortfall_bytes=shortfall, serve_command=serve_command(name, flags),
        # the stock image's entrypoint is `vllm serve`: its container args start at the model
        serve_args=serve_args(name, flags)[1:])


def _size_carrying(model: ModelSpec, gpu: GPU, req: PlanRequest, chosen: _Candidate, default_seqs: int) -> _Candidate:
    """max_num_seqs = what the pool holds at the typical length less the headroom, at least the target;
    re-checked with that value (a larger batch raises the sampler's profiling peak)."""
    w, h = req.workload, req.headroom
    seqs = max(w.concurrency, min(default_seqs, less_headroom(chosen.at_typical, h)))
    final = _evaluate(model, gpu, req, chosen.tp, chosen.pp, chosen.kv, chosen.util, chosen.max_len, seqs)
    if _carries(final, w, h):
        seqs = max(w.concurrency, min(seqs, less_headroom(final.at_typical, h)))
        final = _evaluate(model, gpu, req, chosen.tp, chosen.pp, chosen.kv, chosen.util, chosen.max_len, seqs)
    return final if _carries(final, w, h) else chosen  # max_num_seqs moved the sampler overhead: keep the target


def _size_short(model: ModelSpec, gpu: GPU, req: PlanRequest, best: _Candidate, default_seqs: int) -> _Candidate:
    """The best short candidate with max_num_seqs = what its pool holds less the headroom (at least 1),
    so vLLM admits no more requests than the pool keeps without preemption."""
    h = req.headroom

    def starts(c: _Candidate) -> bool:
        return c.result.fits and c.at_typical >= 1

    seqs = max(1, min(default_seqs, less_headroom(best.at_typical, h)))
    final = _evaluate(model, gpu, req, best.tp, best.pp, best.kv, best.util, best.max_len, seqs)
    if starts(final):
        fewer = max(1, min(seqs, less_headroom(final.at_typical, h)))
        if fewer != seqs:
            final = _evaluate(model, gpu, req, best.tp, best.pp, best.kv, best.util, best.max_len, fewer)
    return final if starts(final) else best


def _reasons(model: ModelSpec, req: PlanRequest, final: _Candidate, status: str, utils: list[float],
             kvs: list[str], default_seqs: int, len_why: str, other_layouts: list[_Candidate]) -> list[Reason]:
    w, h, res = req.workload, req.headroom, final.result
    kv_name = res.kv_cache.dtype
    margin = format_gib(res.memory.total_bytes - res.memory.requested_bytes)
    if len(utils) == 1 and req.max_gpu_memory_utilization is not None:
        util_why = f"the --max-gpu-memory-utilization cap; {margin} GiB stay outside vLLM's budget"
    elif status == "short":
        util_why = (f"the one of {', '.join(f'{u:g}' for u in utils)} that carries the most of the workload; "
                    f"{margin} GiB stay outside vLLM's budget for the CUDA context, NCCL and fragmentation")
    else:
        util_why = (f"the lowest of {', '.join(f'{u:g}' for u in utils)} that carries the workload; {margin} GiB "
                    f"stay outside vLLM's budget for the CUDA context, NCCL and fragmentation")
    if req.kv_cache_dtype:
        kv_why = f"{req.kv_cache_dtype}, as asked ({kv_name} elements)"
    elif final.kv == "fp8":
        kv_why = ("full-precision KV does not carry the workload; fp8 halves the KV bytes per token"
                  if status == "carries" else "fp8 halves the KV bytes per token, so the pool holds the most requests")
    elif len(kvs) > 1:
        kv_why = f"full precision ({kv_name}) carries the workload, so fp8's quality risk buys nothing"
    else:
        kv_why = (f"{kv_name}: the checkpoint declares its KV format" if model.quant.kv_cache_dtype
                  else f"{kv_name}: the only KV format this GPU and request allow")
    seqs = res.flags["max_num_seqs"]
    seqs_why = _seqs_why(final.at_typical, w, h, seqs, default_seqs, status)
    reasons = [Reason(flag="gpu_memory_utilization", value=final.util, why=util_why),
               Reason(flag="kv_cache_dtype", value=final.kv, why=kv_why),
               Reason(flag="max_num_seqs", value=seqs, why=seqs_why),
               Reason(flag="max_model_len", value=final.max_len, why=len_why)]
    if req.gpus:
        why = f"{req.gpus} GPUs: {_layout(final.tp, final.pp)}; "
        if final.tp * final.pp > req.gpus_per_node and final.pp > 1:
            why += f"tensor parallelism stays within a {req.gpus_per_node}-GPU node, pipeline stages span the nodes"
        else:
            why += "the widest tensor parallelism within a node that divides the heads"
        tried = sorted({(c.tp, c.pp) for c in other_layouts}, key=lambda o: (o[0] > req.gpus_per_node, o[1]))
        if tried:
            why += f" ({', '.join(_layout(*o) for o in tried)} carried less)"
        reasons.append(Reason(flag="tensor_parallel_size", value=final.tp, why=why))
    if res.flags.get("enable_expert_parallel"):
        refusal = block_shape_refusal(model, {}, final.tp)
        reasons.append(Reason(flag="enable_expert_parallel", value=True, why=(
            f"at tensor parallel {final.tp} without it vLLM refuses to load the block-quantized experts "
            f"(\"{refusal}\"); expert parallelism keeps whole experts on each GPU")))
    return reasons


def _seqs_why(at: int, w: Workload, h: float, seqs: int, default_seqs: int, status: str) -> str:
    """max_num_seqs's reason with its arithmetic: what the pool holds, divided by 1 + headroom, rounded down,
    and the cap, target or re-evaluation that moved it from there."""
    n = less_headroom(at, h)
    why = (f"the pool holds {at:,} requests of {w.typical_tokens:,} tokens; keeping {h:.0%} headroom, "
           f"{at:,} / {1 + h:g} = {at / (1 + h):,.2f}, rounded down {n:,}")
    if seqs == n:
        pass
    elif seqs == default_seqs and seqs < n:
        why += f", capped at vLLM's default of {default_seqs}"
    elif seqs == w.concurrency and seqs > n:
        why += f", raised to the target {w.concurrency}"
    elif seqs < n:
        why += (f"; {seqs:,} is kept from the evaluation before (a larger batch's sampler buffers leave a smaller "
                f"pool)")
    else:
        why += f"; {seqs:,}"
    if status == "carries":
        return why + f" (the target is {w.concurrency:,})"
    return why + f": short of the target {w.concurrency:,} (a larger batch would be preempted)"


def _nothing_starts(model: ModelSpec, gpu: GPU, req: PlanRequest, evaluated: list[_Candidate],
                    parallel: list[tuple[int, int]], version: str, with_remedies: bool) -> PlanResult:
    """No candidate starts: report the most preferred layout (its least-short candidate) and why."""
    w = req.workload
    first = [c for c in evaluated if (c.tp, c.pp) == parallel[0]]
    best = max(first, key=lambda c: c.result.memory.kv_cache_bytes)
    res = best.result
    kv = res.kv_cache
    need_n = with_headroom(w.concurrency, req.headroom)
    per_request = kv.bytes_per_token * w.typical_tokens + kv.window_bytes_per_sequence + kv.state_bytes_per_sequence
    shortfall = max(need_n * per_request - res.memory.kv_cache_bytes, 1 << 20)  # a negative pool adds
    reason = res.errors[0] if res.errors else "vLLM would not start"
    arch = no_kernel_image(gpu, version, SUPPORTED)
    # what stops vLLM before any memory figure matters (configurator/estimate/loadable.py), or no prediction at all
    before = removed_architecture(model, version) or block_shape_refusal(model, res.flags, best.tp)
    if before:
        arch = f"Does not start: {before}"
    elif res.verdict == "not-predicted":
        arch = f"Not predicted: {res.not_modelled}"
    elif arch:
        arch = f"Does not start: vLLM {version} has no kernels for {gpu.name}: {arch}"
    layouts = ""
    if len(parallel) > 1:
        layouts = (f" No split of the {req.gpus} GPUs starts ({', '.join(_layout(*o) for o in parallel)}); shown is "
                   f"the preferred one, {_layout(*parallel[0])}: tensor parallelism within a node, pipeline stages "
                   f"across nodes, as vLLM advises.")
    name = model.hf_id or model.name
    return PlanResult(
        feasible=False, status="nothing-starts", carried_concurrency=0, vllm_version=version, model=name,
        gpu=gpu.name, gpus=best.tp * best.pp, workload=w.model_dump(), flags={k: res.flags.get(k) for k in (
            "gpu_memory_utilization", "kv_cache_dtype", "max_num_seqs", "max_model_len", "tensor_parallel_size",
            "pipeline_parallel_size", "max_num_batched_tokens")},
        estimate=res, capacity=None, reasons=[], alternatives=[],
        remedies=_remedies(model, gpu, req, best) if with_remedies else [], shortfall_bytes=0 if arch else shortfall,
        # a release without kernels for the GPU, a removed architecture, a block-quantized shard vLLM refuses or a
        # start-up not predicted: no shortfall to report
        summary=arch if arch else
        (f"Does not fit: vLLM would start with none of the candidates; {format_gib(shortfall)} GiB short per "
         f"GPU for the weights, overheads and the KV cache the workload needs, with {best.kv} KV at "
         f"utilization {best.util:g}: {reason}{layouts}"))


def _remedies(model: ModelSpec, gpu: GPU, req: PlanRequest, best: _Candidate) -> list[Remedy]:
    """Each remedy is checked by planning again with it; only those that carry the target are returned,
    one per kind of change (the first, smallest, that solves), cheapest first."""
    w = req.workload
    tried: list[tuple[str, int, dict, PlanRequest]] = []
    version = behaviour(req.vllm_version or "latest").version
    if no_kernel_image(gpu, version, SUPPORTED) and (newest := newest_release_for(gpu, SUPPORTED)):
        tried.append((f"use vLLM {newest}, the newest release whose wheels ship kernels for compute capability "
                      f"{gpu.compute_capability} (--vllm-version {newest}, image vllm/vllm-openai:v{newest})", 1,
                      {"vllm_version": newest}, replace(req, vllm_version=newest)))
    if "fp8" not in _kv_options(model, gpu, req) and gpu.fp8_kv in ("native", "storage-only") \
            and not model.quant.kv_cache_dtype:
        tried.append(("use an fp8 KV cache", 1, {"kv_cache_dtype": "fp8"}, replace(req, kv_cache_dtype="fp8")))
    for frac in (0.5, 0.25, 0.125):  # the longest shorter context that solves is kept
        length = max(int(w.max_context_tokens * frac) // 1024 * 1024, w.typical_tokens)
        if w.typical_tokens <= length < w.max_context_tokens:
            tried.append((f"shorten the longest request to {length:,} tokens", 2, {"max_context_tokens": length},
                          replace(req, workload=override(w, max_context_tokens=length), max_model_len=None)))
    if 0 < best.at_typical < w.concurrency:
        fewer = max(less_headroom(best.at_typical, req.headroom), 1)
        tried.append((f"lower the target concurrency to {fewer}", 2, {"concurrency": fewer},
                      replace(req, workload=override(w, concurrency=fewer))))
    if model.quant.method is None and not req.quantization and gpu.fp8:
        tried.append(("quantize the weights to fp8 (--quantization fp8)", 3, {"quantization": "fp8"},
                      replace(req, quantization="fp8")))
    n = best.tp * best.pp
    for more in (2 * n, 4 * n, 8 * n):
        if more <= MAX_GPUS:
            tried.append((f"use {more} GPUs", 4, {"gpus": more},
                          replace(req, gpus=more, tensor_parallel_size=None, pipeline_parallel_size=None)))
    tried += _larger_gpus(gpu, req)
    out: list[Remedy] = []
    solved: set[tuple[int, str]] = set()
    for action, rank, changes, alt in tried:
        key = (rank, next(iter(changes)))
        if key in solved:
            continue
        try:
            p = _solve(alt, with_remedies=False)
        except InputError:
            continue
        if p.feasible and p.capacity is not None:
            solved.add(key)
            if "gpus" in changes:
                action += f" ({_layout(p.flags['tensor_parallel_size'], p.flags['pipeline_parallel_size'])})"
            out.append(Remedy(action=action, cost_rank=rank, changes=changes,
                              requests_at_typical_length=p.capacity.requests_at_typical_length))
    return sorted(out, key=lambda r: r.cost_rank)


def _larger_gpus(gpu: GPU, req: PlanRequest) -> list[tuple[str, int, dict, PlanRequest]]:
    """Larger GPUs of the same vendor and class (data-centre, workstation, consumer / desktop), smallest
    first; a GPU known only by its memory (no class) is compared with every class, each named."""
    out = []
    for g in sorted((g for g in list_gpus() if g.total_bytes > gpu.total_bytes and g.vendor == gpu.vendor
                     and (not gpu.gpu_class or g.gpu_class == gpu.gpu_class)), key=lambda g: g.total_bytes):
        label = GPU_CLASS_LABELS.get(g.gpu_class, g.gpu_class or "unclassified")
        action = (f"use a larger {label} GPU: {g.name} ({g.total_bytes / GiB:.0f} GiB)" if gpu.gpu_class
                  else f"use a larger GPU: {g.name} ({label}, {g.total_bytes / GiB:.0f} GiB)")
        out.append((action, 5, {"gpu": g.name}, replace(req, gpu=g.name, gpu_memory=None)))
    return out


def _summary(res: EstimateResult, c: _Candidate, w: Workload) -> str:
    kv = res.kv_cache
    per_request = request_bytes(kv, w.typical_tokens)  # what vLLM reserves, windows' in-flight tokens included
    state = f", plus {format_gib(kv.state_bytes_per_sequence)} GiB of recurrent state" if kv.state_bytes_per_sequence \
        else ""
    window = kv.window_bytes_per_sequence
    # the per-token figure is the layers that keep every token; windowed layers' blocks are a fixed share
    covers = "in every layer" if not window and not kv.state_bytes_per_sequence and \
        all(g.kind in ("FullAttentionSpec", "MLAAttentionSpec") for g in kv.groups) else \
        "in the layers that keep every token"
    full = kv.bytes_per_token * w.typical_tokens
    times = f" x {w.typical_tokens:,} = {format_gib(full)} GiB" if window else ""
    windows = (f", plus {format_gib(per_request - full - kv.state_bytes_per_sequence)} GiB for the sliding-window "
               f"layers' window and in-flight tokens" if window else "")
    overheads = res.memory.activation_bytes + res.memory.non_torch_bytes + res.memory.cudagraph_bytes + \
        res.memory.other_bytes
    return (f"The KV pool holds {c.at_typical:,} requests of {w.typical_tokens:,} tokens at once (or "
            f"{res.kv_cache.max_concurrency:.2f} of {c.max_len:,}), against a target of {w.concurrency:,}: it is "
            f"{format_gib(res.memory.kv_cache_bytes)} GiB per GPU after {format_gib(res.memory.weights_bytes)} GiB of "
            f"weights and {format_gib(overheads)} GiB of start-up overheads, and each request takes about "
            f"{format_gib(per_request)} GiB ({kv.bytes_per_token:,} B per token{times} {covers}{windows}{state}).")


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
