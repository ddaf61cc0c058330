"""The plan's result: its flags with a reason each, the summary, the alternatives and the layouts compared."""

from __future__ import annotations

import math
from collections.abc import Callable

from configurator.estimate import EstimateResult, request_bytes
from configurator.estimate.loadable import block_shape_refusal
from configurator.plan.context import Context
from configurator.plan.remedies import FP8_QUALITY, remedies
from configurator.plan.search import Candidate, carries, evaluate, less_headroom, share, with_headroom
from configurator.plan.speed import DP_MARGIN, binding, has_targets, meets, per_gpu_for_choice, speed_line
from configurator.plan_result import Alternative, Capacity, LayoutOption, PlanResult, Reason
from configurator.units import format_gib
from configurator.vllm.serve import serve_args, serve_command
from configurator.workloads import Workload

FLAG_KEYS = ("gpu_memory_utilization", "kv_cache_dtype", "max_num_seqs", "max_model_len", "tensor_parallel_size",
             "pipeline_parallel_size", "max_num_batched_tokens")


def result(ctx: Context, final: Candidate, status: str, evaluated: list[Candidate],
           solve: Callable | None) -> PlanResult:
    """The PlanResult of the chosen candidate; `solve` (planning again) checks the remedies, None: no detail."""
    w, h, res, lay = ctx.w, ctx.req.headroom, final.result, final.lay
    mine = share(w, lay)
    seqs = res.flags["max_num_seqs"]
    fits_all = final.at_typical >= with_headroom(mine.concurrency, h)
    held = min(seqs, less_headroom(final.at_typical, h)) * lay.ways
    carried = w.concurrency if fits_all else min(w.concurrency, held)
    need_n = with_headroom(mine.concurrency, h)
    shortfall = 0 if status == "carries" else max(
        math.ceil(res.memory.kv_cache_bytes * need_n / final.at_typical) - res.memory.kv_cache_bytes, 1 << 20)
    flags = {k: res.flags[k] for k in FLAG_KEYS}
    if int(res.flags.get("data_parallel_size") or 1) > 1:
        flags["data_parallel_size"] = res.flags["data_parallel_size"]
    if res.flags.get("enable_expert_parallel"):
        flags["enable_expert_parallel"] = True
    if ctx.req.quantization:
        flags["quantization"] = ctx.req.quantization
    speed = ctx.speed(final)
    options = layout_options(ctx, evaluated, final) if solve and len(ctx.layouts) > 1 else []
    summary = _summary(res, final, w) + _queue_note(w, carried, status) + _layouts_note(options)
    if speed:
        summary += f" Predicted at {w.concurrency:,} requests in flight: {speed_line(speed)}."
    if status == "short":
        summary = (f"Short of the target: these flags carry {carried:,} of the {w.concurrency:,} concurrent requests "
                   f"({carried / w.concurrency:.0%}) with {h:.0%} headroom kept; the KV pool is "
                   f"{format_gib(shortfall)} GiB per GPU short of the {need_n:,} requests the target needs. " + summary)
    name = ctx.model.hf_id or ctx.model.name
    memory = (f"memory: the KV pool holds {final.at_typical * lay.ways:,} requests of {w.typical_tokens:,} tokens "
              f"against the {w.concurrency:,} of the target")
    return PlanResult(
        feasible=status == "carries", status=status, carried_concurrency=carried, vllm_version=res.vllm_version,
        model=name, gpu=ctx.gpu.name, gpus=lay.gpus, workload=w.model_dump(), flags=flags, estimate=res,
        capacity=Capacity(target_concurrency=w.concurrency, typical_tokens=w.typical_tokens, headroom=h,
                          requests_at_typical_length=final.at_typical * lay.ways,
                          requests_at_max_model_len=res.kv_cache.max_concurrency * lay.ways),
        reasons=reasons(ctx, final, status, evaluated, options), summary=summary,
        alternatives=alternatives(ctx, final) if solve else [],
        remedies=remedies(ctx, final, solve) if solve and status == "short" else [],
        shortfall_bytes=shortfall, serve_command=serve_command(name, flags),
        # the stock image's entrypoint is `vllm serve`: its container args start at the model
        serve_args=serve_args(name, flags)[1:], replicas=lay.replicas, layout=lay.text(),
        queued=max(0, w.concurrency - carried) if status == "carries" else 0, speed=speed,
        meets_targets=meets(speed, w) if has_targets(w) and speed else None,
        binding=binding(speed, w, memory), layouts=options)


