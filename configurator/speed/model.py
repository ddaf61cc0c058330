"""Step times from first principles, then TTFT, TPOT and output throughput of a serving workload.

One engine step (vLLM V1 runs decodes and prefill chunks of up to max_num_batched_tokens in the same step):

  t_step = t0 + max(weight bytes / BW, GEMM FLOPs / F) + max(KV bytes / BW, attention FLOPs / F) + t_comm

per GPU, where BW = eta_bw x the datasheet's memory bandwidth and F = eta_f x its dense tensor throughput for
the dtype the GEMMs run at; weight bytes are the dense part plus the routed experts some token of the step is
sent to (the top-k of one token at batch 1, all of them at large batches); t_comm is two all-reduces per layer
(attention and MLP outputs) over NVLink / PCIe when TP > 1 (vLLM's RowParallelLinear reduce, one per
o_proj / down_proj: vllm/model_executor/layers/linear.py), each a fixed latency plus its ring volume.
t0 is a fixed per-step cost (kernel launches outside the CUDA graph, the engine loop) and t_seq one per running
sequence (scheduling, sampling and detokenizing it on the host), and each layer (MoE layers more) a fixed
kernel latency, so t_step also has `+ t0 + t_seq x decodes + t_layer x layers + t_moe_layer x MoE layers`.
A step of more tokens than vLLM captures a CUDA graph for (min(2 x max_num_seqs, 512)) launches its kernels one by
one: `+ t_eager_layer x layers`.
The elementwise kernels between the GEMMs (residual-add + RMSNorm, the MLP's activation, and the routed experts'
gather of each (token, expert) pair's hidden state and weighted sum of their outputs) move activations that the
GEMMs do not hide: `+ activation bytes / BW`, which grows with tokens x top_k x hidden x MoE layers.
The lm_head multiplies only the rows vLLM samples (one per decode token, one per prefilling request), not every
prompt token. A routed expert's GEMMs run at eta_moe x w / (w + moe_w_half) of F, w being its width on one rank
(moe_intermediate_size / tp; whole under expert parallelism), and under expert parallelism the most loaded rank's
at (1 + ep_imbalance) x the mean rank's work.

A request of L prompt tokens and O output tokens, with C requests in flight (the client's concurrency, capped
by max_num_seqs and by the KV cache's tokens, which hold L + O/2 tokens per request on average):

  t_d    = t_step(C decode tokens at context L + O/2)
  t_pre  = sum over prompt chunks of t_step(C decodes + chunk) - t_d   (the prefill's extra cost)
  TPOT   = t_d + (C - 1) x t_pre / O        (the other requests' prefills land in this request's decode steps)
  TTFT   = chunks x t_d + t_pre (+ the queue when more requests wait than run) + t_first
  tok/s  = C x O / (TTFT + (O - 1) x TPOT)

Pipeline parallel splits the layers over stages and the running requests into micro-batches of C / pp, one per
stage; data parallel runs dp engines of C / dp each. A finite burst (every request sent at once, the usual
`vllm bench serve --request-rate inf`) or a finite run at a client concurrency is replayed step by step through
vLLM's scheduler (configurator/speed/schedule.py: the running cap, the token budget, the KV cache's blocks with
preemption and recompute when they run out) and each replayed step timed by step_time (_replayed): the prefills
of the requests that replace finished ones land in the running decodes' steps, and a KV-capped batch runs fewer
sequences than its prompts suggest. Speculative decoding keeps the closed form (_burst: a queue phase at the cap,
then a drain).
t_first is the serving path's fixed cost outside the GPU's steps (HTTP, tokenizing, the engine core's queue, the
first token's way back), fitted apart as the median TTFT residual of runs at a client concurrency or a request rate;
it is left out of e2e (its share of a run's time, about t_first / e2e, is within the step terms' fit).
The Params figures are fitted on the train split of data/benchmarks (benchmarks/speed_accuracy.py) and kept in
profiles/speed_calibration.yaml.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

from configurator.speed.geometry import Geometry
from configurator.speed.hardware import GPUSpeed
from configurator.speed.schedule import BLOCK, group_blocks, replay

# one all-reduce's fixed latency (s): vLLM's custom all-reduce over NVLink is a few microseconds per call,
# NCCL over PCIe tens; the figures are typical of published nccl-tests small-message latencies
ALLREDUCE_LATENCY = {True: 8e-6, False: 25e-6}


@dataclass(frozen=True)
class Params:
    """Efficiency figures: achieved fraction of peak bandwidth and FLOPs, fixed step cost (s)."""

    eta_bw: float = 0.75
    eta_f: float = 0.55
    t0: float = 0.002
    t_seq: float = 20e-6  # per running sequence per step: scheduling, sampling, detokenizing (host side)
    eta_moe: float = 1.0  # the routed experts' GEMMs' efficiency relative to eta_f (grouped, uneven GEMMs)
    eta_f_ampere: float = 0.55  # eta_f on Ampere parts: their kernels reach a larger share of a smaller peak
    t_layer: float = 0.0  # per decoder layer per step: the kernels' fixed latency (norms, rotary, small GEMMs)
    t_moe_layer: float = 0.0  # more per MoE layer: routing, top-k, token permutation, grouped-GEMM launches
    t_eager_layer: float = 0.0  # per layer of a step too large for a captured CUDA graph: its kernels launched
    # per request, in its time to first token only: the serving path outside the GPU's steps (the HTTP request,
    # tokenizing, the engine core's input queue, the first token's detokenizing and write back to the client)
    t_first: float = 0.0
    # a dequantizing GEMM's share of the 16-bit rate (Geometry.dequant_*): weight-only kernels unpack and scale
    # every weight tile in their inner loop, which costs compute once a step is compute-bound
    eta_wq: float = 1.0
    # the width (Geometry.expert_width) at which a routed expert's GEMMs reach half of eta_moe: tensor-parallel
    # slices of an expert are narrow GEMMs (a few tiles of N, a short K loop in the down projection) that keep
    # fewer of the GPU's units busy; 0 = no such loss
    moe_w_half: float = 0.0
    # with expert parallelism each rank multiplies only its own experts' tokens, and the step waits for the most
    # loaded rank: its expert GEMMs take (1 + ep_imbalance) x the mean rank's (routing is not uniform; vLLM's
    # EPLB exists to even it out, vllm/distributed/eplb)
    ep_imbalance: float = 0.0


@dataclass(frozen=True)
class Layout:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: bool = False


@dataclass(frozen=True)
class Workload:
    """A client load: mean prompt and output tokens per request, and either a concurrency, a request rate, or
    neither (every request sent at once, as `vllm bench serve --request-rate inf` without --max-concurrency)."""

    input_len: float
    output_len: float
    concurrency: float | None = None
    request_rate: float | None = None  # requests/s (Poisson); None = all at once
    num_prompts: int | None = None
    variable_lengths: bool = False  # output lengths vary (a chat dataset such as ShareGPT), else all alike


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding: k draft tokens per step, each accepted with probability `acceptance`."""

    num_tokens: int
    acceptance: float = 0.7

    @property
    def tokens_per_step(self) -> float:
        a, k = self.acceptance, self.num_tokens
        return (1 - a ** (k + 1)) / (1 - a) if a < 1 else k + 1.0


