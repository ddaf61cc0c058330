"""How long `plan` takes: a full search with --gpus 8, an infeasible plan with its remedies, and the
CLI from a cold start; next to one `estimate` call and `python -c pass` measured in the same run.

Usage: python benchmarks/plan_speed.py [--runs 5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from _timing import median_call as _median
from _timing import tool_command

from configurator.estimate import EstimateRequest, estimate
from configurator.plan import PlanRequest, plan
from configurator.workloads import load_workload


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    one = _median(lambda: estimate(EstimateRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100",
                                                   flags={"tensor_parallel_size": 8})), a.runs)
    full = _median(lambda: plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", gpus=8,
                                            workload=load_workload("agentic-coding"))), a.runs)
    hybrid = _median(lambda: plan(PlanRequest(model="Qwen/Qwen3.6-27B-FP8", gpu="h100-nvl", gpus=8,
                                              workload=load_workload("long-context"))), a.runs)
    infeasible = _median(lambda: plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="l4",
                                                  workload=load_workload("long-context"))), a.runs)
    cli = tool_command()
    cmd = [*cli, "plan", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "h100", "--gpus", "8",
           "--workload", "agentic-coding"]
    cold = _median(lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False), a.runs)
    floor = _median(lambda: subprocess.run([sys.executable, "-c", "pass"], check=False), a.runs)
    print(f"one estimate (70B, TP 8):                 {one * 1000:7.1f} ms")
    print(f"plan --gpus 8, 70B, agentic-coding:        {full * 1000:7.1f} ms = {full / one:5.0f} estimates")
    print(f"plan --gpus 8, 27B hybrid, long-context:   {hybrid * 1000:7.1f} ms")
    print(f"plan, infeasible 70B on one L4 + remedies: {infeasible * 1000:7.1f} ms")
    print(f"CLI cold start, plan --gpus 8:             {cold * 1000:7.1f} ms (python -c pass: {floor * 1000:.0f} ms, "
          f"{cold / floor:.0f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