def _queue_note(w: Workload, carried: int, status: str) -> str:
    if status != "carries" or carried >= w.concurrency:
        return ""
    return (f" The workload's concurrency is a queue: {carried:,} of its {w.concurrency:,} requests run at once and "
            f"the other {w.concurrency - carried:,} wait in vLLM's queue (their time to first token includes the "
            f"wait); more KV memory runs more at once.")


def _layouts_note(options: list[LayoutOption]) -> str:
    if not options:
        return ""
    parts = []
    for o in (o for o in options if o.starts):
        ranks = o.data_parallel_size * o.replicas
        tokens = f"{ranks} x {o.kv_cache_tokens_per_rank:,} = {o.kv_cache_tokens:,}" if ranks > 1 else \
            f"{o.kv_cache_tokens:,}"
        speed = f", {o.speed['output_tok_s_per_gpu']:,.0f} output tokens/s per GPU, time per output token " \
                f"{o.speed['tpot_ms']:,.1f} ms" if o.speed else ""
        parts.append(f"{o.layout}{' (chosen)' if o.chosen else ''}: {tokens} KV tokens{speed}")
    idle = sum(not o.starts for o in options)
    return " Layouts compared: " + "; ".join(parts) + (f"; {idle} more do not start" if idle else "") + "."


def layout_options(ctx: Context, evaluated: list[Candidate], final: Candidate) -> list[LayoutOption]:
    """Each layout's best candidate: its carrying one, else the one whose pools hold the most."""
    out = []
    for lay in ctx.layouts:
        mine = [c for c in evaluated if c.lay == lay]
        if not mine:
            continue
        c = final if lay == final.lay else max(mine, key=lambda c: (c.result.fits, c.at_typical))
        tokens = c.result.kv_cache.tokens if c.result.fits else 0
        out.append(LayoutOption(
            layout=lay.text(), tensor_parallel_size=lay.tp, pipeline_parallel_size=lay.pp, data_parallel_size=lay.dp,
            replicas=lay.replicas, gpus=lay.gpus, starts=bool(c.result.fits and c.at_typical >= 1),
            carries=c.at_typical >= with_headroom(share(ctx.w, lay).concurrency, ctx.req.headroom)
            and c.result.verdict == "fits", kv_cache_dtype=c.kv,
            kv_cache_tokens=tokens * lay.ways, kv_cache_tokens_per_rank=tokens,
            requests_at_typical_length=c.at_typical * lay.ways, speed=ctx.speed(c) if c.result.fits else None,
            chosen=lay == final.lay))
    return out


def reasons(ctx: Context, final: Candidate, status: str, evaluated: list[Candidate],
            options: list[LayoutOption]) -> list[Reason]:
    req, res = ctx.req, final.result
    if not carries(final, ctx.w, req.headroom):
        status = "short"  # a queue workload's plan: what it holds is the most of the workload, as a short plan's
    kv_name = res.kv_cache.dtype
    margin = format_gib(res.memory.total_bytes - res.memory.requested_bytes)
    utils = ctx.utils
    if len(utils) == 1 and req.max_gpu_memory_utilization is not None:
        util_why = f"the --max-gpu-memory-utilization cap; {margin} GiB stay outside vLLM's budget"
    else:
        which = "carries the most of the workload" if status == "short" else "carries the workload"
        util_why = (f"the {'one' if status == 'short' else 'lowest'} of {', '.join(f'{u:g}' for u in utils)} that "
                    f"{which}; {margin} GiB stay outside vLLM's budget for the CUDA context, NCCL and fragmentation")
    if req.kv_cache_dtype:
        kv_why = f"{req.kv_cache_dtype}, as asked ({kv_name} elements)"
    elif final.kv == "fp8":
        kv_why = ("full-precision KV does not carry the workload; fp8 halves the KV bytes per token"
                  if status == "carries" else "fp8 halves the KV bytes per token, so the pool holds the most requests")
    elif len(ctx.kvs) > 1:
        kv_why = f"full precision ({kv_name}) carries the workload, so fp8's quality risk buys nothing"
    else:
        kv_why = (f"{kv_name}: the checkpoint declares its KV format" if ctx.model.quant.kv_cache_dtype
                  else f"{kv_name}: the only KV format this GPU and request allow")
    seqs = res.flags["max_num_seqs"]
    queue = "carries" if ctx.w.queue else status
    out = [Reason(flag="gpu_memory_utilization", value=final.util, why=util_why),
           Reason(flag="kv_cache_dtype", value=final.kv, why=kv_why),
           Reason(flag="max_num_seqs", value=seqs, why=seqs_why(final, ctx.w, req.headroom, seqs, ctx.default_seqs,
                                                                queue)),
           Reason(flag="max_model_len", value=final.max_len, why=ctx.len_why)]
    return out + layout_reasons(ctx, final, options)