@dataclass(frozen=True)
class Prediction:
    ttft_ms: float
    tpot_ms: float
    output_tok_s: float
    running: float  # requests in flight per engine
    decode_step_ms: float
    prefill_ms: float  # one request's prefill cost (extra step time), on its own
    bound: str  # what a decode step is limited by: memory-bandwidth (weights / KV) or compute
    limits: tuple[str, ...] = field(default=())  # what capped the requests in flight


def step_time(g: Geometry, gpu: GPUSpeed, lay: Layout, p: Params, *, decodes: float, ctx: float,
              prefill: float = 0.0, prefill_ctx: float = 0.0, spec: Speculative | None = None,
              graph_max: float = 512.0) -> tuple[float, str]:
    """Seconds of one engine step on one pipeline stage x pp (a token's pass over all layers), and its bound.

    decodes: sequences decoding (each 1 token, or k+1 with speculation); prefill: prompt tokens in the step, whose
    attention reads prefill_ctx tokens of context on average."""
    bw = p.eta_bw * gpu.hbm_gbs * 1e9
    eta_f = p.eta_f_ampere if gpu.arch == "ampere" else p.eta_f
    flops = eta_f * gpu.peak_tflops(g.compute) * 1e12
    attn_flops_rate = eta_f * gpu.peak_tflops("bf16") * 1e12  # attention runs in 16 bits (fp8 KV dequantized)
    per_dec = spec.num_tokens + 1 if spec else 1
    tokens = decodes * per_dec + prefill
    # all-experts tokens: with EP the experts see every DP engine's tokens
    moe_tokens = tokens * (lay.dp if lay.ep else 1)
    w_bytes = g.dense_bytes + g.expert_bytes * g.experts_touched(moe_tokens)
    # the lm_head multiplies one row per decode token and one per prefilling request (its chunk's last token);
    # a step's prefill is counted as one request (several short prompts in one step are a rounding error here)
    rows = decodes * per_dec + (1.0 if prefill > 0 else 0.0)
    dense_flops = 2.0 * ((g.active_params - g.expert_active_params - g.head_params) * tokens + g.head_params * rows) / (
        flops * (p.eta_wq if g.dequant_dense else 1.0))
    eta_moe = p.eta_moe * (g.expert_width / (g.expert_width + p.moe_w_half) if g.expert_width else 1.0)
    # expert_active_params is a rank's share of a token's expert work; with EP across DP engines the rank serves
    # every engine's tokens (moe_tokens)
    ep_ranks = lay.tp * lay.dp if lay.ep else 1
    moe_flops = (2.0 * g.expert_active_params * moe_tokens * (1.0 + p.ep_imbalance if ep_ranks > 1 else 1.0)
                 / (flops * eta_moe * (p.eta_wq if g.dequant_experts else 1.0)))
    gemm = max(w_bytes / bw, dense_flops + moe_flops)
    # activations the elementwise kernels between the GEMMs move, not overlapped with them: the two fused
    # residual-add + RMSNorm kernels of every layer read the hidden state and the residual and write both
    # (fused_add_rms_norm, vllm/model_executor/layers/layernorm.py), the MLP's activation, and the routed
    # (token, expert) pairs' (Geometry.act_bytes_pair). With EP across DP engines the all-to-all hands a rank its
    # experts' share of the pairs; with EP inside one engine (dp 1) every rank runs the fused-MoE kernel over all
    # of them, writing zeros for the pairs of other ranks' experts (fused_moe.py: `if off_experts == -1:
    # write_zeros_to_output`) and running the activation over all, at its experts' whole width
    pairs = moe_tokens * g.top_k / (lay.tp * lay.dp if lay.ep and lay.dp > 1 else 1) if g.num_experts else 0.0
    act = tokens * (8 * g.hidden * 2 * g.layers + g.act_bytes_token) + pairs * g.act_bytes_pair
    kv_bytes = decodes * g.kv_read_bytes(ctx)
    attn_f = 4.0 * g.attn_width * (decodes * per_dec * ctx + prefill * prefill_ctx)
    attn = max(kv_bytes / bw, attn_f / attn_flops_rate)
    comm = 0.0
    if lay.tp > 1:
        vol = tokens * g.hidden * 2 * 2 * (lay.tp - 1) / lay.tp  # bf16 activations, ring all-reduce
        comm = 2 * g.layers * (ALLREDUCE_LATENCY[gpu.nvlink] + vol / (gpu.link_gbs * 1e9))
    if lay.ep and lay.dp > 1:  # dispatch + combine all-to-all of each token's hidden state per MoE layer
        vol = tokens * g.hidden * 2 * 2
        comm += 2 * g.layers * (ALLREDUCE_LATENCY[gpu.nvlink] + vol / (gpu.link_gbs * 1e9))
    t = (p.t0 + p.t_seq * decodes + p.t_layer * g.layers + p.t_moe_layer * g.moe_layers + gemm + act / bw + attn
         + comm)
    if tokens > graph_max:  # no CUDA graph of this size: every layer's kernels are launched one by one
        t += p.t_eager_layer * g.layers
    if w_bytes / bw >= dense_flops + moe_flops:
        bound = "memory-bandwidth (KV cache)" if kv_bytes > w_bytes else "memory-bandwidth (weights)"
    else:
        bound = "compute"
    return t, bound


