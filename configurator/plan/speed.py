"""A candidate's speed (configurator/speed: time to first token, time per output token, throughput) and the
workload's TTFT / TPOT targets."""

from __future__ import annotations

import math
from typing import Any

from configurator.hardware.catalog import GPU
from configurator.model.spec import ModelSpec
from configurator.plan.search import Candidate, PlanRequest
from configurator.speed import Workload as SpeedWorkload
from configurator.speed import estimate_speed
from configurator.speed.schedule import kv_groups
from configurator.workloads import Workload


def candidate_speed(model: ModelSpec, gpu: GPU, req: PlanRequest, c: Candidate) -> dict[str, Any] | None:
    """The speed of all the candidate's replicas at the workload's concurrency (each replica takes its share);
    None where the GPU has no datasheet figures (profiles/gpu_speed.yaml) or vLLM would not start."""
    if gpu.name == "custom" or not c.result.fits:
        return None
    w, lay, f = req.workload, c.lay, c.result.flags
    per_engine = math.ceil(w.concurrency / lay.replicas)
    s = estimate_speed(model, gpu.name, workload=SpeedWorkload(input_len=w.prompt_tokens, output_len=w.output_tokens,
                                                               concurrency=per_engine),
                       tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=bool(f.get("enable_expert_parallel")),
                       weight_dtype=None if model.quant.method else req.quantization, kv_cache_dtype=c.kv,
                       max_num_seqs=int(f["max_num_seqs"]), max_num_batched_tokens=int(f["max_num_batched_tokens"]),
                       kv_tokens=c.result.kv_cache.tokens, kv_groups=kv_groups(c.result.kv_cache))
    if s is None:
        return None
    d = s.to_dict()
    total = s.output_tok_s * lay.replicas
    return {"ttft_ms": d["ttft_ms"], "ttft_ms_band": d["ttft_ms_band"], "tpot_ms": d["tpot_ms"],
            "tpot_ms_band": d["tpot_ms_band"], "output_tok_s": round(total, 1),
            "output_tok_s_per_gpu": round(total / lay.gpus, 1), "bound": d["bound"], "limits": d["limits"],
            "gpu_figures": d["gpu_figures"]}


# data-parallel attention must be predicted this much faster per GPU to be chosen over an engine without it: the
# speed model's benchmark set (data/benchmarks) holds no run with dp > 1, so a smaller gain is the model's
# guess, not a difference it has seen between GPUs
DP_MARGIN = 1.05


def per_gpu_for_choice(speed: dict[str, Any], dp: int) -> float:
    """Output tokens/s per GPU as the plan compares layouts: a data-parallel one's divided by DP_MARGIN."""
    v = speed["output_tok_s_per_gpu"]
    return v / DP_MARGIN if dp > 1 else v


def has_targets(w: Workload) -> bool:
    return bool(w.ttft_ms or w.tpot_ms)


def target_ratio(speed: dict[str, Any] | None, w: Workload) -> float:
    """How far the worst target is missed: predicted / target, <= 1 when both are met (0 with no targets)."""
    if speed is None:
        return math.inf if has_targets(w) else 0.0
    ratios = [speed[k] / t for k, t in (("ttft_ms", w.ttft_ms), ("tpot_ms", w.tpot_ms)) if t]
    return max(ratios, default=0.0)


def meets(speed: dict[str, Any] | None, w: Workload) -> bool:
    return target_ratio(speed, w) <= 1.0


def binding(speed: dict[str, Any] | None, w: Workload, memory: str) -> str:
    """The constraint that binds: the target with the least slack, or memory (the KV pool) when no target is
    stated or both have more slack than the pool."""
    if speed is None or not has_targets(w):
        return memory
    slack = {name: speed[k] / t for name, k, t in (("time to first token", "ttft_ms", w.ttft_ms),
                                                   ("time per output token", "tpot_ms", w.tpot_ms)) if t}
    name = max(slack, key=lambda k: slack[k])
    key, target = ("ttft_ms", w.ttft_ms) if name.startswith("time to first") else ("tpot_ms", w.tpot_ms)
    verb = "meets" if slack[name] <= 1 else "misses"
    return (f"{name}: {speed[key]:,.1f} ms predicted against the {target:g} ms target ({verb} it, "
            f"{slack[name]:.0%} of the target; band {speed[key + '_band'][0]:,.1f}-{speed[key + '_band'][1]:,.1f} ms)")


def speed_line(speed: dict[str, Any]) -> str:
    return (f"time to first token {speed['ttft_ms']:,.0f} ms, time per output token {speed['tpot_ms']:,.1f} ms, "
            f"{speed['output_tok_s']:,.0f} output tokens/s ({speed['output_tok_s_per_gpu']:,.0f} per GPU)")