def layout_reasons(ctx: Context, final: Candidate, options: list[LayoutOption]) -> list[Reason]:
    """A row for each parallelism flag the plan sets: tensor, pipeline and data parallel, expert parallelism."""
    req, lay, res = ctx.req, final.lay, final.result
    out = []
    if req.gpus:
        why = f"{lay.gpus} GPUs: {lay.text()}; "
        if lay.engine_gpus > req.gpus_per_node:
            why += f"no engine within a {req.gpus_per_node}-GPU node starts, so one spans the nodes"
        elif lay.replicas > 1:
            why += (f"one {req.gpus_per_node}-GPU node holds an engine, so the others are replicas (Deployment "
                    f"replicas or LeaderWorkerSet groups), not pipeline stages across nodes")
        else:
            why += "the widest tensor parallelism within a node that divides the heads"
        others = [_option_text(o) for o in options if not o.chosen and o.starts]
        mine = next((o.speed for o in options if o.chosen and o.speed), None)
        # the note only where the margin decided: a data-parallel layout that carries the workload, meets its
        # targets and is predicted faster per GPU, but by less than DP_MARGIN
        if mine and any(o.data_parallel_size > 1 and o.speed and o.carries and not o.chosen
                        and (not has_targets(ctx.w) or meets(o.speed, ctx.w))
                        and per_gpu_for_choice(o.speed, o.data_parallel_size) <= mine["output_tok_s_per_gpu"]
                        < o.speed["output_tok_s_per_gpu"] for o in options):
            others.append(f"data-parallel attention is taken only when predicted {DP_MARGIN - 1:.0%} faster per "
                          "GPU: no published run the speed model was fitted on has dp > 1")
        idle = [o.layout for o in options if not o.starts]
        if idle:
            others.append("not starting: " + ", ".join(idle))
        if others:
            why += " (compared: " + "; ".join(others) + ")"
        out.append(Reason(flag="tensor_parallel_size", value=lay.tp, why=why))
    elif lay.tp > 1:
        out.append(Reason(flag="tensor_parallel_size", value=lay.tp, why="as asked"))
    if lay.pp > 1:
        out.append(Reason(flag="pipeline_parallel_size", value=lay.pp, why=(
            f"{lay.pp} pipeline stages of tensor parallel {lay.tp}: " +
            (f"tensor parallelism stays within a {req.gpus_per_node}-GPU node, stages span the nodes"
             if lay.engine_gpus > req.gpus_per_node else "tensor parallelism alone does not divide the heads"
             if req.gpus else "as asked"))))
    if lay.dp > 1:
        out.append(Reason(flag="data_parallel_size", value=lay.dp, why=(
            f"data-parallel attention: each of the {lay.dp} ranks keeps its own KV cache "
            f"({res.kv_cache.tokens:,} tokens each, {res.kv_cache.tokens * lay.dp:,} in all) and schedules its "
            f"share of the requests, where tensor parallelism keeps one cache")))
    if res.flags.get("enable_expert_parallel"):
        refusal = None if lay.dp > 1 else block_shape_refusal(ctx.model, {}, lay.tp)
        why = (f"at tensor parallel {lay.tp} without it vLLM refuses to load the block-quantized experts "
               f"(\"{refusal}\"); expert parallelism keeps whole experts on each GPU" if refusal else
               f"the experts are spread whole over the {lay.engine_gpus} GPUs instead of each holding a slice of "
               f"every expert")
        out.append(Reason(flag="enable_expert_parallel", value=True, why=why))
    if req.quantization:
        out.append(Reason(flag="quantization", value=req.quantization, why=(
            f"as asked: vLLM quantizes the weights at load{'' if ctx.model.quant.method else ' (a 16-bit checkpoint)'}"
            + ("; " + FP8_QUALITY if req.quantization == "fp8" else ""))))
    return out


