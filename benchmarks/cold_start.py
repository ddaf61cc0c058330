"""Cold-start time of `vllm-configurator estimate`, next to `python -c pass` (the floor).

Usage: python benchmarks/cold_start.py [--runs 15] [--target-cpu-s 1.0]
Each run is a fresh process; prints the median wall and CPU time and the ratio to the baseline measured
in the same run.

Target: every case under --target-cpu-s CPU seconds (default 1.0 s: docs/plan.md quotes ~0.27 s wall on
an idle machine; CPU time is checked because a shared machine stretches wall time, see _timing.py).
Each case must also answer as it should (exit code, the verdict on stdout): a crash or a changed verdict
exits 1 before any figure counts. Exits 1 when a case misses the target or fails.
"""

from __future__ import annotations

import argparse
import sys

from _timing import BenchmarkFailure, time_process, tool_command

# (command after the tool, exit code, text its output must hold)
CASES = {
    "estimate (text)": (["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "a100-80gb"], 0,
                        "FITS: vLLM should start"),
    "estimate (json)": (["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "a100-80gb", "--format", "json"],
                        0, '"fits": true'),
    "estimate hybrid": (["estimate", "--model", "Qwen/Qwen3.6-27B-FP8", "--gpu", "h100-nvl", "--kv-cache-dtype", "fp8",
                         "--max-model-len", "131072", "--max-num-seqs", "64"], 0, "Gated DeltaNet"),
    "estimate refused": (["estimate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4"], 1,
                         "REFUSED: vLLM would not start"),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--target-cpu-s", type=float, default=1.0)
    a = ap.parse_args(argv)
    tool = tool_command()
    base = time_process([sys.executable, "-c", "pass"], a.runs)
    print(f"baseline python -c pass: {base.wall_s * 1000:.0f} ms wall, {base.cpu_s * 1000:.0f} ms CPU "
          f"(median of {a.runs})")
    failed = []
    for name, (args, code, text) in CASES.items():
        try:
            t = time_process([*tool, *args], a.runs, expect_code=code, expect_out=text)
        except BenchmarkFailure as e:
            print(f"{name:<18} FAILED: {e}")
            failed.append(name)
            continue
        miss = t.cpu_s > a.target_cpu_s
        print(f"{name:<18} {t.wall_s * 1000:6.0f} ms wall = {t.wall_s / base.wall_s:4.1f}x baseline, "
              f"{t.cpu_s * 1000:6.0f} ms CPU (target < {a.target_cpu_s * 1000:.0f} ms){'  MISSED' if miss else ''}")
        if miss:
            failed.append(name)
    if failed:
        print("FAILED: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
