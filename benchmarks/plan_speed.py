"""How long `plan` takes: a full search with --gpus 8, an infeasible plan with its remedies, and the
CLI from a cold start; next to one `estimate` call and `python -c pass` measured in the same run.

Usage: python benchmarks/plan_speed.py [--runs 5]

Targets, on CPU seconds (docs/plan.md quotes ~1 ms, ~10 ms, ~0.12 s and ~0.27 s wall on an idle machine;
the targets leave room for a slower CPU, and CPU time is checked because a shared machine stretches wall
time, see _timing.py):
  one estimate < 10 ms; plan --gpus 8 (70B, and the 27B hybrid) < 100 ms each;
  infeasible plan with its remedies < 1 s; the CLI from a cold start < 1.5 s.
Each plan must also be what it should be (the 70B plan carries its workload with a `vllm serve` line; the
infeasible one is short or starts nothing and has remedies; the CLI exits 0 and prints the command), so a
crash or an empty answer exits 1 before any figure counts. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys

from _timing import BenchmarkFailure, time_call, time_process, tool_command

from configurator.estimate import EstimateRequest, estimate
from configurator.plan import PlanRequest, plan
from configurator.workloads import load_workload

TARGET_CPU_S = {"estimate": 0.010, "plan 70B": 0.100, "plan hybrid": 0.100, "infeasible": 1.0, "cold CLI": 1.5}


def _check_plans() -> None:
    """What is timed must work: raise BenchmarkFailure otherwise."""
    est = estimate(EstimateRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100",
                                   flags={"tensor_parallel_size": 8}))
    if not est.fits or est.kv_cache.tokens <= 0:
        raise BenchmarkFailure("the 70B TP 8 estimate on H100s does not fit")
    full = plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", gpus=8,
                            workload=load_workload("agentic-coding")))
    if not full.feasible or not full.serve_command.startswith("vllm serve "):
        raise BenchmarkFailure(f"plan --gpus 8 for the 70B: {full.status}, no command")
    hybrid = plan(PlanRequest(model="Qwen/Qwen3.6-27B-FP8", gpu="h100-nvl", gpus=8,
                              workload=load_workload("long-context")))
    if not hybrid.feasible:
        raise BenchmarkFailure(f"plan --gpus 8 for the 27B hybrid: {hybrid.status}")
    short = plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="l4",
                             workload=load_workload("long-context")))
    if short.feasible or not short.remedies:
        raise BenchmarkFailure(f"the 70B on one L4 should be infeasible with remedies: {short.status}, "
                               f"{len(short.remedies)} remedies")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args(argv)
    try:
        _check_plans()
        one = time_call(lambda: estimate(EstimateRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100",
                                                         flags={"tensor_parallel_size": 8})), a.runs)
        full = time_call(lambda: plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", gpus=8,
                                                  workload=load_workload("agentic-coding"))), a.runs)
        hybrid = time_call(lambda: plan(PlanRequest(model="Qwen/Qwen3.6-27B-FP8", gpu="h100-nvl", gpus=8,
                                                    workload=load_workload("long-context"))), a.runs)
        infeasible = time_call(lambda: plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="l4",
                                                        workload=load_workload("long-context"))), a.runs)
        cmd = [*tool_command(), "plan", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "h100", "--gpus",
               "8", "--workload", "agentic-coding"]
        cold = time_process(cmd, a.runs, expect_code=0, expect_out="vllm serve meta-llama/Llama-3.3-70B-Instruct")
        floor = time_process([sys.executable, "-c", "pass"], a.runs)
    except BenchmarkFailure as e:
        print(f"FAILED: {e}")
        return 1
    rows = {"estimate": ("one estimate (70B, TP 8):", one), "plan 70B": ("plan --gpus 8, 70B, agentic-coding:", full),
            "plan hybrid": ("plan --gpus 8, 27B hybrid, long-context:", hybrid),
            "infeasible": ("plan, infeasible 70B on one L4 + remedies:", infeasible),
            "cold CLI": ("CLI cold start, plan --gpus 8:", cold)}
    missed = []
    for key, (label, t) in rows.items():
        target = TARGET_CPU_S[key]
        miss = t.cpu_s > target
        missed += [key] if miss else []
        extra = f" = {full.wall_s / one.wall_s:.0f} estimates" if key == "plan 70B" else \
            f" (python -c pass: {floor.wall_s * 1000:.0f} ms, {cold.wall_s / floor.wall_s:.0f}x)" if key == "cold CLI" \
            else ""
        print(f"{label:<43} {t.wall_s * 1000:8.1f} ms wall, {t.cpu_s * 1000:8.1f} ms CPU "
              f"(target < {target * 1000:g} ms){extra}{'  MISSED' if miss else ''}")
    if missed:
        print("FAILED: over target: " + ", ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