def predict(g: Geometry, gpu: GPUSpeed, lay: Layout, wl: Workload, *, max_num_seqs: int,
            max_num_batched_tokens: int, kv_tokens: float | None = None, params: Params = Params(),
            spec: Speculative | None = None, kv_groups: tuple[int, ...] = (0,)) -> Prediction:
    """TTFT, TPOT and output throughput (all engines) of `wl` on this layout. kv_tokens: the KV cache's tokens
    per engine (the estimate's), None when unknown (then only max_num_seqs caps the running requests)."""
    isl, osl = max(wl.input_len, 1.0), max(wl.output_len, 1.0)
    n = wl.num_prompts
    per_req_tokens = isl + osl / 2
    cap_seqs = float(max_num_seqs) * lay.pp  # vLLM schedules max_num_seqs per micro-batch
    # requests the pool holds: its blocks over every group (configurator/speed/schedule.py kv_groups) over a
    # request's; with one full-attention group, kv_tokens / tokens a request
    cap_kv = kv_tokens * len(kv_groups) / (group_blocks(kv_groups, per_req_tokens) * BLOCK) if kv_tokens else math.inf
    # the step's token budget: in steady state R / O requests finish per step and as many new prompts of L
    # tokens must be prefilled, so R + R x L / O <= max_num_batched_tokens (vLLM V1 schedules decodes first and
    # fills the rest of the budget with prefill chunks: vllm/v1/core/sched/scheduler.py)
    cap_budget = max_num_batched_tokens * lay.pp / (1.0 + isl / osl)
    caps = {"max_num_seqs": cap_seqs, "KV cache": cap_kv, "max_num_batched_tokens": cap_budget}
    binding = min(caps, key=caps.get)
    capacity = max(1.0, caps[binding])

    # the largest step vLLM captures a CUDA graph for: min(2 x max_num_seqs, 512) tokens by default
    # (SchedulerConfig.cuda_graph_sizes, vllm/config/scheduler.py, v0.11.0)
    graph_max = min(2.0 * max_num_seqs, 512.0)

    def at(c: float) -> tuple[float, float, float, float, str]:
        micro = c / lay.pp
        t_d, bound = step_time(g, gpu, lay, params, decodes=micro, ctx=per_req_tokens, spec=spec, graph_max=graph_max)
        chunk = max(1.0, float(max_num_batched_tokens) - micro)
        chunks = max(1, math.ceil(isl / chunk))
        t_pre = 0.0
        done = 0.0
        for _ in range(chunks):
            size = min(chunk, isl - done)
            t_mix, _ = step_time(g, gpu, lay, params, decodes=micro, ctx=per_req_tokens, prefill=size,
                                 prefill_ctx=done + size / 2, spec=spec, graph_max=graph_max)
            t_pre += t_mix - t_d
            done += size
        tokens_per_step = spec.tokens_per_step if spec else 1.0
        tpot = (t_d + max(c - 1.0, 0.0) * t_pre / osl) / tokens_per_step
        ttft = chunks * t_d + t_pre
        return tpot, ttft, t_d, t_pre, bound

    engines = lay.dp
    if wl.request_rate:  # open loop: requests in flight = rate x latency (Little), solved by iteration
        rate = wl.request_rate / engines
        c = 1.0
        cap_c = (wl.concurrency or math.inf) / engines
        for _ in range(60):
            tpot, ttft, *_ = at(min(c, capacity))
            e2e = ttft + (osl - 1) * tpot
            c_new = max(1.0, min(rate * e2e, cap_c))
            if abs(c_new - c) < 1e-3 * c:
                break
            c = 0.5 * c + 0.5 * c_new
        offered = c
    else:
        offered = (wl.concurrency or n or capacity) / engines
        if n:
            offered = min(offered, n / engines)
    running = max(1.0, min(offered, capacity))
    limits = [binding, "queue"] if offered > capacity else ["client concurrency"]
    tpot, ttft, t_d, t_pre, bound = at(running)
    e2e = ttft + (osl - 1) * tpot
    queued = 0.0
    if wl.request_rate and offered <= capacity and offered < 0.99 * cap_c:
        out = wl.request_rate * osl
    elif not wl.request_rate and n and not spec:  # a closed load: vLLM's schedule replayed, then timed
        out, tpot, ttft = _replayed(g, gpu, lay, params, wl, n, max_num_seqs, max_num_batched_tokens, kv_tokens,
                                    graph_max, kv_groups)
    elif not wl.request_rate and not wl.concurrency and n:
        out, tpot, queued = _burst(g, gpu, lay, params, spec, n / engines, running, isl, osl, per_req_tokens,
                                   t_pre, wl.variable_lengths, graph_max)
        out *= engines
    else:
        out = engines * running * osl / e2e
        if wl.concurrency and wl.concurrency / engines > running:
            queued = (wl.concurrency / engines - running) / running * e2e
    return Prediction(ttft_ms=(ttft + queued + params.t_first) * 1e3, tpot_ms=tpot * 1e3, output_tok_s=out,
                      running=running, decode_step_ms=t_d * 1e3, prefill_ms=t_pre * 1e3, bound=bound,
                      limits=tuple(limits))