def _option_text(o: LayoutOption) -> str:
    if not o.carries:
        return f"{o.layout} carries less"
    if o.speed:
        return f"{o.layout}: {o.speed['output_tok_s_per_gpu']:,.0f} tokens/s per GPU"
    return f"{o.layout} also carries it"


def seqs_why(c: Candidate, w: Workload, h: float, seqs: int, default_seqs: int, status: str) -> str:
    """max_num_seqs's reason with its arithmetic: what the pool holds, divided by 1 + headroom, rounded down,
    and the cap, target or re-evaluation that moved it from there."""
    at, mine = c.at_typical, share(w, c.lay)
    n = less_headroom(at, h)
    why = (f"the pool holds {at:,} requests of {w.typical_tokens:,} tokens; keeping {h:.0%} headroom, "
           f"{at:,} / {1 + h:g} = {at / (1 + h):,.2f}, rounded down {n:,}")
    if seqs == n:
        pass
    elif seqs == default_seqs and seqs < n:
        why += f", capped at vLLM's default of {default_seqs}"
    elif seqs == mine.concurrency and seqs > n:
        why += f", raised to the target {mine.concurrency}"
    elif seqs < n:
        why += (f"; {seqs:,} is kept from the evaluation before (a larger batch's sampler buffers leave a smaller "
                f"pool)")
    else:
        why += f"; {seqs:,}"
    if c.lay.ways > 1:
        why += (f" per scheduler ({c.lay.ways} of them, each with its own pool, share the {w.concurrency:,}: "
                f"{mine.concurrency:,} each)")
    if status == "carries" and at >= with_headroom(mine.concurrency, h):
        return why + f" (the target is {mine.concurrency:,})"
    if status == "carries":
        return why + f": the rest of the target {mine.concurrency:,} waits in vLLM's queue"
    return why + f": short of the target {mine.concurrency:,} (a larger batch would be preempted)"


def _summary(res: EstimateResult, c: Candidate, w: Workload) -> str:
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
    ways = c.lay.ways
    each = f" in each of its {ways} pools ({c.at_typical * ways:,} in all)" if ways > 1 else ""
    return (f"The KV pool holds {c.at_typical:,} requests of {w.typical_tokens:,} tokens at once{each} (or "
            f"{res.kv_cache.max_concurrency:.2f} of {c.max_len:,}), against a target of {w.concurrency:,}: it is "
            f"{format_gib(res.memory.kv_cache_bytes)} GiB per GPU after {format_gib(res.memory.weights_bytes)} GiB of "
            f"weights and {format_gib(overheads)} GiB of start-up overheads, and each request takes about "
            f"{format_gib(per_request)} GiB ({kv.bytes_per_token:,} B per token{times} {covers}{windows}{state}).")


def alternatives(ctx: Context, c: Candidate) -> list[Alternative]:
    """The trade-off at the chosen utilization and layout: each KV dtype at each context length."""
    lens = sorted({c.max_len, ctx.w.max_context_tokens, ctx.limit.value})
    out = []
    for kv in ctx.kvs:
        for length in lens:
            a = c if (kv, length) == (c.kv, c.max_len) else evaluate(ctx.model, ctx.gpu, ctx.req, c.lay, kv, c.util,
                                                                    length, c.result.flags["max_num_seqs"])
            out.append(Alternative(kv_cache_dtype=kv, max_model_len=length, fits=a.result.fits,
                                   requests_at_typical_length=a.at_typical,
                                   requests_at_max_model_len=a.result.kv_cache.max_concurrency,
                                   kv_cache_bytes=a.result.memory.kv_cache_bytes))
    return out