def _burst(g: Geometry, gpu: GPUSpeed, lay: Layout, p: Params, spec: Speculative | None, n: float, cap: float,
           isl: float, osl: float, ctx: float, t_pre: float, variable: bool,
           graph_max: float = 512.0) -> tuple[float, float, float]:
    """A finite run of n requests sent at once (`vllm bench serve --request-rate inf` without a concurrency):
    (output tok/s, the median request's TPOT, its wait before its prefill) for one engine.

    While more wait than run, cap requests run; then the last ones drain: all together when every output has
    the same length, one by one when lengths vary (exponential lengths: the running count decays as
    exp(-steps / mean output)). Every prompt's prefill (n x t_pre) is paid once, mostly at the start."""
    def t_d(r: float) -> float:
        return step_time(g, gpu, lay, p, decodes=max(r, 1.0) / lay.pp, ctx=ctx, spec=spec, graph_max=graph_max)[0]

    r0 = min(n, cap)
    time = tokens = 0.0
    if n > cap:  # queue phase: cap running, cap / osl finishing (and replaced) per step
        steps = (n - cap) * osl / cap
        time += steps * t_d(cap)
        tokens += steps * cap
    if variable:  # exponential drain from r0 down to one request
        k = 40
        for i in range(k):
            hi, lo = r0 ** (1 - i / k), r0 ** (1 - (i + 1) / k)
            steps = osl * math.log(hi / lo) if hi > lo else 0.0
            mid = (hi + lo) / 2
            time += steps * t_d(mid)
            tokens += steps * mid
        time += osl * t_d(1.0)  # the last request's remaining mean output
    elif n > cap:  # equal lengths after a queue: staggered progress, a linear drain over osl steps
        time += sum(t_d(r0 * (1 - (j + 0.5) / 20)) for j in range(20)) * osl / 20
    else:  # equal lengths, all admitted at once: they finish together
        time += osl * t_d(r0)
    time += n * t_pre  # every prompt's prefill, on top of the decode steps it shares
    out = n * osl / time
    half = n / 2
    if half > cap:  # the median request runs in the queue phase: the steady state at the cap
        tpot = t_d(cap) + (cap - 1) * t_pre / osl
        wait = r0 * t_pre + (half - cap) * osl / cap * t_d(cap)
    else:  # admitted at the start: it shares its steps with about half the prefill burst
        r_mid = r0 * (math.exp(-0.5) if variable else 1.0)
        tpot = t_d(r_mid) + 0.5 * n * t_pre / osl
        wait = half * t_pre
    return out, tpot, wait


def _replayed(g: Geometry, gpu: GPUSpeed, lay: Layout, p: Params, wl: Workload, n: int, max_num_seqs: int,
              budget: int, kv_tokens: float | None, graph_max: float,
              kv_groups: tuple[int, ...] = (0,)) -> tuple[float, float, float]:
    """(output tok/s of all engines, the median request's TPOT, its TTFT) of n requests sent at once or kept at
    the client's concurrency: the scheduler's steps (configurator/speed/schedule.py) timed by step_time. Pipeline
    parallel runs pp micro-batches of max_num_seqs each, a step being one micro-batch's pass over the stages."""
    per = max(1, round(n / lay.dp))
    conc = max(1, round(wl.concurrency / lay.dp)) if wl.concurrency else None
    tr = replay(per, max(1, round(wl.input_len)), max(1.0, wl.output_len), wl.variable_lengths,
                max_num_seqs * lay.pp, budget * lay.pp, kv_tokens, conc, int(graph_max), kv_groups)
    cum = [0.0]
    rate = []  # seconds per step in each segment
    for _, steps, classes in tr.segments:
        t = 0.0
        for c in classes:
            t += c.steps * step_time(g, gpu, lay, p, decodes=c.decodes / lay.pp, ctx=c.ctx, prefill=c.prefill / lay.pp,
                                     prefill_ctx=c.prefill_ctx, graph_max=0.0 if c.eager else math.inf)[0]
        rate.append(t / steps)
        cum.append(cum[-1] + t)
    starts = [s for s, _, _ in tr.segments]

    def at(step: int) -> float:  # the time at the end of this step
        if step < 0:
            return 0.0
        k = min(len(starts) - 1, max(0, bisect.bisect_right(starts, step) - 1))
        return cum[k] + (step + 1 - starts[k]) * rate[k]

    tpots = sorted((at(last) - at(first)) / (o - 1) for first, last, o in zip(tr.first, tr.last, tr.output, strict=True)
                   if o > 1)
    ttfts = sorted(at(f) - at(a - 1) for a, f in zip(tr.arrive, tr.first, strict=True))
    tpot = tpots[len(tpots) // 2] if tpots else cum[-1] / max(1, tr.steps)
    return lay.dp * sum(tr.output) / cum[-1], tpot, ttfts[len(ttfts) // 2]

